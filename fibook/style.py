"""The book's one figure style, and the checks every figure passes on its way to a page.

Figures are drawn for the text column of the rendered book. :data:`COLUMN_IN` inches at :data:`DPI` dots per
inch is :data:`COLUMN_PX` pixels, no wider than the article's text column in a 1280-px browser window
(:data:`ARTICLE_PX`, checked by ``tests/book/test_book.py``), so a figure is shown at its natural size and its text at
the size it was drawn: :data:`RC`'s smallest size, 8 pt, is 11 px, above :data:`MIN_FONT_PX`. A figure drawn
wider is shrunk by the browser, and so is its text.

:func:`figure_png` is the only way a figure becomes an image (inline outputs through :func:`install`, explorer
frames through :func:`fibook.notebook.frames_explorer`). It measures the drawn figure (:func:`check`: smallest
text in image pixels, axis offset labels such as "1e-8+9.99e-1", pairs of texts whose boxes overlap), writes
those numbers into the PNG's text chunks (``fibook:smallest-font-px``, ``fibook:offset-labels``,
``fibook:text-overlaps``), where the browser test reads them beside the image's displayed width, and stores the
image with a palette of at most :data:`PALETTE` colours, which a plot's flat colours and anti-aliased edges fit.

Serves every figure of every chapter, and the figure checks of ``tests/book``.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

COLUMN_IN = 6.5
DPI = 100
COLUMN_PX = round(COLUMN_IN * DPI)
ARTICLE_PX = 676  # the article's text column at a 1280-px window, as tests/book/test_book.py measures it
MIN_FONT_PX = 9.0  # the smallest text a reader is asked to read, in CSS px as displayed
PALETTE = 256
RC = {
    "figure.dpi": DPI, "savefig.dpi": DPI, "figure.figsize": (COLUMN_IN, 3.6), "figure.constrained_layout.use": True,
    "font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10, "xtick.labelsize": 9, "ytick.labelsize": 9,
    "legend.fontsize": 8, "legend.title_fontsize": 9, "figure.titlesize": 11,
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
    # tick labels are plain values: never a shared offset ("1e-8+9.99e-1") the reader must add back
    "axes.formatter.useoffset": False,
}


def apply() -> None:
    """Set :data:`RC` as matplotlib's defaults."""
    import matplotlib as mpl

    mpl.rcParams.update(RC)


@dataclass(frozen=True)
class FigureCheck:
    """What :func:`check` measured of a drawn figure: its smallest visible text in image pixels (``inf`` for a
    figure without text), how many axis offset labels it shows, and the pairs of visible texts whose boxes
    overlap by more than a pixel each way (each pair as the two strings)."""

    smallest_font_px: float
    offset_labels: int
    overlaps: tuple[tuple[str, str], ...]


def _drawn_texts(fig) -> list:
    """The text artists a draw of ``fig`` actually renders (each once), recorded at the renderer: hidden texts,
    empty strings and tick labels outside the view never reach it."""
    renderer = fig.canvas.get_renderer()
    drawn: dict[int, object] = {}
    draw_text = renderer.draw_text

    def record(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if mtext is not None and s.strip():
            drawn.setdefault(id(mtext), mtext)
        return draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = record
    try:
        fig.draw(renderer)
    finally:
        del renderer.draw_text
    return list(drawn.values())


def check(fig, tolerance_px: float = 1.0) -> FigureCheck:
    """Draw ``fig`` and measure what was drawn: the smallest text (its size in points x :data:`DPI` / 72, the
    resolution :func:`figure_png` saves at), the axis offset labels, and the pairs of drawn texts whose boxes
    overlap by more than ``tolerance_px`` both ways."""
    texts = _drawn_texts(fig)
    renderer = fig.canvas.get_renderer()
    smallest = min((t.get_fontsize() * DPI / 72 for t in texts), default=float("inf"))
    offset_texts = {id(axis.get_offset_text()) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)}
    offsets = sum(1 for t in texts if id(t) in offset_texts)
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    overlaps = []
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            wide = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            high = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if wide > tolerance_px and high > tolerance_px:
                overlaps.append((a, b))
    return FigureCheck(smallest, offsets, tuple(overlaps))


def figure_png(fig, close: bool = True) -> bytes:
    """``fig`` as a palette PNG (cropped to its drawn content) carrying :func:`check`'s numbers in text chunks;
    closed unless ``close`` is False."""
    import matplotlib.pyplot as plt
    from PIL import Image, PngImagePlugin

    measured = check(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    if close:
        plt.close(fig)
    image = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    info = PngImagePlugin.PngInfo()
    info.add_text("fibook:smallest-font-px", f"{measured.smallest_font_px:.1f}")
    info.add_text("fibook:offset-labels", str(measured.offset_labels))
    pairs = "; ".join(f"{a!r} x {b!r}" for a, b in measured.overlaps[:3])
    overlaps = f"{len(measured.overlaps)}{': ' + pairs if pairs else ''}"
    info.add_text("fibook:text-overlaps", overlaps.encode("ascii", "backslashreplace").decode("ascii"))
    out = io.BytesIO()
    image.quantize(colors=PALETTE, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        out, format="png", optimize=True, pnginfo=info)
    return out.getvalue()


def install() -> None:
    """Make :func:`figure_png` the way the running IPython shell shows a matplotlib figure (the inline
    backend's figures included); outside IPython, nothing."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    import matplotlib
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    # loading the backend now (pyplot would load it at the first figure) lets Jupyter's inline backend register
    # its PNG formatter as it loads; ours then replaces it
    plt.switch_backend(matplotlib.get_backend())

    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type(Figure, lambda fig: base64.b64encode(figure_png(fig, close=False)).decode("ascii"))
