"""Figures shared by the Part I chapters; each draws on a given matplotlib axis from :mod:`fibook.forgetting.arms`
arms, so a chapter composes them and nothing is plotted twice in two ways.

Figures are drawn for the book's column (:mod:`fibook.style`, constrained layout on). A legend never sits on the
data: ``legend="below"`` puts it under the figure (a figure legend with the axis' entries, for a figure of one
axis), ``"right"`` beside the axis, ``None`` leaves it to the chapter (:func:`figure_legend` gathers the entries of
every axis of a stacked figure into one legend below it)."""

from __future__ import annotations

from collections import Counter

import matplotlib.pyplot as plt
import numpy as np

from fibook.forgetting.arms import Arm, direction_kept, norm_ratio_curves
from fibook.forgetting.collapse import ClockPoint, mechanism
from fibook.forgetting.metrics import decreasing_fit, late_window_start
from fibook.forgetting.noise import NoiseFloor, spread_estimate
from fibook.forgetting.paper import (
    HEADLINE_SPREAD,
    HEADLINE_T_SGD,
    L2_SPREAD,
    LONG_SPREAD,
    LONG_T_SGD,
    reconstructed_clock,
)
from fibook.forgetting.records import Record

MECHANISM_MARKERS = {"SGD": "o", "momentum SGD": "p", "SGD + L2": "s", "Adam": "^", "AdamW": "v", "Muon": "D"}
MECHANISM_COLORS = dict(zip(MECHANISM_MARKERS, plt.cm.tab10(np.arange(len(MECHANISM_MARKERS))), strict=True))
# The paper's quoted spreads on each clock (CIFAR-10, secondary summaries), drawn for their place on the axis
PAPER_ANCHORS = {"T_SGD": ((HEADLINE_T_SGD.value, HEADLINE_SPREAD.value), (LONG_T_SGD.value, LONG_SPREAD.value)),
                 "T_L2": ((reconstructed_clock("sgd+L2")[1], L2_SPREAD.value),), "T_adapt": ()}
# The k-th line of a figure with several: a marker and a line style of its own, so that two lines that coincide
# are both seen
ARM_MARKERS = ("o", "s", "^", "v", "D", "p", "h", "<")
ARM_LINESTYLES = ("-", "--", "-.", ":")
NEUTRAL = "0.35"  # the colour of legend entries that explain a marker rather than name a line
HOLLOW = "hollow: a selected checkpoint < 99.5 % train"  # the legend entry of a hollow marker


def arm_style(k: int, arms: list[Arm] | None = None) -> dict:
    """Marker and line style of the ``k``-th line of a figure (:data:`ARM_MARKERS`, :data:`ARM_LINESTYLES`), and,
    when the figure's ``arms`` span several methods, the colour of the ``k``-th arm's method
    (:data:`MECHANISM_COLORS`: one colour per method across the book); arms of one method take the colour cycle."""
    style = {"marker": ARM_MARKERS[k % len(ARM_MARKERS)], "ls": ARM_LINESTYLES[k % len(ARM_LINESTYLES)]}
    if arms is not None and len({mechanism(a.config) for a in arms}) > 1:
        style["color"] = MECHANISM_COLORS[mechanism(arms[k].config)]
    return style


def dodge_factor(k: int, n: int, dodge: float = 0.015) -> float:
    """The factor that shifts the ``k``-th of ``n`` lines along a log axis by ``dodge`` decades from its
    neighbours, centred on the true values (1 for a single line), so that points that coincide stay visible."""
    return 10 ** (dodge * (k - (n - 1) / 2)) if n > 1 else 1.0


def place_legend(ax, where: str | None = "below", ncol: int = 1) -> None:
    """The legend of ``ax`` off its data: ``"below"`` the figure (a figure legend of this axis' entries),
    ``"right"`` beside the axis, ``"inside"`` matplotlib's best place, ``None`` none."""
    if where is None:
        return
    if where == "below":
        ax.figure.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=ncol)
    elif where == "right":
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, ncol=ncol)
    elif where == "inside":
        ax.legend(ncol=ncol)
    else:
        raise ValueError(f"legend must be 'below', 'right', 'inside' or None, got {where!r}")


