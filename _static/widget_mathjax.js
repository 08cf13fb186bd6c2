// The widget manager (_static/vendor/html-manager/embed.mjs) typesets widget labels through MathJax 2's
// `MathJax.Hub.Queue(["Typeset", MathJax.Hub, element])`; the book ships MathJax 3, whose global object has no
// `Hub`, so every widget page logged "Cannot read properties of undefined (reading 'Queue')". This gives every
// object ever stored in `window.MathJax` (the configuration, then MathJax 3 itself) a `Hub.Queue` that forwards
// the request to MathJax 3's `typesetPromise` once MathJax has started.
(function () {
  function withHub(m) {
    if (m && typeof m === "object" && !m.Hub) {
      m.Hub = {
        Queue: function (job) {
          const element = job && job[2];
          const mj = window.MathJax;
          const ready = mj && mj.startup && mj.startup.promise ? mj.startup.promise : Promise.resolve();
          return ready.then(function () {
            if (element && window.MathJax.typesetPromise) return window.MathJax.typesetPromise([element]);
          });
        },
      };
    }
    return m;
  }
  let current = withHub(window.MathJax);
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    get: function () { return current; },
    set: function (value) { current = withHub(value); },
  });
})();
