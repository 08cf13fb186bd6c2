"""What every chapter notebook shares: a reproducible setup, the claim table, and explorers.

* :func:`setup` pins threads and seeds (stored outputs must reproduce bit for bit) and returns the preset.
* :func:`show_table` prints rows as a table; :func:`claims_table` prints the table every chapter ends with:
  claim, the paper's number, ours, and whether they agree, and records its rows (:mod:`fibook.claims`).
* :func:`below` prints a quantity that should vanish as a bound at a stated floor, so that no digit of
  rounding noise reaches a stored output.
* :func:`frames_explorer` is a slider over precomputed figures that works in the static HTML page without a
  kernel (the slider switches between embedded images in the browser); :func:`live_explorer` recomputes the
  figure in a running kernel for any value, and :func:`slider_shows` is the value a slider reads in the page.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from fibook import style
from fibook.claims import Claim, markdown_table, table_rows, write_chapter
from fibook.presets import Preset, get_preset, preset_from_environment


def setup(preset: str | Preset | None = None, seed: int = 0) -> Preset:
    """Pin one thread per process, seed ``random``, numpy and torch, set the book's figure style
    (:mod:`fibook.style`, figures shown through :func:`fibook.style.figure_png`); return the size preset a chapter
    runs at: ``preset``, or when None the environment's (:func:`fibook.presets.preset_from_environment`), read here
    once for the whole chapter.
    """
    torch.set_num_threads(1)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    style.apply()
    style.install()
    return preset_from_environment() if preset is None else get_preset(preset)


def below(value: float, floor: float) -> str:
    """A quantity that should vanish, printed against a stated floor: ``"< 1e-9"`` below it, else 2 digits.

    Errors at rounding level (an ODE solver's tolerance, float64 cancellation) have no digits that survive a
    change of CPU kernels; printed as a bound at a floor far above that level they read the same everywhere,
    and one that lands above the floor shows its value. ``floor`` must be a power of ten.
    """
    exponent = round(float(np.log10(floor))) if floor > 0 else None
    if exponent is None or not np.isclose(floor, 10.0**exponent, rtol=1e-12, atol=0):
        raise ValueError(f"floor must be a power of ten such as 1e-9, got {floor!r}")
    if not np.isfinite(value):
        return str(value)
    return f"< 1e{exponent}" if abs(value) < floor else f"{value:.1e}"


def show_table(rows: Sequence[Mapping[str, object]]):
    """Display rows as a Markdown table (it renders in the book and in Jupyter)."""
    from IPython.display import Markdown, display

    display(Markdown(markdown_table(rows)))


def claims_table(claims: Sequence[Claim], *, chapter: str, preset: str):
    """Display the "claim | paper's number | ours | agrees?" table and write its rows as records to the verdict
    file of ``preset`` under ``chapter`` (:func:`fibook.claims.write_chapter`)."""
    write_chapter(chapter, get_preset(preset).name, claims)
    show_table(table_rows(claims))


def frames_explorer(render: Callable[..., object], axes: Mapping[str, Sequence], *, formats=None, start=None):
    """A slider explorer over precomputed figures that needs no kernel.

    ``render(**values)`` returns a matplotlib figure for one combination of slider values; ``axes`` maps each
    slider's name to its values (one or two sliders). Every combination is rendered now and embedded; in the
    browser the sliders only switch which image shows (``jslink``), so the explorer works in the static page.
    ``formats`` maps a slider name to a format string for its value labels; ``start`` maps a slider name to the
    value it opens on (default: its first value).
    """
    import ipywidgets as W

    names = list(axes)
    if not 1 <= len(names) <= 2:
        raise ValueError(f"frames_explorer takes one or two sliders, got {len(names)}: {names}")
    formats, start = dict(formats or {}), dict(start or {})
    opening = {}
    for name in names:
        values = list(axes[name])
        if name in start and start[name] not in values:
            raise ValueError(f"slider {name!r} cannot open on {start[name]!r}; its values are {values}")
        opening[name] = values.index(start[name]) if name in start else 0

    def slider(name):
        fmt = formats.get(name, "{:g}")
        options = [(fmt.format(v), i) for i, v in enumerate(axes[name])]
        return W.SelectionSlider(options=options, value=opening[name], description=name, continuous_update=True,
                                 style={"description_width": "initial"}, layout=W.Layout(width="420px"))

    def image(**values):
        return W.Image(value=style.figure_png(render(**values)), format="png",
                       layout=W.Layout(max_width=f"{style.ARTICLE_PX}px"))

    first = slider(names[0])
    if len(names) == 1:
        stack = W.Stack([image(**{names[0]: v}) for v in axes[names[0]]], selected_index=opening[names[0]])
        W.jslink((first, "index"), (stack, "selected_index"))
        return W.VBox([first, stack])
    second = slider(names[1])
    inner = []
    for v2 in axes[names[1]]:
        s = W.Stack([image(**{names[0]: v1, names[1]: v2}) for v1 in axes[names[0]]],
                    selected_index=opening[names[0]])
        W.jslink((first, "index"), (s, "selected_index"))
        inner.append(s)
    outer = W.Stack(inner, selected_index=opening[names[1]])
    W.jslink((second, "index"), (outer, "selected_index"))
    return W.VBox([first, second, outer])


LIVE_CLASS = "fibook-live"


def slider_shows(slider) -> float | None:
    """The value a slider's view shows in the browser for the value its model holds, or None for a control
    without a step (a dropdown).

    The browser puts the handle on the slider's grid, ``min + k * step`` (in ``log_base`` of the value for a
    FloatLogSlider), nearest the value and within ``[min, max]``; the kernel keeps the value as given. So a slider
    whose value lies off its grid reads another number than the one its figure was drawn at (an IntSlider at 1000
    with ``min=32, step=32`` reads 992). ``slider`` is an ipywidgets slider or the state dict of one stored in a
    notebook (keys ``_model_name``, ``value``, ``min``, ``max``, ``step`` and, for a log slider, ``base``).
    """
    state = slider if isinstance(slider, Mapping) else {
        "_model_name": slider._model_name, **{k: getattr(slider, k, None) for k in ("value", "min", "max", "step")},
        "base": getattr(slider, "base", None)}
    kind = state.get("_model_name")
    if kind not in ("IntSliderModel", "FloatSliderModel", "FloatLogSliderModel") or not state.get("step"):
        return None
    lo, hi, step = state["min"], state["max"], state["step"]
    log = kind == "FloatLogSliderModel"
    x = float(np.log(state["value"]) / np.log(state["base"])) if log else state["value"]
    x = min(max(lo + round((x - lo) / step) * step, lo), hi)
    if log:
        return float(state["base"] ** x)
    return int(x) if kind == "IntSliderModel" else float(x)


def live_explorer(render: Callable[..., object], **sliders):
    """An ipywidgets ``interact`` explorer that recomputes ``render(**values)`` for any slider position.

    Needs a running kernel. Its box carries the class :data:`LIVE_CLASS`: in the static page
    (``_static/live_widgets.js``, ``_static/fibook.css``) its controls are disabled under a note, so no control
    shows a value the stored figure beside it does not. ``sliders`` are passed to ``ipywidgets.interactive``
    (e.g. ``alpha=FloatLogSlider(...)``); a slider whose value lies off its grid is refused (ValueError), since
    the page would show another value than the one the figure is drawn at (:func:`slider_shows`).
    """
    import ipywidgets as W
    import matplotlib.pyplot as plt

    def show(**values):
        render(**values)
        plt.show()

    for name, control in sliders.items():
        shown = slider_shows(control) if isinstance(control, W.Widget) else None
        if shown is not None and not np.isclose(shown, control.value, rtol=1e-9, atol=1e-9 * control.step):
            raise ValueError(f"slider {name!r} opens on {control.value!r}, off its grid (min {control.min!r}, "
                                 f"step {control.step!r}): the page would show {shown!r} beside a figure drawn at "
                                 f"{control.value!r}")
    box = W.interactive(show, **sliders)
    box.add_class(LIVE_CLASS)
    for control in box.children[:-1]:  # every control but the output: its whole name shown
        control.style.description_width = "initial"
    return box
