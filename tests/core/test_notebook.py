"""Chapter helpers: tables and the kernel-free explorer."""

from pathlib import Path

import ipywidgets as W
import matplotlib
from ipywidgets.widgets.widget import _instances
from ipywidgets.widgets.widget_link import Link

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from fibook.notebook import frames_explorer, live_explorer  # noqa: E402


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


def test_a_slider_shows_the_value_on_its_grid_nearest_its_own():
    from fibook.notebook import slider_shows

    assert slider_shows(W.IntSlider(value=1000, min=32, max=8192, step=32)) == 992  # what the page reads
    assert slider_shows(W.IntSlider(value=1000, min=32, max=8192, step=8)) == 1000
    assert slider_shows(W.FloatSlider(value=1.0, min=0.05, max=3.0, step=0.05)) == pytest.approx(1.0)
    assert slider_shows(W.FloatLogSlider(value=1e-3, base=10, min=-6, max=0, step=0.1)) == pytest.approx(1e-3)
    assert slider_shows(W.FloatLogSlider(value=2e-3, base=10, min=-6, max=0, step=0.5)) == pytest.approx(10**-2.5)
    assert slider_shows({"_model_name": "IntSliderModel", "value": 1000, "min": 32, "max": 512, "step": 32}) == 512
    assert slider_shows(W.Dropdown(options=[1, 2])) is None


def test_live_explorer_refuses_a_slider_that_would_read_another_value_than_its_figure():
    with pytest.raises(ValueError, match="slider 'h' opens on 1000, off its grid .* would show 992"):
        live_explorer(render, a=W.IntSlider(value=1, min=0, max=4), h=W.IntSlider(value=1000, min=32, max=8192,
                                                                                   step=32))
    box = live_explorer(lambda a, b: render(a, b), a=W.IntSlider(value=1000, min=32, max=8192, step=8),
                        b=W.FloatSlider(value=0.0, min=0.0, max=0.99, step=0.01))
    assert box.children[0].value == 1000
    plt.close("all")


def stored_sliders(path):
    """(description, state) of every slider stored in a notebook's widget state."""
    import json

    nb = json.loads(path.read_text())
    state = nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    return [(m["state"].get("description"), m["state"]) for m in state.get("state", {}).values()
            if m["model_name"] in ("IntSliderModel", "FloatSliderModel", "FloatLogSliderModel")]


CHAPTERS = sorted((Path(__file__).resolve().parents[2] / "chapters").rglob("*.ipynb"))


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_stored_live_slider_reads_the_value_its_figure_is_drawn_at(path):
    """A live explorer's stored figure is drawn at its sliders' values; the page must show those values (in
    two_steps an h slider at 1000 with step 32 read 992 beside the figure at h = 1000)."""
    from fibook.notebook import slider_shows

    for name, state in stored_sliders(path):
        assert slider_shows(state) == pytest.approx(state["value"], rel=1e-9, abs=1e-12), (name, state)
