"""Part I arms (fibook.forgetting.arms) on synthetic records with known answers: seed means, spreads, labels,
radial memory, the direction kept and an arm's reading at its selected checkpoints."""

import dataclasses
import math

import numpy as np
import pytest
from synthetic import rec, rec_with_curves

from fibook.forgetting.arms import (
    UNSTABLE,
    arm_label,
    arms,
    direction_kept,
    norm_ratio_curves,
    radial_memory_by_epoch,
    seed_spreads,
    seed_std_pp,
    setting,
    summary_rows,
)
from fibook.forgetting.collapse import clock_point, spread_and_direction
from fibook.forgetting.config import TrainConfig


def test_seed_means_spread_and_interpolation():
    records = [rec(0.1, 0, 0.90, 2, 1.0), rec(0.1, 1, 0.88, 3, 1.0),
               rec(1.0, 0, 0.80, 2, 10.0), rec(1.0, 1, 0.82, None, 10.0),
               rec(2.5, 0, 0.70, 3, 25.0), rec(2.5, 1, 0.70, 3, 25.0),
               rec(0.1, 0, 0.85, 1, 5.0, optimizer="adam", lr=1e-3), rec(2.5, 0, 0.84, 1, 5.0, optimizer="adam",
                                                                         lr=1e-3)]
    sgd, adam = arms(records)
    assert sgd.label == "SGD (η = 0.01)" and adam.label == "Adam (η = 0.001)"
    assert sgd.sigmas == [0.1, 1.0, 2.5]
    assert sgd.acc == pytest.approx([0.89, 0.81, 0.70])
    assert sgd.acc_min == pytest.approx([0.88, 0.80, 0.70])
    assert sgd.spread_pp == pytest.approx(19.0)  # 89 - 70
    assert sgd.interpolated == [True, False, True]
    assert math.isnan(sgd.spread_interp_pp)  # every selected checkpoint (epoch 1) precedes its tau_interp
    assert math.isnan(sgd.tau[1]) and sgd.tau[0] == 2.5
    assert sgd.radial_memory == pytest.approx(1.0)  # final norm = 10 sigma
    assert adam.spread_pp == pytest.approx(1.0) and adam.radial_memory == pytest.approx(0.0)
    assert adam.clock() == ("T_adapt", pytest.approx(0.5 / 3))  # at the selected epoch 1 of 3
    assert adam.run_clock() == ("T_adapt", 0.5)
    rows = summary_rows([sgd, adam])
    assert rows[0]["spread (pp)"] == "19.0"
    assert rows[0]["σ_w interpolating at the selected checkpoint (at some epoch)"] == "0 of 3 (2)"  # epoch 1 < tau


def test_last_epoch_spread_is_separate_from_the_selected_one():
    records = [rec(0.1, 0, 0.90, 2, 1.0, final_acc=0.86), rec(0.1, 1, 0.90, 2, 1.0, final_acc=0.88),
               rec(2.5, 0, 0.70, 3, 25.0, final_acc=0.80), rec(2.5, 1, 0.70, 3, 25.0, final_acc=0.80)]
    (arm,) = arms(records)
    assert arm.spread_pp == pytest.approx(20.0)
    assert arm.final_spread_pp == pytest.approx(7.0)  # seed means 87 and 80
    assert summary_rows([arm])[0]["spread at the last epoch (pp)"] == "7.0"


def test_l2_arm_uses_the_l2_clock_and_diverged_sigma_leaves_the_spread():
    records = [rec(0.1, 0, 0.9, 1, 1.0, wd=0.06), rec(2.5, 0, 0.5, None, 2.0, wd=0.06),
               rec(1.0, 0, 0.1, None, 1e9, wd=0.06, status="diverged")]
    (arm,) = arms(records)
    assert arm.label == "SGD + L2 (η = 0.01, λ = 0.06) [unstable]"  # a run diverged
    assert arm.run_clock() == ("T_L2", pytest.approx(0.3))
    assert arm.diverged == [False, True, False]
    assert arm.spread_pp == pytest.approx(40.0)
    assert math.isnan(arm.spread_interp_pp)  # only one sigma_w interpolated
    assert summary_rows([arm])[0]["spread, interpolating σ_w only (pp)"] == "—"


