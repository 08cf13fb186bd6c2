"""The rendered book: it builds without warnings, and every page shows what a reader uses, offline.

The book is built once; headless Chromium (network cut) then opens every page of ``_toc.yml`` in turn through
``tests/book/book_probe.js``, in a 1280-px window and again at a phone's 390 px, which reports per page: broken images,
math left untypeset, raw TeX or error text in the prose, widget errors, for each static explorer
(``fibook.notebook.frames_explorer``) whether moving each of its sliders (key presses dispatched to the slider)
switches the figure shown and moving it back restores it, whether kernel-only controls are inert, every shown
figure's displayed/natural width and the measurements ``fibook.style`` wrote into it (smallest text, offset
labels, overlapping texts), any element cut off on the right, slider readouts out of view, and every console
error (``console.error``, uncaught exceptions and failed loads, recorded by a hook put at the top of each page);
the page's weight (HTML and images) is added here.
``python tests/book/test_book.py _build/html`` prints the per-page table of these for a built book.
A check of the rendered page is one more key in the probe's report and one more test here.

Without Chromium the browser tests are skipped with the package to install, except under CI, where they fail.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fibook import style
from fibook.claims import markdown_table

pytestmark = [pytest.mark.book, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SETTLE_MS = 4000  # virtual time a page's scripts (MathJax, the widget manager) get before it is inspected


def toc_pages() -> list[str]:
    """Every page of the table of contents, as the path of its source without suffix (``chapters/intro``)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        pages += [c["file"] for c in part["chapters"]]
    return pages


PAGES = toc_pages()


def source_of(page: str) -> Path:
    for suffix in (".ipynb", ".md"):
        if (ROOT / f"{page}{suffix}").is_file():
            return ROOT / f"{page}{suffix}"
    raise FileNotFoundError(f"{page}: no .ipynb or .md source")


