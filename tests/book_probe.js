// Opens each page of the built book in an iframe, in turn, and reports what a reader would see, as JSON in
// <pre id="out">. Loaded by tests/test_book.py through a wrapper page that sets window.PAGES (paths relative to
// the book's root) and window.SETTLE_MS (how long a page's scripts get before it is inspected).
// Each page's report is a flat object of counts and flags; a check is one more key, read by one more test.
const sleep = ms => new Promise(r => setTimeout(r, ms));

// A fingerprint of the image an explorer shows: its pixels, since every re-render gets a fresh blob URL.
async function visibleImage(box) {
  const img = [...box.querySelectorAll('img.widget-image')].find(i => i.offsetParent !== null);
  if (!img) return null;
  if (!img.complete) await new Promise(r => { img.onload = r; img.onerror = r; });
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth;
  canvas.height = img.naturalHeight;
  if (!canvas.width) return null;
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const px = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  let h = 2166136261;
  for (let i = 0; i < px.length; i += 7) h = Math.imul(h ^ px[i], 16777619) >>> 0;
  return `${canvas.width}x${canvas.height}:${h}`;
}

async function press(handle, key) {
  handle.focus();
  for (const type of ['keydown', 'keyup']) {
    handle.dispatchEvent(new KeyboardEvent(type, {key, code: key, keyCode: key === 'ArrowRight' ? 39 : 37,
                                                   which: key === 'ArrowRight' ? 39 : 37, bubbles: true}));
  }
  await sleep(300);
}

// Static explorers (fibook.notebook.frames_explorer): a VBox of sliders over a stack of embedded images.
async function explorers(d) {
  const boxes = [...d.querySelectorAll('.widget-vbox:not(.widget-interact)')].filter(
    b => [...b.children].some(c => c.classList.contains('widget-slider')) && b.querySelector('img.widget-image'));
  const out = [];
  for (const box of boxes) {
    const sliders = [...box.children].filter(c => c.classList.contains('widget-slider'));
    const report = {sliders: sliders.length, switched: 0, restored: 0};
    for (const slider of sliders) {
      const handle = slider.querySelector('.noUi-handle');
      const before = await visibleImage(box);
      await press(handle, 'ArrowRight');
      const after = await visibleImage(box);
      if (before && after && after !== before) report.switched += 1;
      await press(handle, 'ArrowLeft');
      if (before && (await visibleImage(box)) === before) report.restored += 1;
    }
    out.push(report);
  }
  return out;
}

function articleText(d) {
  const article = d.querySelector('article');
  if (!article) return '';
  const clone = article.cloneNode(true);
  clone.querySelectorAll('pre, code, .cell_input, mjx-container, script, style').forEach(e => e.remove());
  return clone.innerText || clone.textContent;
}

async function inspect(page) {
  const frame = document.getElementById('f');
  await new Promise(resolve => { frame.onload = resolve; frame.src = page; });
  await sleep(window.SETTLE_MS);
  const d = frame.contentDocument;
  const article = d.querySelector('article');
  const imgs = article ? [...article.querySelectorAll('img')] : [];
  const math = article ? [...article.querySelectorAll('.math')] : [];
  const text = articleText(d);
  return {
    page,
    article: !!article,
    images: imgs.length,
    images_broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).length,
    math: math.length,
    math_untypeset: math.filter(m => !m.querySelector('mjx-container')).length,
    raw_tex: (text.match(/\$\$|\\\(|\\\)|\\\[|\\\]|\\frac|\\sigma|\\eta|\\begin\{|\\mathrm/g) || []).slice(0, 5),
    error_text: (text.match(/Traceback \(most recent call last\)|Error rendering|Error displaying widget|[A-Za-z]+Error: /g) || []).slice(0, 5),
    widget_errors: d.querySelectorAll('.jupyter-widgets-error, .widget-error').length,
    sliders: d.querySelectorAll('.widget-slider').length,
    explorers: await explorers(d),
  };
}

(async () => {
  const reports = [];
  for (const page of window.PAGES) {
    try {
      reports.push(await inspect(page));
    } catch (e) {
      reports.push({page, probe_error: String(e)});
    }
  }
  document.getElementById('out').textContent = JSON.stringify(reports);
})();
