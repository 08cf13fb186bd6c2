"""Figures shared by the Part I chapters; each draws on a given matplotlib axis from :mod:`fibook.forgetting.analysis`
arms, so a chapter composes them and nothing is plotted twice in two ways."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fibook.forgetting.analysis import Arm, norm_ratio_curves
from fibook.results import Record


def accuracy_vs_sigma(arm_list: list[Arm], ax, percent: bool = True) -> None:
    """Seed-mean selected test accuracy against sigma_w (log axis), seed min/max as bars; hollow markers where
    some seed did not interpolate, crosses where some seed diverged."""
    scale = 100 if percent else 1
    for a in arm_list:
        s = np.asarray(a.sigmas)
        acc = scale * np.asarray(a.acc)
        err = scale * np.vstack([np.asarray(a.acc) - a.acc_min, np.asarray(a.acc_max) - a.acc])
        (line,) = ax.plot(s, acc, "-", label=f"{a.label}: spread {a.spread_pp:.1f} pp")
        ax.errorbar(s, acc, yerr=err, fmt="none", ecolor=line.get_color(), alpha=0.5)
        for si, ai, interp, div in zip(s, acc, a.interpolated, a.diverged, strict=True):
            marker = "x" if div else "o"
            face = line.get_color() if interp and not div else "white"
            ax.plot([si], [ai], marker, color=line.get_color(), markerfacecolor=face)
    ax.set_xscale("log")
    ax.set_xlabel("initialization scale σ_w")
    ax.set_ylabel("test accuracy at the selected epoch (%)" if percent else "test accuracy")
    ax.legend(fontsize=8)


def norm_trajectories(arm: Arm, ax) -> None:
    """||W(t)|| / ||W(0)|| per sigma_w over epochs."""
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(arm.sigmas)))
    for (sigma, curve), color in zip(norm_ratio_curves(arm).items(), colors, strict=True):
        ax.plot(np.arange(len(curve)), curve, color=color, label=f"σ_w = {sigma:g}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("‖W(t)‖ / ‖W(0)‖")
    ax.set_title(arm.label, fontsize=9)
    ax.legend(fontsize=7)


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
    ax.legend(fontsize=7, loc="lower right")
