"""Chapter helpers: tables and the kernel-free explorer."""

import ipywidgets as W
import matplotlib
from ipywidgets.widgets.widget import _instances
from ipywidgets.widgets.widget_link import Link

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from fibook.notebook import Claim, claims_markdown_rows, frames_explorer, markdown_table  # noqa: E402


def test_markdown_table_escapes_pipes_and_newlines():
    text = markdown_table([{"a": "x|y", "b": "two\nlines"}, {"a": 1, "b": 2.5}])
    assert text.splitlines() == ["| a | b |", "|---|---|", "| x\\|y | two lines |", "| 1 | 2.5 |"]
    header = markdown_table([{"max |·|": 1}]).splitlines()[0]
    assert header == "| max \\|·\\| |"  # a pipe in a header would split it into cells (and unmake the table)


def test_claim_rows_have_the_four_columns():
    rows = claims_markdown_rows([Claim("c", "26.5 pp", "8.6 pp (book)", "qualitatively")])
    assert list(rows[0]) == ["claim", "paper's number", "ours (scale, dataset, model)", "agrees?"]


def render(a, b=0):
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title(f"{a}-{b}")
    return fig


def test_frames_explorer_embeds_every_frame_and_links_sliders():
    one = frames_explorer(render, {"a": [1, 2, 3]})
    slider, stack = one.children
    assert isinstance(slider, W.SelectionSlider) and len(stack.children) == 3
    assert all(isinstance(c, W.Image) and c.value[:4] == b"\x89PNG" for c in stack.children)
    two = frames_explorer(render, {"a": [1, 2], "b": [10, 20, 30]})
    s1, s2, outer = two.children
    assert len(outer.children) == 3 and all(len(inner.children) == 2 for inner in outer.children)
    links = [w for w in _instances.values() if isinstance(w, Link)]
    linked = {(id(link.source[0]), id(link.target[0])) for link in links}
    assert (id(s2), id(outer)) in linked and all((id(s1), id(inner)) in linked for inner in outer.children)
    with pytest.raises(ValueError, match="one or two sliders"):
        frames_explorer(render, {"a": [1], "b": [1], "c": [1]})


def test_frames_explorer_opens_on_the_requested_frame():
    s1, s2, outer = frames_explorer(render, {"a": [1, 2], "b": [10, 20, 30]}, start={"b": 20}).children
    assert (s1.index, s2.index, outer.selected_index) == (0, 1, 1)
    assert all(inner.selected_index == 0 for inner in outer.children)
    s1, s2, outer = frames_explorer(render, {"a": [1, 2], "b": [10, 20, 30]}, start={"a": 2, "b": 30}).children
    assert (s1.index, s2.index, outer.selected_index) == (1, 2, 2)
    assert all(inner.selected_index == 1 for inner in outer.children)
    with pytest.raises(ValueError, match=r"slider 'b' cannot open on 25; its values are \[10, 20, 30\]"):
        frames_explorer(render, {"a": [1, 2], "b": [10, 20, 30]}, start={"b": 25})


def test_below_prints_a_bound_under_the_floor_and_digits_above():
    from fibook.notebook import below

    assert below(0.99e-9, 1e-9) == "< 1e-9"
    assert below(1.01e-9, 1e-9) == "1.0e-09"
    assert below(0.0, 1e-12) == "< 1e-12" and below(-5e-13, 1e-12) == "< 1e-12"
    assert below(3.2e-4, 1e-9) == "3.2e-04"
    with pytest.raises(ValueError, match="power of ten"):
        below(1e-10, 2e-9)
    with pytest.raises(ValueError, match="power of ten"):
        below(1e-10, 0.0)