def explorers_in(page: str) -> int:
    """How many static explorers a chapter's code builds (calls of ``frames_explorer``)."""
    path = source_of(page)
    if path.suffix != ".ipynb":
        return 0
    cells = json.loads(path.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return len(re.findall(r"^\s*(?:\w+\s*=\s*)?frames_explorer\(", code, re.M))


@pytest.fixture(scope="module")
def built_book(tmp_path_factory):
    out = tmp_path_factory.mktemp("book")
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "--path-output", str(out), "-W", "-n",
           "--keep-going"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"book build failed or warned:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return out / "_build" / "html"


def test_book_builds_every_toc_page(built_book):
    assert (built_book / "index.html").is_file()
    for page in PAGES:
        assert (built_book / f"{page}.html").is_file(), page


def test_pages_load_no_script_from_the_network(built_book):
    for page in built_book.rglob("*.html"):
        remote = re.findall(r'<script[^>]+src="(https?://[^"]+)"', page.read_text())
        assert not remote, f"{page.name} loads scripts from the network: {remote}"


VIEWPORT = 1280  # px: a laptop browser window, the width the book is read at
MAX_PAGE_BYTES = 800 * 1024  # a page's HTML and images


def page_weight(html_dir: Path, page: str) -> int:
    """Bytes a reader downloads for a page beyond the theme's shared files: its HTML and the images it shows."""
    path = html_dir / f"{page}.html"
    total = path.stat().st_size
    for src in set(re.findall(r'<img[^>]+src="([^"]+)"', path.read_text())):
        if not src.startswith(("data:", "http")):
            total += (path.parent / src).resolve().stat().st_size
    return total


PHONE = 390  # px: a phone held upright

# Put first in each page's <head>: every console.error, uncaught exception, unhandled rejection and failed load of
# the page, from its first script on, is kept in window.__fibookConsole for the probe to read.
CONSOLE_HOOK = (
    "<script>(() => { const seen = window.__fibookConsole = []; const error = console.error.bind(console);"
    " console.error = (...a) => { seen.push('console.error: ' + a.map(String).join(' ')); error(...a); };"
    " addEventListener('error', e => seen.push(e.target && e.target !== window"
    " ? 'failed to load: ' + (e.target.src || e.target.href) : 'uncaught: ' + e.message), true);"
    " addEventListener('unhandledrejection', e => seen.push('unhandled rejection: ' + e.reason)); })();</script>")


def with_console_hook(html_dir: Path, into: Path) -> Path:
    """A copy of the built book in ``into`` whose pages carry :data:`CONSOLE_HOOK` first in their <head>."""
    shutil.copytree(html_dir, into, dirs_exist_ok=True)
    for page in PAGES:
        path = into / f"{page}.html"
        text = path.read_text()
        if "<head>" not in text:
            raise ValueError(f"{path}: no <head> to put the console hook in")
        path.write_text(text.replace("<head>", "<head>" + CONSOLE_HOOK, 1))
    return into


def probe(html_dir: Path, workdir: Path, viewport: int = VIEWPORT) -> dict[str, dict]:
    """The probe's report of every page of the book built in ``html_dir`` at a window ``viewport`` px wide, keyed
    by page, with each page's weight in bytes (``weight``) added; ``workdir`` holds the hooked copy of the book and
    Chromium's profile."""
    book = with_console_hook(html_dir, workdir / "book")
    shutil.copy(ROOT / "tests" / "book" / "book_probe.js", book / "_probe.js")
    wrapper = book / "_probe.html"
    wrapper.write_text(
        '<!doctype html><html><body style="margin:0"><pre id="out">pending</pre>'
        f'<iframe id="f" style="width:{viewport}px;height:3000px;border:0"></iframe>'
        f"<script>window.PAGES = {json.dumps([f'{p}.html' for p in PAGES])}; window.SETTLE_MS = {SETTLE_MS};</script>"
        '<script src="_probe.js"></script></body></html>')
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
           "--disable-background-networking", "--disable-component-update", "--allow-file-access-from-files",
           f"--user-data-dir={workdir / 'profile'}", "--proxy-server=127.0.0.1:9",
           f"--window-size={max(viewport, VIEWPORT) + 40},1000",
           f"--virtual-time-budget={(SETTLE_MS + 8000) * len(PAGES)}", "--dump-dom", wrapper.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    start = proc.stdout.find('<pre id="out">') + len('<pre id="out">')
    raw = proc.stdout[start:proc.stdout.find("</pre>", start)]
    assert raw.startswith("["), f"probe did not report: {raw!r}\n{proc.stderr[-2000:]}"
    reports = json.loads(raw.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    return {r["page"].removesuffix(".html"): r | {"weight": page_weight(html_dir, r["page"].removesuffix(".html"))}
            for r in reports}


def needs_chromium():
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI (Debian package 'chromium')")
        pytest.skip("Chromium not installed: the browser check needs Debian's package 'chromium' "
                    "(`make test` installs it when run as root)")


@pytest.fixture(scope="module")
def rendered(built_book, tmp_path_factory):
    """The probe's report of every page in a laptop's window, keyed by page."""
    needs_chromium()
    return probe(built_book, tmp_path_factory.mktemp("laptop"))


@pytest.fixture(scope="module")
def on_a_phone(built_book, tmp_path_factory):
    """The probe's report of every page on a phone, keyed by page."""
    needs_chromium()
    return probe(built_book, tmp_path_factory.mktemp("phone"), PHONE)


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_images_math_and_no_errors(rendered, page):
    r = rendered[page]
    assert "probe_error" not in r and r["article"], r
    assert r["images_broken"] == 0, r
    assert r["math_untypeset"] == 0 and r["raw_tex"] == [], r
    assert r["error_text"] == [] and r["widget_errors"] == 0, r


@pytest.mark.parametrize("page", PAGES)
def test_every_static_explorer_switches_its_figure_when_a_slider_moves(rendered, page):
    found = rendered[page]["explorers"]
    built = explorers_in(page)
    assert len(found) == built, f"{page}: {len(found)} explorers rendered, its code builds {built}"
    for box in found:
        assert box["switched"] == box["sliders"] and box["restored"] == box["sliders"], (page, box)


@pytest.mark.parametrize("page", PAGES)
def test_no_console_errors(rendered, page):
    assert rendered[page]["console"] == []


def test_the_console_hook_records_errors_exceptions_and_failed_loads(tmp_path):
    """The hook the probe puts in each page sees a console.error, an uncaught exception and a missing image."""
    needs_chromium()
    (tmp_path / "page.html").write_text(
        f"<html><head>{CONSOLE_HOOK}</head><body><img src='missing.png'><script>console.error('one', 2);"
        "setTimeout(() => { throw new Error('two'); });</script></body></html>")
    (tmp_path / "probe.html").write_text(
        "<html><body><pre id='out'></pre><iframe id='f' src='page.html'></iframe><script>"
        "document.getElementById('f').onload = () => setTimeout(() => { document.getElementById('out').textContent ="
        " JSON.stringify(document.getElementById('f').contentWindow.__fibookConsole); }, 500);</script></body></html>")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}",
           "--allow-file-access-from-files", "--virtual-time-budget=2000", "--dump-dom",
           (tmp_path / "probe.html").as_uri()]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    start = out.index("<pre id=\"out\">") + len("<pre id=\"out\">")
    seen = json.loads(out[start:out.index("</pre>", start)].replace("&quot;", '"'))
    assert seen[0] == "console.error: one 2"
    assert any(s.startswith("failed to load: ") and s.endswith("missing.png") for s in seen), seen
    assert any(s.startswith("uncaught: ") and "two" in s for s in seen), seen


@pytest.mark.parametrize("page", PAGES)
def test_nothing_in_the_article_is_cut_off_on_the_right(rendered, page):
    assert rendered[page]["overflows"] == []


@pytest.mark.parametrize("page", PAGES)
def test_on_a_phone_nothing_in_the_article_is_cut_off_on_the_right(on_a_phone, page):
    """Tables, display equations, figures and explorer frames wider than a phone's column scroll in their own
    box (fibook.css); nothing else reaches past the edge."""
    assert on_a_phone[page]["overflows"] == []