def figure_legend(fig, ncol: int = 3) -> None:
    """One legend below ``fig`` with the entries of all its axes, each label once (in order of appearance)."""
    entries: dict[str, object] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    fig.legend(list(entries.values()), list(entries), loc="outside lower center", ncol=ncol)


def seeds_per_sigma(arm: Arm) -> int:
    """The fewest seeds any sigma_w of ``arm`` has."""
    return min(Counter(r.config.sigma_w for r in arm.records).values())


def accuracy_vs_sigma(arm_list: list[Arm], ax, percent: bool = True, legend: str | None = "below",
                      dodge: float = 0.015, ncol: int = 1) -> None:
    """Seed-mean selected test accuracy against sigma_w (log axis), one marker and line style per arm
    (:func:`arm_style`; with several arms each is shifted by ``dodge`` decades along sigma_w, :func:`dodge_factor`,
    so that coinciding points stay visible); where an arm has several seeds at every sigma_w, their min/max as
    capped bars (an arm of one seed has none); hollow markers where some seed's selected checkpoint does not
    interpolate, crosses where some seed diverged. The legend (:func:`place_legend`) names the arms and explains
    the markers and bars."""
    scale = 100 if percent else 1
    n = len(arm_list)
    bars = False
    hollow = crosses = False
    for k, a in enumerate(arm_list):
        s = np.asarray(a.sigmas) * dodge_factor(k, n, dodge)
        acc = scale * np.asarray(a.acc)
        style = arm_style(k, arm_list)
        (line,) = ax.plot(s, acc, ls=style["ls"], color=style.pop("color", None))
        color = line.get_color()
        ax.plot([], [], color=color, **style, label=f"{a.label}: spread {a.spread_pp:.1f} pp")
        if seeds_per_sigma(a) > 1:
            bars = True
            err = scale * np.vstack([np.asarray(a.acc) - a.acc_min, np.asarray(a.acc_max) - a.acc])
            ax.errorbar(s, acc, yerr=err, fmt="none", ecolor=color, elinewidth=1.2, capsize=4, capthick=1.2,
                        zorder=3)
        for si, ai, interp, div in zip(s, acc, a.selected_interpolated, a.diverged, strict=True):
            hollow |= not interp and not div
            crosses |= div
            face = color if interp and not div else "white"
            ax.plot([si], [ai], "x" if div else style["marker"], color=color, markerfacecolor=face, zorder=4)
    if hollow:
        ax.plot([], [], "o", color=NEUTRAL, markerfacecolor="white", label=HOLLOW)
    if crosses:
        ax.plot([], [], "x", color=NEUTRAL, label="×: some seed diverged")
    if bars:
        ax.plot([], [], "|", color=NEUTRAL, markersize=12, markeredgewidth=1.2, label="bars: min–max over seeds")
    ax.set_xscale("log")
    ax.set_xlabel("initialization scale σ_w")
    ax.set_ylabel("test accuracy at the selected epoch (%)" if percent else "test accuracy")
    place_legend(ax, legend, ncol)


