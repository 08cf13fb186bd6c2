"""The rendered book: it builds without warnings, and every page shows what a reader uses, offline.

The book is built once; headless Chromium (network cut) then opens every page of ``_toc.yml`` in turn through
``tests/book_probe.js``, which reports per page: broken images, math left untypeset, raw TeX or error text in the
prose, widget errors, and for each static explorer (``fibook.notebook.frames_explorer``) whether moving each of
its sliders (key presses dispatched to the slider) switches the figure shown and moving it back restores it.
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

ROOT = Path(__file__).resolve().parent.parent
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


@pytest.fixture(scope="module")
def rendered(built_book, tmp_path_factory):
    """The probe's report of every page, keyed by page."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI (Debian package 'chromium')")
        pytest.skip("Chromium not installed: the browser check needs Debian's package 'chromium' "
                    "(`make test` installs it when run as root)")
    shutil.copy(ROOT / "tests" / "book_probe.js", built_book / "_probe.js")
    probe = built_book / "_probe.html"
    probe.write_text(
        '<!doctype html><html><body><pre id="out">pending</pre>'
        '<iframe id="f" style="width:1200px;height:3000px"></iframe>'
        f"<script>window.PAGES = {json.dumps([f'{p}.html' for p in PAGES])}; window.SETTLE_MS = {SETTLE_MS};</script>"
        '<script src="_probe.js"></script></body></html>')
    profile = tmp_path_factory.mktemp("chromium-profile")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
           "--disable-background-networking", "--disable-component-update", "--allow-file-access-from-files",
           f"--user-data-dir={profile}", "--proxy-server=127.0.0.1:9",
           f"--virtual-time-budget={(SETTLE_MS + 5000) * len(PAGES)}", "--dump-dom", probe.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    start = proc.stdout.find('<pre id="out">') + len('<pre id="out">')
    raw = proc.stdout[start:proc.stdout.find("</pre>", start)]
    assert raw.startswith("["), f"probe did not report: {raw!r}\n{proc.stderr[-2000:]}"
    reports = json.loads(raw.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    return {r["page"].removesuffix(".html"): r for r in reports}


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


def test_the_probe_sees_the_book_as_it_is(rendered):
    """The checks above can fail: the book has figures, typeset math and explorers for the probe to find."""
    assert sum(r["images"] for r in rendered.values()) >= 20
    assert sum(r["math"] for r in rendered.values()) >= 100
    assert sum(len(r["explorers"]) for r in rendered.values()) == sum(explorers_in(p) for p in PAGES) >= 8
