"""The rendered book: it builds without warnings, and a chapter shows its figures, math and widgets offline.

The page is opened in headless Chromium with network access cut; a wrapper page inspects the chapter's DOM once
its scripts have run. Without Chromium the test is skipped, except under CI, where it must run.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = "chapters/part1_forgetting/data_protocol.html"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

PROBE = """<!doctype html><html><body><pre id="out">pending</pre>
<iframe id="f" src="%s" style="width:1200px;height:3000px"></iframe>
<script>
const f = document.getElementById('f');
f.addEventListener('load', () => setTimeout(() => {
  const d = f.contentDocument;
  const imgs = [...d.querySelectorAll('img')].filter(i => i.closest('article'));
  const text = d.querySelector('article').innerText;
  document.getElementById('out').textContent = JSON.stringify({
    images: imgs.length,
    images_loaded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
    math_typeset: d.querySelectorAll('mjx-container').length,
    raw_tex_left: (text.match(/\\$\\$|\\\\frac|\\\\sigma/g) || []).length,
    sliders: d.querySelectorAll('.widget-slider').length,
    widget_errors: d.querySelectorAll('.jupyter-widgets-error, .widget-error').length,
    error_text: /Traceback|Error rendering|Error displaying widget/.test(text),
  });
}, 4000));
</script></body></html>"""


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
    for page in ("chapters/intro.html", CHAPTER, "chapters/appendix/bibliography.html"):
        assert (built_book / page).is_file(), page


def test_pages_load_no_script_from_the_network(built_book):
    import re

    for page in built_book.rglob("*.html"):
        remote = re.findall(r'<script[^>]+src="(https?://[^"]+)"', page.read_text())
        assert not remote, f"{page.name} loads scripts from the network: {remote}"


def test_chapter_renders_figures_math_and_widgets_offline(built_book, tmp_path):
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI (Debian package 'chromium')")
        pytest.skip("Chromium not installed (Debian package 'chromium')")
    probe = built_book / "_probe.html"
    probe.write_text(PROBE % CHAPTER)
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
           "--disable-background-networking", "--disable-component-update", "--allow-file-access-from-files",
           f"--user-data-dir={tmp_path / 'profile'}", "--proxy-server=127.0.0.1:9",
           "--virtual-time-budget=20000", "--dump-dom", probe.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    start = proc.stdout.find('<pre id="out">') + len('<pre id="out">')
    raw = proc.stdout[start:proc.stdout.find("</pre>", start)]
    assert raw.startswith("{"), f"probe did not report: {raw!r}\n{proc.stderr[-2000:]}"
    dom = json.loads(raw.replace("&quot;", '"'))
    assert dom["images"] >= 2 and dom["images_loaded"] == dom["images"], dom
    assert dom["math_typeset"] >= 5 and dom["raw_tex_left"] == 0, dom
    assert dom["sliders"] >= 1 and dom["widget_errors"] == 0, dom
    assert not dom["error_text"], dom