def direction_vs_sigma(arm_list: list[Arm], ax, legend: str | None = "below", ncol: int = 1) -> None:
    """cos(W_t, W_0) at the selected checkpoints against sigma_w (log axis), from
    :func:`fibook.forgetting.arms.direction_kept`: the marker and colour of the arm's mechanism, as in
    :func:`spread_vs_direction`, and a line style of its own among the arms of that mechanism; the legend gives how
    many seeds record it."""
    per_mechanism: Counter = Counter()
    for a in arm_list:
        name = mechanism(a.config)
        kept = direction_kept(a)
        seeds = sorted({n for _, n in kept.values()})
        ax.plot(list(kept), [c for c, _ in kept.values()], marker=MECHANISM_MARKERS[name],
                color=MECHANISM_COLORS[name], ls=ARM_LINESTYLES[per_mechanism[name] % len(ARM_LINESTYLES)],
                label=f"{a.label} ({'–'.join(map(str, seeds))} seed{'s' * (seeds != [1])})")
        per_mechanism[name] += 1
    ax.set_xscale("log")
    ax.set_xlabel("initialization scale σ_w")
    ax.set_ylabel("cos(W, W₀) at the selected epoch")
    ax.set_ylim(0, 1.02)
    place_legend(ax, legend, ncol)


def sigma_colors(sigmas) -> dict[float, np.ndarray]:
    """One viridis colour per sigma_w, ascending (shared by the per-sigma_w line plots)."""
    return dict(zip(sigmas, plt.cm.viridis(np.linspace(0, 0.9, len(sigmas))), strict=True))


def mechanism_points(ax, points: list[ClockPoint], x: list[float], filled: list[bool], hollow: str, xerr=None
                     ) -> None:
    """Each point's spread (of seed-means, +- its standard error) at ``x``, one marker and colour per mechanism,
    hollow where ``filled`` is False; legend entries per mechanism (in order of appearance) and for ``hollow``."""
    for i, p in enumerate(points):
        c = MECHANISM_COLORS[p.mechanism]
        ax.errorbar([x[i]], [p.spread.value], yerr=[p.spread.se], xerr=None if xerr is None else xerr[i],
                    fmt=MECHANISM_MARKERS[p.mechanism], color=c, markerfacecolor=c if filled[i] else "white",
                    markersize=7, capsize=2)
    for name in dict.fromkeys(p.mechanism for p in points):
        ax.plot([], [], MECHANISM_MARKERS[name], color=MECHANISM_COLORS[name], label=name)
    if not all(filled):
        ax.plot([], [], "o", color=NEUTRAL, markerfacecolor="white", label=hollow)


def spread_vs_direction(points: list[ClockPoint], ax, legend: str | None = "below") -> None:
    """Spread (+- its standard error) against cos(W_t, W_0) at the largest sigma_w of the grid
    (:func:`fibook.forgetting.arms.direction_kept`), one marker per mechanism as in :func:`collapse_panel`,
    hollow where the selected predictor does not interpolate; points without that cosine are skipped."""
    shown = [p for p in points if max(p.arm.sigmas) in direction_kept(p.arm)]
    mechanism_points(ax, shown, [direction_kept(p.arm)[max(p.arm.sigmas)][0] for p in shown],
                     [p.arm.interpolates_at_selection for p in shown], "does not interpolate")
    ax.set_xlabel("cos(W, W₀) at the selected epoch, largest σ_w")
    ax.set_ylabel("spread over σ_w (pp)")
    ax.set_ylim(bottom=0)
    place_legend(ax, legend, ncol=3)


