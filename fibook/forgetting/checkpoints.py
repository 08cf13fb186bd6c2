"""Reading one Part I run: the checkpoint a selection rule picks, and how the run kept its fit of the training set.

Each run is read at the checkpoint a stated selection rule picks (:data:`SELECTIONS`: the paper's best validation
loss over the run, the same over the run's second half, or the last epoch): its test and train accuracy and the
clocks accumulated up to it (:class:`Checkpoint`); "interpolates" means the selected checkpoint itself fits the
training set. The last-epochs reading, the mean test accuracy over a run's last ``LAST_EPOCHS`` epochs
(:func:`last_epochs_acc`), picks no checkpoint. A run that fits the training set and later falls out of it
(:func:`fibook.forgetting.metrics.collapsed`), or diverges, is *unstable* (:class:`Stability`).

Serves "SGD remembers" (``sgd_remembers``: the paper's rule beside the book's), and every Part I chapter that reads
its runs by the book's rule (``fibook.forgetting.claims.conditions.SELECTION``): ``optimizers``,
``time_lr_l2_batch`` and ``clocks`` (its tables of readings and of stability).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fibook.forgetting import metrics
from fibook.forgetting.optimizers import CLOCKS
from fibook.forgetting.records import Record

SELECTIONS = {
    "best": "the lowest validation loss over every epoch 1..E (the paper's validation-selected predictor)",
    "late": "the lowest validation loss over the run's second half, E/2 < t <= E",
    "last": "the last epoch E (the last one recorded for a run that diverged)",
}
LAST_EPOCHS = 5  # the last-epochs reading: the mean test accuracy over a run's last 5 recorded epochs


@dataclass(frozen=True)
class Checkpoint:
    """The checkpoint of one run that a selection rule picks: its epoch, test and (eval-mode) train accuracy,
    and the clocks accumulated up to it."""

    epoch: int
    test_acc: float
    train_acc: float
    clocks: dict[str, float]

    @property
    def interpolates(self) -> bool:
        """The selected predictor itself fits the training set (train accuracy >= 99.5 %)."""
        return self.train_acc >= metrics.INTERPOLATION_THRESHOLD


def checkpoint(record: Record, selection: str = "best") -> Checkpoint | None:
    """The checkpoint of ``record`` that rule ``selection`` (:data:`SELECTIONS`) picks: ``best`` is the run's own
    validation-selected epoch (:func:`fibook.forgetting.metrics.selected_epoch` over 1..E), ``late`` the same
    over the second half (:func:`fibook.forgetting.metrics.late_window_start`). None when no epoch qualifies (a
    run that diverged before the window)."""
    if selection not in SELECTIONS:
        raise ValueError(f"unknown selection {selection!r}; choose one of: {', '.join(SELECTIONS)}")
    h = record.history
    if selection == "best":
        t = record.summary.selected_epoch
    elif selection == "last":
        t = len(h["test_acc"]) - 1 or None
    else:
        t = metrics.selected_epoch(h["val_loss"], metrics.late_window_start(record.config.epochs))
    if t is None:
        return None
    return Checkpoint(t, float(h["test_acc"][t]), float(h["train_acc"][t]), {k: float(h[k][t]) for k in CLOCKS})


@dataclass(frozen=True)
class Stability:
    """How one run kept its fit of the training set (:mod:`fibook.forgetting.metrics`): the fraction of the second
    half's epochs that fit it, the deepest train-accuracy drop after tau_interp (pp), the largest train loss after
    it, and whether it collapsed (fell below ``COLLAPSE_TRAIN_ACC`` after fitting) or diverged."""

    fit_fraction: float
    drop_pp: float
    peak_loss: float
    collapsed: bool
    diverged: bool

    @property
    def unstable(self) -> bool:
        return self.collapsed or self.diverged


def stability(record: Record) -> Stability:
    """The :class:`Stability` of one run from its history."""
    h, tau = record.history, record.summary.tau_interp
    return Stability(metrics.fit_fraction(h["train_acc"]), metrics.deepest_drop_pp(h["train_acc"], tau),
                     metrics.peak_loss_after(h["train_loss"], tau), metrics.collapsed(h["train_acc"], tau),
                     record.status == "diverged")


def last_epochs_acc(record: Record, epochs: int = LAST_EPOCHS) -> float:
    """The mean test accuracy over the run's last ``epochs`` recorded epochs (fewer when it has fewer)."""
    accs = record.history["test_acc"][1:]
    return float(np.mean(accs[-epochs:])) if accs else 0.0