@pytest.mark.parametrize("window", ["rendered", "on_a_phone"])
@pytest.mark.parametrize("page", PAGES)
def test_every_slider_readout_is_in_view(request, window, page):
    assert request.getfixturevalue(window)[page]["hidden_readouts"] == []


@pytest.mark.parametrize("page", PAGES)
def test_on_a_phone_every_figure_is_legible(on_a_phone, page):
    """A figure keeps its laptop size on a phone and scrolls, so its smallest text as shown stays legible."""
    for f in on_a_phone[page]["figures"]:
        assert f["font_px"] is not None and f["font_px"] >= style.MIN_FONT_PX, (page, f)


def test_the_css_keeps_figures_at_the_width_fibook_style_draws_for():
    css = (ROOT / "_static" / "fibook.css").read_text()
    assert re.findall(r"min-width: (\d+)px", css) == [str(style.ARTICLE_PX)]


@pytest.mark.parametrize("page", PAGES)
def test_no_word_or_number_in_a_table_is_split_across_lines(rendered, page):
    assert rendered[page]["split_words"] == []


@pytest.mark.parametrize("page", PAGES)
def test_every_markdown_table_rendered(rendered, page):
    """A pipe table whose markup broke (an unescaped pipe in a cell) shows as lines of pipes in the prose."""
    assert rendered[page]["raw_tables"] == []


@pytest.mark.parametrize("page", PAGES)
def test_every_figure_is_shown_at_its_size_and_legible(rendered, page):
    """Each image came through fibook.style.figure_png, is shown at min(1, column / natural width) of its size
    (the column being fibook.style.ARTICLE_PX), its smallest text as shown is at least MIN_FONT_PX, and it has
    no offset label and no overlapping texts."""
    for f in rendered[page]["figures"]:
        assert f["font_px"] is not None, (page, f)
        assert f["ratio"] == pytest.approx(min(1, style.ARTICLE_PX / f["natural"]), abs=0.01), (page, f)
        assert f["font_px"] >= style.MIN_FONT_PX and f["offset_labels"] == 0, (page, f)
        assert f["overlaps"].startswith("0"), (page, f)


@pytest.mark.parametrize("page", PAGES)
def test_kernel_only_controls_are_inert_in_the_static_page(rendered, page):
    live = rendered[page]["live"]
    assert live["marked"] == live["boxes"] and live["enabled"] == 0 and live["moved"] == 0, live


@pytest.mark.parametrize("page", PAGES)
def test_page_weight(rendered, page):
    assert rendered[page]["weight"] <= MAX_PAGE_BYTES, f"{page}: {rendered[page]['weight'] / 1024:.0f} KB"


def test_the_probe_sees_the_book_as_it_is(rendered):
    """The checks above can fail: the book has figures, typeset math and explorers for the probe to find."""
    assert sum(r["images"] for r in rendered.values()) >= 20
    assert sum(r["math"] for r in rendered.values()) >= 100
    assert sum(len(r["explorers"]) for r in rendered.values()) == sum(explorers_in(p) for p in PAGES) >= 8
    assert sum(len(r["figures"]) for r in rendered.values()) >= 20
    assert sum(r["live"]["boxes"] for r in rendered.values()) >= 5
    assert all(r["article_width"] > style.ARTICLE_PX for r in rendered.values())


def summary(reports: dict[str, dict]) -> str:
    """The per-page table of what a reader gets: weight, figures, their smallest displayed/natural width and
    smallest displayed text, overflowing elements, console errors."""
    rows = []
    for page, r in reports.items():
        figs = r["figures"]
        fonts = [f["font_px"] for f in figs if f["font_px"] is not None]
        rows.append({"page": page.removeprefix("chapters/"), "KB": f"{r['weight'] / 1024:.0f}", "figures": len(figs),
                     "min shown/natural": f"{min(f['ratio'] for f in figs):.2f}" if figs else "",
                     "smallest text (px)": f"{min(fonts):.1f}" if fonts else ("unmeasured" if figs else ""),
                     "cut off": len(r["overflows"]), "console errors": len(r["console"])})
    return markdown_table(rows)


if __name__ == "__main__":  # python tests/book/test_book.py BUILT_HTML_DIR: the table above for a built book
    import tempfile

    if CHROMIUM is None:
        sys.exit("needs Chromium (Debian package 'chromium')")
    print(summary(probe(Path(sys.argv[1]), Path(tempfile.mkdtemp()))))


def test_every_bibliography_entry_is_cited():
    """The bibliography page lists every entry of references.bib, so each must be cited somewhere."""
    keys = re.findall(r"^@\w+\{([^,]+),", (ROOT / "references.bib").read_text(), re.M)
    text = "\n".join(source_of(p).read_text() for p in PAGES)
    cited = set(re.findall(r"\{cite:[pt]\}`([^`]+)`", text))
    cited = {k.strip() for group in cited for k in group.split(",")}
    assert keys and set(keys) <= cited, f"never cited: {sorted(set(keys) - cited)}"