def norm_trajectories(arm: Arm, ax, legend: str | None = "right") -> None:
    """||W(t)|| / ||W(0)|| per sigma_w over epochs (one viridis colour per sigma_w, ascending)."""
    colors = sigma_colors(arm.sigmas)
    for sigma, curve in norm_ratio_curves(arm).items():
        ax.plot(np.arange(len(curve)), curve, color=colors[sigma], label=f"σ_w = {sigma:g}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("‖W(t)‖ / ‖W(0)‖")
    ax.set_title(arm.label)
    place_legend(ax, legend)


def curves_by_sigma(arm: Arm, ax, legend: str | None = "below") -> None:
    """Test accuracy over epochs of each run of ``arm`` (one viridis colour per sigma_w, as
    :func:`norm_trajectories`), each run's selected checkpoint as a dot; shaded: the epochs a run is read in
    under rule ``late`` (its second half, :func:`fibook.forgetting.metrics.late_window_start`)."""
    colors = sigma_colors(arm.sigmas)
    seen = set()
    for r, c in zip(arm.records, arm.checkpoints, strict=True):
        sigma = r.config.sigma_w
        ax.plot(r.history["epoch"], 100 * np.asarray(r.history["test_acc"]), color=colors[sigma], lw=1.2,
                label=None if sigma in seen else f"σ_w = {sigma:g}")
        seen.add(sigma)
        if c is not None:
            ax.plot([c.epoch], [100 * c.test_acc], "o", color=colors[sigma], markeredgecolor="k", zorder=3)
    if arm.selection == "late":
        ax.axvspan(late_window_start(arm.config.epochs) - 0.5, arm.config.epochs + 0.5, color="0.9", zorder=0,
                   label="epochs read (second half)")
    ax.plot([], [], "o", color=NEUTRAL, markeredgecolor="k", label="selected checkpoint")
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy (%)")
    place_legend(ax, legend, ncol=3)


def learning_curves(record: Record, ax, legend: str | None = "below") -> None:
    """Train / validation / test accuracy of one run over epochs, with the selected epoch and tau_interp marked."""
    h, s = record.history, record.summary
    # validation dashed and drawn over test: the two curves often coincide, and both stay visible
    for key, label, ls, z in (("train_acc", "train (eval mode)", "-", 2), ("val_acc", "validation", "--", 3),
                              ("test_acc", "test", "-", 2)):
        ax.plot(h["epoch"], 100 * np.asarray(h[key]), ls=ls, zorder=z, label=label)
    if s.selected_epoch is not None:
        ax.axvline(s.selected_epoch, color="k", ls=":", lw=1, label=f"selected epoch {s.selected_epoch}")
    if s.tau_interp is not None:
        ax.axvline(s.tau_interp, color="r", ls="--", lw=1, label=f"τ_interp = {s.tau_interp}")
    ax.axhline(99.5, color="gray", lw=0.5)
    ax.set_xlabel("epoch")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 101)
    place_legend(ax, legend, ncol=3)


def collapse_panel(points: list[ClockPoint], clock: str, ax, floor_pp: float | None = None,
                   anchors: bool = True, legend: str | None = "below") -> None:
    """Spread (+- its standard error) against ``clock`` read at the selected checkpoints, one marker per mechanism
    (:data:`MECHANISM_MARKERS`; horizontal bars: the clock's range over the arm's runs), hollow where the arm is
    left out of the trend (:attr:`~fibook.forgetting.collapse.ClockPoint.left_out`); the least-squares
    non-increasing fit of the included arms' spreads on log clock (:func:`fibook.forgetting.metrics.decreasing_fit`),
    the noise floor as a band and the paper's anchors (:data:`PAPER_ANCHORS`) as stars."""
    pts = [p for p in points if p.clock == clock]
    mechanism_points(ax, pts, [p.value for p in pts], [p.included for p in pts], "left out of the trend",
                     [[[p.value - p.low], [p.high - p.value]] for p in pts])
    included = sorted((p for p in pts if p.included), key=lambda p: p.value)
    if len(included) >= 2:
        x = np.array([p.value for p in included])
        ax.plot(x, decreasing_fit(np.log(x), [p.spread.value for p in included]), "-", color="0.3", lw=1.5,
                drawstyle="steps-post", label="non-increasing fit")
    if floor_pp is not None:
        ax.axhspan(0, floor_pp, color="0.85", label=f"noise floor ({floor_pp:.1f} pp)")
    for x, y in PAPER_ANCHORS[clock] if anchors else ():
        ax.plot([x], [y], "*", color="k", markersize=12, label="paper (CIFAR-10)" if (x, y) ==
                PAPER_ANCHORS[clock][0] else None)
    ax.set_xscale("log")
    ax.set_xlabel(f"{clock} at the selected checkpoints")
    ax.set_ylabel("spread over σ_w (pp)")
    ax.set_ylim(bottom=0)
    place_legend(ax, legend, ncol=3)


