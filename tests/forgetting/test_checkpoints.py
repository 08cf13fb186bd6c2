"""Which checkpoint a run is read at (fibook.forgetting.checkpoints): the three selection rules with the clock and
the fit there, the last-epochs reading, and a run's stability."""

import dataclasses
import math

import numpy as np
import pytest
from synthetic import rec, rec_with_curves

from fibook.forgetting.checkpoints import LAST_EPOCHS, checkpoint, last_epochs_acc, stability


def test_checkpoints_of_the_three_rules_and_the_clock_and_fit_there():
    r = rec_with_curves(val_loss=[2.0, 0.5, 0.4, 0.6, 0.7], test_acc=[0.1, 0.8, 0.85, 0.84, 0.83],
                        train_acc=[0.1, 0.95, 0.994999, 0.995, 1.0], optimizer="adam", lr=1e-3)
    best, late, last = (checkpoint(r, s) for s in ("best", "late", "last"))
    assert (best.epoch, best.test_acc, best.clocks["T_adapt"]) == (2, 0.85, pytest.approx(0.2))
    assert not best.interpolates  # 99.4999 % at epoch 2: just below the threshold
    assert (late.epoch, late.test_acc, late.clocks["T_adapt"]) == (3, 0.84, pytest.approx(0.3))
    assert late.interpolates  # exactly 99.5 %
    assert (last.epoch, last.test_acc, last.clocks["T_adapt"]) == (4, 0.83, pytest.approx(0.4)) and last.interpolates
    with pytest.raises(ValueError, match="unknown selection 'first'; choose one of: best, late, last"):
        checkpoint(r, "first")


def test_the_last_reading_of_a_diverged_run_is_its_last_recorded_epoch():
    r = rec_with_curves(val_loss=[2.0, 0.5, 0.4, 0.6, 0.7], test_acc=[0.1, 0.8, 0.85, 0.84, 0.83],
                        train_acc=[0.1, 0.95, 0.99, 0.996, 1.0])
    stopped = dataclasses.replace(r, status="diverged", history={k: v[:3] for k, v in r.history.items()})
    assert checkpoint(stopped, "last").epoch == 2
    assert checkpoint(stopped, "late") is None  # it never reached the second half (epochs 3, 4)
    only_init = dataclasses.replace(r, status="diverged", history={k: v[:1] for k, v in r.history.items()})
    assert checkpoint(only_init, "last") is None  # the initialization is never read


def test_the_last_epochs_reading_averages_the_last_five_recorded_test_accuracies():
    accs = [0.1, 0.5, 0.6, 0.7, 0.8, 0.82, 0.84, 0.86]
    r = rec_with_curves(val_loss=[2.0] + [1.0] * 7, test_acc=accs, train_acc=[0.1] + [1.0] * 7)
    assert LAST_EPOCHS == 5
    assert last_epochs_acc(r) == pytest.approx(np.mean(accs[-5:]))
    assert last_epochs_acc(r, epochs=10) == pytest.approx(np.mean(accs[1:]))  # fewer epochs: all of them


def test_a_runs_stability_reads_its_fit_drop_loss_and_collapse():
    fit = stability(rec(1.0, 0, 0.9, 1, 1.0, epochs=4))
    assert (fit.fit_fraction, fit.drop_pp, fit.peak_loss, fit.collapsed, fit.diverged) == (1.0, 0.0, 0.01, False,
                                                                                            False)
    assert not fit.unstable
    fell = stability(rec(1.0, 0, 0.9, 1, 1.0, epochs=4, collapse_to=0.3))
    # epochs 3 and 4 are the second half; the fit was lost at epoch 4
    assert (fell.fit_fraction, fell.drop_pp, fell.peak_loss, fell.collapsed) == (0.5, pytest.approx(70.0), 5.0, True)
    assert fell.unstable
    never = stability(rec(1.0, 0, 0.9, None, 1.0, epochs=4))
    assert (never.fit_fraction, never.drop_pp, never.collapsed) == (0.0, 0.0, False) and math.isnan(never.peak_loss)
    diverged = stability(rec(1.0, 0, 0.9, None, 1.0, status="diverged"))
    assert diverged.diverged and diverged.unstable and not diverged.collapsed
