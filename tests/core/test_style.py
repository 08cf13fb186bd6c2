"""fibook.style: the measurements written into every figure, on figures built to sit just above and below each
threshold, and the PNG that carries them."""

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from fibook import style  # noqa: E402


@pytest.fixture(autouse=True)
def book_style():
    with matplotlib.rc_context(style.RC):
        yield
    plt.close("all")


def text_only(size_pt: float):
    fig = plt.figure(figsize=(2, 1))
    fig.text(0.1, 0.5, "label", fontsize=size_pt)
    return fig


def test_smallest_font_is_points_times_dpi_over_72():
    # 9 px at 100 dpi is 6.48 pt: 6.4 pt lands below the legibility floor, 6.5 pt above it
    assert style.check(text_only(6.4)).smallest_font_px == pytest.approx(6.4 * style.DPI / 72)
    assert style.check(text_only(6.4)).smallest_font_px < style.MIN_FONT_PX
    assert style.check(text_only(6.5)).smallest_font_px > style.MIN_FONT_PX


def test_smallest_font_counts_only_text_that_is_drawn():
    fig = text_only(12)
    fig.text(0.5, 0.5, "hidden", fontsize=4, visible=False)
    fig.text(0.5, 0.2, "", fontsize=4)
    assert style.check(fig).smallest_font_px == pytest.approx(12 * style.DPI / 72)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=5)
    assert style.check(fig).smallest_font_px == pytest.approx(5 * style.DPI / 72)


def test_the_book_style_draws_nothing_below_the_floor_and_no_offset_label():
    fig, ax = plt.subplots()
    x = np.linspace(0, 1, 50)
    ax.plot(x, 0.9989932 + 1e-8 * x, label="curve")
    ax.legend(title="legend")
    ax.set_title("title")
    fig.suptitle("suptitle")
    measured = style.check(fig)
    assert measured.smallest_font_px >= style.MIN_FONT_PX
    assert measured.offset_labels == 0


def test_offset_labels_are_counted_where_matplotlib_draws_them():
    with matplotlib.rc_context({"axes.formatter.useoffset": True}):
        fig, ax = plt.subplots()
        ax.plot(np.linspace(0, 1, 50), 0.9989932 + 1e-8 * np.linspace(0, 1, 50))
        assert style.check(fig).offset_labels == 1


def test_overlapping_texts_are_reported_in_pairs_and_separated_ones_are_not():
    fig = plt.figure(figsize=(4, 2))
    fig.text(0.2, 0.5, "first label")
    fig.text(0.22, 0.5, "second label")
    fig.text(0.7, 0.1, "far away")
    assert style.check(fig).overlaps == (("first label", "second label"),)


def test_overlap_tolerance_boundary():
    # two texts whose boxes share a strip 0.5 px or 3 px wide: only the wider one is an overlap at 1 px
    fig = plt.figure(figsize=(4, 2))
    a = fig.text(0.1, 0.5, "left")
    fig.canvas.draw()
    right_edge = a.get_window_extent(fig.canvas.get_renderer()).x1
    width_px = fig.get_size_inches()[0] * fig.dpi
    b = fig.text((right_edge - 0.5) / width_px, 0.5, "right")
    assert style.check(fig).overlaps == ()
    x0 = b.get_window_extent(fig.canvas.get_renderer()).x0
    b.set_x((right_edge - 3 - (x0 - (right_edge - 0.5))) / width_px)
    assert style.check(fig).overlaps == (("left", "right"),)


def test_figure_png_is_a_palette_png_carrying_the_measurements():
    fig = text_only(6.4)
    fig.text(0.1, 0.5, "label overlapped σ")
    png = style.figure_png(fig)
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.mode == "P"
    assert float(image.text["fibook:smallest-font-px"]) == pytest.approx(6.4 * style.DPI / 72, abs=0.05)
    assert image.text["fibook:offset-labels"] == "0"
    assert image.text["fibook:text-overlaps"].startswith("1: 'label' x 'label overlapped \\u03c3'")
    assert not plt.fignum_exists(fig.number)


def test_a_column_wide_figure_is_no_wider_than_the_column():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    ax.set_ylabel("a label")
    width = Image.open(io.BytesIO(style.figure_png(fig))).width
    assert width <= style.COLUMN_PX + 20  # bbox_inches="tight" keeps a 0.1-inch pad


def test_install_makes_the_shell_show_figures_through_figure_png():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        style.install()
        fig, ax = plt.subplots()
        ax.plot([0, 1])
        data, _ = shell.display_formatter.format(fig)
        image = Image.open(io.BytesIO(base64.b64decode(data["image/png"])))
        assert "fibook:smallest-font-px" in image.text
    finally:
        InteractiveShell.clear_instance()