def test_norm_ratios_and_radial_memory_over_epochs():
    records = [rec(0.1, 0, 0.9, 1, 2.0), rec(2.5, 0, 0.8, 1, 2.0)]
    (arm,) = arms(records)
    curves = norm_ratio_curves(arm)
    assert curves[0.1] == pytest.approx([1.0, 1.1, 1.1, 2.0])
    r_t = radial_memory_by_epoch(arm)
    assert r_t[0] == pytest.approx(1.0) and r_t[2] == pytest.approx(1.0) and r_t[3] == pytest.approx(0.0)
    assert isinstance(r_t, np.ndarray)


def test_setting_names_where_a_number_was_measured():
    c = TrainConfig(dataset="fashion_mnist", arch="resnet20", width=16, epochs=40, batch_size=64, lr=0.01)
    assert setting(c, "book") == "book: fashion_mnist, ResNet-20 w16, 40 epochs"
    assert setting(c, "gpu", show=("batch_size", "lr")) == "gpu: fashion_mnist, b = 64, η = 0.01"
    assert arm_label(dataclasses.replace(c, weight_decay=0.1), show=("optimizer", "arch")) == (
        "SGD + L2 (ResNet-20 w16)")
    with pytest.raises(ValueError, match="allowed: optimizer, lr"):
        setting(c, "book", show=("depth",))


def test_seed_spreads_and_per_sigma_seed_std():
    records = [rec(0.1, 0, 0.90, 1, 1.0), rec(2.5, 0, 0.80, 1, 1.0),
               rec(0.1, 1, 0.88, 1, 1.0), rec(2.5, 1, 0.82, 1, 1.0),
               rec(0.1, 2, 0.86, 1, 1.0)]  # seed 2 lacks sigma_w = 2.5
    (arm,) = arms(records)
    assert seed_spreads(arm) == pytest.approx({0: 10.0, 1: 6.0})
    std = seed_std_pp(arm)
    assert std[0.1] == pytest.approx(2.0)  # 90, 88, 86: sample std 2 pp
    assert std[2.5] == pytest.approx(100 * np.std([0.80, 0.82], ddof=1))


def test_direction_kept_reads_the_cosine_at_the_selected_checkpoint_of_the_runs_that_record_it():
    def with_cosines(r, cosines):
        return dataclasses.replace(r, history={**r.history, "init_cosine": cosines})

    records = [with_cosines(rec(0.1, 0, 0.9, 1, 1.0), [1.0, 0.3, 0.1, 0.0]),  # selected epoch 1: 0.3
               with_cosines(rec(0.1, 1, 0.9, 1, 1.0), [1.0, 0.5, 0.2, 0.0]),
               with_cosines(rec(2.5, 0, 0.8, 1, 1.0), [1.0, 0.99, 0.98, 0.97]),
               rec(2.5, 1, 0.8, 1, 1.0),  # trained before the geometry was recorded
               rec(0.5, 0, 0.85, 1, 1.0)]
    (arm,) = arms(records, selection="best")
    kept = direction_kept(arm)
    assert list(kept) == [0.1, 2.5]  # sigma_w = 0.5 has no run that records it
    assert kept[0.1] == (pytest.approx(0.4), 2) and kept[2.5] == (pytest.approx(0.99), 1)

    point = clock_point("x", arm, None)
    assert spread_and_direction([point]) == [(pytest.approx(0.99), pytest.approx(point.spread.value))]
    (no_direction,) = arms([records[0], records[1], records[4]], selection="best")
    assert spread_and_direction([clock_point("x", no_direction, None)]) == []  # largest: 0.5
    unfitted = [with_cosines(rec(s, 0, 0.9, None, 1.0), [1.0, 0.5, 0.5, 0.5]) for s in (0.1, 2.5)]
    (unfitted,) = arms(unfitted, selection="best")
    assert spread_and_direction([clock_point("x", unfitted, None)]) == []  # does not interpolate


@pytest.mark.parametrize(("low", "unstable"), [(0.9 - 1e-9, True), (0.9, False)])
def test_an_arm_is_labelled_unstable_when_one_run_falls_below_the_collapse_floor_after_fitting(low, unstable):
    records = [rec(0.1, 0, 0.9, 1, 1.0), rec(2.5, 0, 0.8, 1, 1.0), rec(0.1, 1, 0.9, 1, 1.0),
               rec(2.5, 1, 0.8, 1, 1.0, collapse_to=low)]  # one run of four
    (arm,) = arms(records)
    assert arm.unstable is unstable and [s.collapsed for s in arm.stability] == [False, False, False, unstable]
    assert arm.label == "SGD (η = 0.01)" + UNSTABLE * unstable
    assert UNSTABLE == " [unstable]"
    assert summary_rows([arm])[0]["arm"] == arm.label  # every table shows the mark


