"""Figures shared by the Part I chapters; each draws on a given matplotlib axis from :mod:`fibook.forgetting.analysis`
arms, so a chapter composes them and nothing is plotted twice in two ways."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fibook.forgetting.analysis import Arm, ClockPoint, norm_ratio_curves
from fibook.forgetting.metrics import decreasing_fit
from fibook.results import Record

MECHANISM_MARKERS = {"SGD": "o", "momentum SGD": "p", "SGD + L2": "s", "Adam": "^", "AdamW": "v", "Muon": "D"}
# The paper's quoted spreads on each clock (CIFAR-10, secondary summaries), drawn for their place on the axis
PAPER_ANCHORS = {"T_SGD": ((7.3e-4, 26.5), (1.2e-2, 26.0)), "T_L2": ((9.36, 0.3),), "T_adapt": ()}


def accuracy_vs_sigma(arm_list: list[Arm], ax, percent: bool = True) -> None:
    """Seed-mean selected test accuracy against sigma_w (log axis), seed min/max as bars; hollow markers where
    some seed's selected checkpoint does not interpolate, crosses where some seed diverged."""
    scale = 100 if percent else 1
    for a in arm_list:
        s = np.asarray(a.sigmas)
        acc = scale * np.asarray(a.acc)
        err = scale * np.vstack([np.asarray(a.acc) - a.acc_min, np.asarray(a.acc_max) - a.acc])
        (line,) = ax.plot(s, acc, "-", label=f"{a.label}: spread {a.spread_pp:.1f} pp")
        ax.errorbar(s, acc, yerr=err, fmt="none", ecolor=line.get_color(), alpha=0.5)
        for si, ai, interp, div in zip(s, acc, a.selected_interpolated, a.diverged, strict=True):
            marker = "x" if div else "o"
            face = line.get_color() if interp and not div else "white"
            ax.plot([si], [ai], marker, color=line.get_color(), markerfacecolor=face)
    ax.set_xscale("log")
    ax.set_xlabel("initialization scale σ_w")
    ax.set_ylabel("test accuracy at the selected epoch (%)" if percent else "test accuracy")
    ax.legend()


def norm_trajectories(arm: Arm, ax) -> None:
    """||W(t)|| / ||W(0)|| per sigma_w over epochs."""
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(arm.sigmas)))
    for (sigma, curve), color in zip(norm_ratio_curves(arm).items(), colors, strict=True):
        ax.plot(np.arange(len(curve)), curve, color=color, label=f"σ_w = {sigma:g}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("‖W(t)‖ / ‖W(0)‖")
    ax.set_title(arm.label)
    ax.legend()


def learning_curves(record: Record, ax) -> None:
    """Train / validation / test accuracy of one run over epochs, with the selected epoch and tau_interp marked."""
    h, s = record.history, record.summary
    for key, label in (("train_acc", "train (eval mode)"), ("val_acc", "validation"), ("test_acc", "test")):
        ax.plot(h["epoch"], 100 * np.asarray(h[key]), label=label)
    if s.selected_epoch is not None:
        ax.axvline(s.selected_epoch, color="k", ls=":", lw=1, label=f"selected epoch {s.selected_epoch}")
    if s.tau_interp is not None:
        ax.axvline(s.tau_interp, color="r", ls="--", lw=1, label=f"τ_interp = {s.tau_interp}")
    ax.axhline(99.5, color="gray", lw=0.5)
    ax.set_xlabel("epoch")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 101)
    ax.legend(loc="lower right")


def collapse_panel(points: list[ClockPoint], clock: str, ax, floor_pp: float | None = None,
                   anchors: bool = True) -> None:
    """Spread (mean +- std) against ``clock`` read at the selected checkpoints, one marker per mechanism
    (:data:`MECHANISM_MARKERS`; horizontal bars: the clock's range over the arm's runs), hollow where the
    selected predictor does not interpolate (left out of the trend); the least-squares non-increasing fit of the
    included arms' spreads on log clock (:func:`fibook.forgetting.metrics.decreasing_fit`), the noise floor as a
    band and the paper's anchors (:data:`PAPER_ANCHORS`) as stars."""
    pts = [p for p in points if p.clock == clock]
    colors = dict(zip(MECHANISM_MARKERS, plt.cm.tab10(np.arange(len(MECHANISM_MARKERS))), strict=True))
    for p in pts:
        c = colors[p.mechanism]
        ax.errorbar([p.value], [p.spread.mean], yerr=[p.spread.std], xerr=[[p.value - p.low], [p.high - p.value]],
                    fmt=MECHANISM_MARKERS[p.mechanism], color=c, markerfacecolor=c if p.included else "white",
                    markersize=7, capsize=2)
    for name in dict.fromkeys(p.mechanism for p in pts):  # legend entries, filled, in order of appearance
        ax.plot([], [], MECHANISM_MARKERS[name], color=colors[name], label=name)
    if any(not p.included for p in pts):
        ax.plot([], [], "o", color="0.4", markerfacecolor="white", label="left out (does not interpolate)")
    included = sorted((p for p in pts if p.included), key=lambda p: p.value)
    if len(included) >= 2:
        x = np.array([p.value for p in included])
        ax.plot(x, decreasing_fit(np.log(x), [p.spread.mean for p in included]), "-", color="0.3", lw=1.5,
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
    ax.legend(loc="upper right")
