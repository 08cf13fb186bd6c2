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

// The text chunks (tEXt) of a PNG, read from its bytes: fibook.style writes what it measured of a figure there.
async function pngText(src) {
  const buf = await new Promise(resolve => {
    const xhr = new XMLHttpRequest();
    xhr.open('GET', src);
    xhr.responseType = 'arraybuffer';
    xhr.onload = () => resolve(xhr.response);
    xhr.onerror = () => resolve(null);
    xhr.send();
  });
  const out = {};
  if (!buf) return out;
  const view = new DataView(buf);
  const bytes = new Uint8Array(buf);
  const latin1 = (a, b) => String.fromCharCode(...bytes.subarray(a, b));
  if (bytes.length < 8 || latin1(1, 4) !== 'PNG') return out;
  for (let at = 8; at + 8 <= bytes.length;) {
    const length = view.getUint32(at);
    const type = latin1(at + 4, at + 8);
    if (type === 'tEXt') {
      const data = latin1(at + 8, at + 8 + length);
      const cut = data.indexOf('\0');
      out[data.slice(0, cut)] = data.slice(cut + 1);
    }
    if (type === 'IEND') break;
    at += 12 + length;
  }
  return out;
}

// Every figure the reader sees: its displayed width over its natural width, and what fibook.style measured of
// it (smallest text, scaled to its displayed size; axis offset labels; overlapping texts). Hidden explorer
// frames are skipped (they share the visible frame's size).
async function figures(article) {
  const out = [];
  for (const img of article.querySelectorAll('img')) {
    if (img.offsetParent === null || !img.naturalWidth) continue;
    const meta = await pngText(img.src);
    const ratio = img.getBoundingClientRect().width / img.naturalWidth;
    const font = meta['fibook:smallest-font-px'];
    const offsets = meta['fibook:offset-labels'];
    out.push({
      src: img.src.startsWith('blob:') ? 'explorer frame' : img.src.split('/').pop(),
      natural: img.naturalWidth,
      ratio: Math.round(ratio * 1000) / 1000,
      font_px: font === undefined ? null : Math.round(parseFloat(font) * ratio * 10) / 10,
      offset_labels: offsets === undefined ? null : parseInt(offsets),
      overlaps: meta['fibook:text-overlaps'] === undefined ? null : meta['fibook:text-overlaps'],
    });
  }
  return out;
}

function describe(e) {
  const cls = typeof e.className === 'string' ? e.className.split(' ').filter(Boolean).slice(0, 2).join('.') : '';
  const text = (e.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 60);
  return `${e.tagName.toLowerCase()}${cls ? '.' + cls : ''}: ${text}`;
}

// A table, an equation, a figure or an explorer frame wider than the column scrolls in its own box, by design
// (fibook.css): such a box and what it holds are not cut off.
const OWN_BOXES = 'table, mjx-container, figure, .jp-RenderedImage, .widget-box:has(> img.widget-image)';

// Content cut off on the right: an element reaching past the article's right edge, or a box that hides part
// of its content behind a horizontal scroll bar. Only the outermost offender of a subtree is reported.
function overflows(article) {
  const edge = article.getBoundingClientRect().right;
  const found = [];
  const own = [...article.querySelectorAll(OWN_BOXES)].filter(e => getComputedStyle(e).overflowX === 'auto');
  for (const e of article.querySelectorAll('*')) {
    if (e.closest('mjx-assistive-mml') || found.some(f => f.contains(e)) || own.some(b => b !== e && b.contains(e)))
      continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const style = getComputedStyle(e);
    // inline boxes (inline math) are not scroll boxes: their scrollWidth counts italic overhang
    const scrolls = !style.display.startsWith('inline') && ['auto', 'scroll', 'hidden'].includes(style.overflowX);
    if ((scrolls && !own.includes(e) && e.scrollWidth > e.clientWidth + 1) || r.right > edge + 1) found.push(e);
  }
  return found.map(describe).slice(0, 12);
}

// Words and numbers of a table cell split across lines: each run of non-space characters, cut at hyphens,
// dashes, slashes and ellipses (where a line may break), must lie on one line. Math is skipped (MathJax lays it
// out itself).
function splitWords(article) {
  const d = article.ownerDocument;
  const found = [];
  for (const cell of article.querySelectorAll('table td, table th')) {
    const walker = d.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest('mjx-container, mjx-assistive-mml')) continue;
      for (const m of node.textContent.matchAll(/[^\s\-\u2010-\u2014\/\u2026]+/g)) {
        const range = d.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (tops.size > 1) found.push(m[0]);
      }
    }
  }
  return found.slice(0, 12);
}

// Slider readouts (the value a slider shows) that a reader cannot see: scrolled into view, the element at the
// readout's centre is not the readout (a box clips it, or something covers it).
function hiddenReadouts(article) {
  const d = article.ownerDocument;
  const found = [];
  for (const readout of article.querySelectorAll('.widget-readout')) {
    if (readout.offsetParent === null) continue;
    readout.scrollIntoView({block: 'center', inline: 'nearest'});
    const r = readout.getBoundingClientRect();
    const hit = d.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (!(r.width > 0 && hit && readout.contains(hit))) found.push(describe(readout.closest('.widget-slider') || readout));
  }
  return found.slice(0, 12);
}

// Kernel-only explorers (ipywidgets interact): in the static page every control must be disabled and the box
// marked as live (it then carries its note), so no control shows a value the figure beside it does not.
async function liveControls(d) {
  const boxes = [...d.querySelectorAll('.widget-interact')];
  const report = {boxes: boxes.length, marked: 0, controls: 0, enabled: 0, moved: 0};
  for (const box of boxes) {
    if (box.classList.contains('fibook-live')) report.marked += 1;
    for (const select of box.querySelectorAll('select')) {
      report.controls += 1;
      if (!select.disabled) report.enabled += 1;
    }
    for (const slider of box.querySelectorAll('.widget-slider')) {
      report.controls += 1;
      const target = slider.querySelector('.noUi-target');
      if (!(target && target.hasAttribute('disabled'))) report.enabled += 1;
      const readout = slider.querySelector('.widget-readout');
      const before = readout ? readout.textContent : null;
      const handle = slider.querySelector('.noUi-handle');
      if (handle) await press(handle, 'ArrowRight');
      if (readout && readout.textContent !== before) report.moved += 1;
    }
  }
  return report;
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
    live: await liveControls(d),
    figures: article ? await figures(article) : [],
    overflows: article ? overflows(article) : [],
    split_words: article ? splitWords(article) : [],
    hidden_readouts: article ? hiddenReadouts(article) : [],
    console: frame.contentWindow.__fibookConsole || ['the console hook is missing from this page'],
    raw_tables: (text.match(/^[ \t]*\|.*\|[ \t]*$/gm) || []).slice(0, 5),
    article_width: article ? Math.round(article.getBoundingClientRect().width) : 0,
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