def test_the_radial_memory_interval_is_the_least_squares_slope_on_log_axes():
    from scipy.stats import linregress

    sigmas, norms = [0.1, 0.3, 1.0, 2.5], [1.0, 2.2, 9.0, 17.0]
    (arm,) = arms([rec(s, 0, 0.9, 1, n) for s, n in zip(sigmas, norms, strict=True)])
    fit = linregress(np.log(sigmas), np.log(norms))
    e = arm.radial_memory_estimate()
    assert (e.value, e.se, e.df) == (pytest.approx(fit.slope), pytest.approx(fit.stderr), 2)
    assert e.value == pytest.approx(arm.radial_memory)
    (two,) = arms([rec(s, 0, 0.9, 1, n) for s, n in ((0.1, 1.0), (2.5, 17.0))])
    assert not two.radial_memory_estimate().has_error_bar  # two sigma_w: a slope without an interval
    with_diverged = [rec(s, 0, 0.9, 1, n) for s, n in zip(sigmas, norms, strict=True)]
    with_diverged[-1] = rec(2.5, 0, 0.1, None, 1e9, status="diverged")
    (three,) = arms(with_diverged)
    left = linregress(np.log(sigmas[:3]), np.log(norms[:3]))
    assert three.radial_memory_estimate().value == pytest.approx(left.slope)  # the diverged sigma_w is left out
    assert three.radial_memory_estimate().df == 1
    (alone,) = arms([rec(0.1, 0, 0.9, 1, 1.0), rec(2.5, 0, 0.1, None, 1e9, status="diverged")])
    assert math.isnan(alone.radial_memory_estimate().value)


def test_the_last_epochs_spread_is_over_the_seed_mean_of_the_last_five_epochs():
    records = [rec(0.1, seed, 0.9, 1, 1.0, epochs=8, final_acc=0.9) for seed in (0, 1)]
    records += [rec(2.5, 0, 0.9, 1, 1.0, epochs=8, final_acc=0.8), rec(2.5, 1, 0.9, 1, 1.0, epochs=8, final_acc=0.7)]
    (arm,) = arms(records)
    # epochs 4..8 all read the final accuracy: seed-means 90 % and 75 %
    assert arm.last_epochs_spread_pp == pytest.approx(15.0) and arm.spread_pp == pytest.approx(0.0)


def test_a_run_that_diverged_in_its_first_epoch_is_an_unstable_arm_not_an_error():
    r = rec(2.5, 0, 0.1, None, 1e9, status="diverged")
    first = dataclasses.replace(r, history={k: v[:1] for k, v in r.history.items()}, diverged_epoch=1,
                                summary=dataclasses.replace(r.summary, selected_epoch=None, tau_interp=None))
    (arm,) = arms([rec(0.1, 0, 0.9, 1, 1.0), first])
    assert arm.unstable and arm.diverged == [False, True]


def test_an_arm_reads_its_clock_and_condition_at_the_selected_checkpoints():
    curves = dict(val_loss=[2.0, 0.5, 0.4, 0.6, 0.7], test_acc=[0.1, 0.8, 0.85, 0.84, 0.83],
                  train_acc=[0.1, 0.95, 0.99, 0.996, 1.0], optimizer="adam", lr=1e-3)
    records = [dataclasses.replace(rec_with_curves(**curves),
                                   config=dataclasses.replace(rec_with_curves(**curves).config, sigma_w=s))
               for s in (0.5, 2.0)]
    (best,) = arms(records, selection="best")
    (late,) = arms(records, selection="late")
    assert best.clock() == ("T_adapt", pytest.approx(0.2))
    assert best.run_clock() == ("T_adapt", pytest.approx(0.5 * 4 / 3))
    assert late.clock() == ("T_adapt", pytest.approx(0.3))
    assert best.selected_interpolated == [False, False] and not best.interpolates_at_selection
    assert late.interpolates_at_selection and late.epoch_range() == "3"
    assert best.interpolated == [True, True]  # reached at some epoch, which is not the paper's condition
