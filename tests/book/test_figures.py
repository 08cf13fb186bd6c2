"""Every figure a chapter stores (inline outputs and explorer frames) came through fibook.style.figure_png and is
legible at the book's column width: its smallest text, scaled to the width it is shown at, is at least
``MIN_FONT_PX``; it shows no axis offset label; no two of its texts overlap.

The browser test (tests/book/test_book.py) reads the same numbers from the rendered page beside each image's displayed
width; this test reads them from the notebooks, without a browser, so it is the quick check while a chapter's
figures are being laid out.
"""

import base64
import io
import json
import re
from pathlib import Path

import pytest
from PIL import Image

from fibook import style

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").rglob("*.ipynb"))


def stored_images(path: Path) -> list[tuple[str, bytes]]:
    """(where, PNG bytes) of every image a notebook stores: cell outputs, then explorer frames (widget state)."""
    nb = json.loads(path.read_text())
    found = []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            if "image/png" in out.get("data", {}):
                found.append((f"cell {i}", base64.b64decode(out["data"]["image/png"])))
    state = nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    for key, model in state.get("state", {}).items():
        if model["model_name"] == "ImageModel":
            for buf in model.get("buffers", []):
                if buf["path"] == ["value"]:
                    found.append((f"explorer frame {key[:8]}", base64.b64decode(buf["data"])))
    return found


def legibility(png: bytes) -> dict:
    """What a reader gets of one stored image: its natural width, the width ratio it is shown at in the column,
    and fibook.style's numbers (None where the image did not come through figure_png)."""
    image = Image.open(io.BytesIO(png))
    ratio = min(1.0, style.ARTICLE_PX / image.width)
    font = image.text.get("fibook:smallest-font-px")
    return {"width": image.width, "ratio": ratio,
            "font_px": None if font is None else float(font) * ratio,
            "offset_labels": image.text.get("fibook:offset-labels"),
            "overlaps": image.text.get("fibook:text-overlaps")}


def problems(path: Path) -> list[str]:
    out = []
    for where, png in stored_images(path):
        r = legibility(png)
        if r["font_px"] is None:
            out.append(f"{where}: not drawn through fibook.style.figure_png (no measurements in the PNG)")
            continue
        if r["font_px"] < style.MIN_FONT_PX:
            out.append(f"{where}: smallest text {r['font_px']:.1f} px as shown (natural width {r['width']} px)")
        if r["offset_labels"] != "0":
            out.append(f"{where}: {r['offset_labels']} axis offset label(s)")
        if not r["overlaps"].startswith("0"):
            out.append(f"{where}: overlapping texts {r['overlaps']}")
    return out


@pytest.mark.parametrize("path", CHAPTERS, ids=[str(p.relative_to(ROOT / "chapters")) for p in CHAPTERS])
def test_every_stored_figure_is_legible_at_the_column_width(path):
    assert problems(path) == []


def test_the_check_finds_a_figure_drawn_too_small_and_one_from_elsewhere(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context(style.RC):
        fig, ax = plt.subplots(figsize=(13, 3))  # twice the column: shown at half size
        ax.plot([0, 1])
        small = style.figure_png(fig)
        fig, ax = plt.subplots()
        ax.plot([0, 1])
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    nb = {"cells": [{"cell_type": "code", "source": [], "outputs": [
        {"output_type": "display_data", "data": {"image/png": base64.b64encode(png).decode()}}]}
        for png in (small, buf.getvalue())], "metadata": {}}
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    found = problems(tmp_path / "nb.ipynb")
    assert len(found) == 2
    assert found[0].startswith("cell 0: smallest text") and "not drawn through" in found[1]


def caption_problems(path: Path) -> list[str]:
    """What keeps a reader from finding a figure by its number: every cell that shows an image carries a caption
    and a name ``fig-...`` in its ``mystnb.figure`` metadata (MyST-NB then renders a numbered figure), shows
    nothing else (MyST-NB would put a table of the same cell inside the figure too), and the chapter's prose
    refers to it with ``{numref}``."""
    nb = json.loads(path.read_text())
    prose = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    out = []
    for i, cell in enumerate(nb["cells"]):
        if not any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            continue
        shown = [o for o in cell["outputs"] if o["output_type"] in ("display_data", "execute_result")]
        if len(shown) > 1:  # MyST-NB wraps every displayed output of a captioned cell in the figure
            out.append(f"cell {i}: the figure shares its cell with {len(shown) - 1} other displayed output(s); "
                       "give it a cell of its own")
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        name, caption = figure.get("name", ""), figure.get("caption", "").strip()
        if not caption:
            out.append(f"cell {i}: a figure without a caption")
        if not name.startswith("fig-"):
            out.append(f"cell {i}: a figure without a name fig-... ({name!r})")
        elif not re.search(r"\{numref\}`([^`<]*<)?" + re.escape(name) + r">?`", prose):
            out.append(f"cell {i}: the prose never refers to {name} with {{numref}}")
    return out


def figure_names(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    return [c["metadata"]["mystnb"]["figure"]["name"] for c in nb["cells"]
            if c.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")]


@pytest.mark.parametrize("path", CHAPTERS, ids=[str(p.relative_to(ROOT / "chapters")) for p in CHAPTERS])
def test_every_figure_has_a_numbered_caption_the_prose_refers_to(path):
    assert caption_problems(path) == []


def test_figure_names_are_unique_across_the_book():
    names = [n for p in CHAPTERS for n in figure_names(p)]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def test_the_caption_check_finds_a_bare_figure_and_an_unreferenced_one(tmp_path):
    image = {"output_type": "display_data", "data": {"image/png": ""}}
    named = {"mystnb": {"figure": {"name": "fig-a", "caption": "What to see."}}}
    for prose, expected in ((["See {numref}`fig-a`."], 1), (["See {numref}`Figure %s <fig-a>`."], 1),
                            (["See fig-a."], 2)):
        nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": prose},
                        {"cell_type": "code", "metadata": {}, "source": [], "outputs": [image]},
                        {"cell_type": "code", "metadata": named, "source": [], "outputs": [image]}], "metadata": {}}
        (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
        found = caption_problems(tmp_path / "nb.ipynb")
        assert len(found) == expected + 1, found  # the bare cell lacks both a caption and a name
        assert found[0] == "cell 1: a figure without a caption"
    table = {"output_type": "display_data", "data": {"text/html": "<table></table>"}}
    nb["cells"][2]["outputs"].append(table)
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    assert "cell 2: the figure shares its cell with 1 other displayed output(s)" in caption_problems(
        tmp_path / "nb.ipynb")[2]


if __name__ == "__main__":  # python tests/book/test_figures.py [NOTEBOOK ...]: the problems of each chapter
    import sys

    for p in [Path(a).resolve() for a in sys.argv[1:]] or CHAPTERS:
        print(p.relative_to(ROOT), *problems(p) + caption_problems(p) or ["ok"], sep="\n  ")