def l2_rows_panel(rows: dict[str, list[Arm]], noise: NoiseFloor | None, ax, legend: str | None = "below") -> None:
    """Each row of one learning rate and length (``l2_clock``'s, lambda rising, the lambda = 0 control first): the
    spread of seed-means (+- its standard error) against T_L2 = lambda sum eta at the selected checkpoints (0 for the
    control), one line per row; hollow, above its error bar, where a selected predictor does not fit the training
    set at some sigma_w."""
    for k, (name, row) in enumerate(rows.items()):
        est = [spread_estimate(a, noise) for a in row]
        x = [a.clock()[1] if a.config.weight_decay else 0.0 for a in row]
        (line, *_) = ax.errorbar(x, [e.value for e in est], yerr=[e.se for e in est], **arm_style(k), capsize=3,
                                 label=name)
        for xi, e, a in zip(x, est, row, strict=True):
            if not a.interpolates_at_selection:  # above the error bar's own marker (zorder 2.1)
                ax.plot([xi], [e.value], arm_style(k)["marker"], color=line.get_color(), markerfacecolor="white",
                        zorder=3)
    if not all(a.interpolates_at_selection for row in rows.values() for a in row):
        ax.plot([], [], "o", color=NEUTRAL, markerfacecolor="white", label=HOLLOW)
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlabel("T_L2 = λ Σ η at the selected checkpoints (0: the λ = 0 control)")
    ax.set_ylabel("spread over σ_w (pp)")
    ax.set_ylim(bottom=0)
    place_legend(ax, legend, ncol=3)


def ladder_panel(rungs: list[Arm], noise: NoiseFloor | None, ax, margin_pp: float, others: list[Arm] = (),
                 legend: str | None = "below") -> None:
    """The fixed-clock ladder: each rung's spread of seed-means (+- its standard error) against its learning
    rate, the equivalence band +-``margin_pp`` around the largest rate's spread (a flat ladder lies inside it),
    ``others`` (arms of the same rate and length trained elsewhere, e.g. at another precision) hollow, and a cross
    on every arm whose selected predictor does not fit the training set at some sigma_w (the condition fails)."""
    style = {"color": MECHANISM_COLORS["Adam"], "capsize": 3}
    precisions = ", ".join(sorted({a.config.precision for a in others}))
    for arm_list, filled, label in ((rungs, True, f"ladder ({', '.join(sorted({a.config.precision for a in rungs}))})"),
                                    (others, False, f"same (η, epochs) in {precisions}, another experiment")):
        arm_list = sorted(arm_list, key=lambda a: a.config.lr)
        if not arm_list:
            continue
        est = [spread_estimate(a, noise) for a in arm_list]
        ax.errorbar([a.config.lr for a in arm_list], [e.value for e in est], yerr=[e.se for e in est],
                    fmt="^-" if filled else "^", markerfacecolor=None if filled else "white", label=label, **style)
    unfit = [a for a in (*rungs, *others) if not a.interpolates_at_selection]
    if unfit:
        ax.plot([a.config.lr for a in unfit], [spread_estimate(a, noise).value for a in unfit], "x", color="black",
                markersize=10, linestyle="none", zorder=3, label="a selected predictor < 99.5 % train (not judged)")
    if rungs:
        top = spread_estimate(max(rungs, key=lambda a: a.config.lr), noise).value
        ax.axhspan(max(top - margin_pp, 0), top + margin_pp, color="0.9",
                   label=f"±{margin_pp:g} pp of the largest rate's spread")
    ax.set_xscale("log")
    ax.set_xlabel("Adam learning rate η (epochs × η fixed)")
    ax.set_ylabel("spread over σ_w (pp)")
    ax.set_ylim(bottom=0)
    place_legend(ax, legend, ncol=2)
