"""Part I clock collapse (fibook.forgetting.collapse): every arm on its mechanism's clock from a synthetic results
store, which arms count in a clock's trend, and the pairs and extremes the verdicts read."""

import dataclasses

import pytest
from synthetic import rec, stored

from fibook.forgetting import results
from fibook.forgetting.arms import arms
from fibook.forgetting.clocks import clock_key
from fibook.forgetting.collapse import (
    CLOCK_MECHANISMS,
    RAW_CLOCK_MECHANISMS,
    baseline_arm,
    clock_point,
    collapse_points,
    equal_clock_pairs,
    longest_clock_arms,
    mechanism,
)
from fibook.forgetting.config import TrainConfig
from fibook.forgetting.experiments import grids, runs
from fibook.forgetting.noise import noise_floor
from fibook.presets import get_preset


def test_the_clock_mechanisms_count_momentum_sgd_on_t_sgd_and_the_raw_reading_does_not():
    assert "momentum SGD" in CLOCK_MECHANISMS["T_SGD"]
    assert RAW_CLOCK_MECHANISMS["T_SGD"] == ("SGD",)
    assert {k: v for k, v in RAW_CLOCK_MECHANISMS.items() if k != "T_SGD"} == \
        {k: v for k, v in CLOCK_MECHANISMS.items() if k != "T_SGD"}


def test_the_collapse_pools_every_experiments_runs_of_an_arm_on_the_quick_grid(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    for name in ("sgd_remembers", "seed_noise"):  # the same SGD arm: one seed, and the noise seeds
        for c in runs(name, "smoke"):
            results.append_record(results.results_path(name, "smoke"), stored(c, name))
    noise = noise_floor("smoke", "late")
    assert noise is not None and noise.seeds == 2 and noise.n_test == 256 and noise.spread_arms == 1
    (point,) = collapse_points("smoke", "late", noise)
    assert point.experiment == "sgd_remembers" and point.clock == "T_SGD"
    assert sorted({r.config.seed for r in point.arm.records}) == [0, 1] and not point.spread.borrowed
    assert baseline_arm([point], "smoke") is point.arm


def test_the_collapse_counts_an_arm_with_the_seeds_that_cover_its_grid(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    configs = runs("seed_noise", "smoke")  # seed 0 at both sigma_w, then seed 1
    path = results.results_path("seed_noise", "smoke")
    for c in configs[:3]:  # seed 1 has one sigma_w of two: still running
        results.append_record(path, stored(c, "seed_noise"))
    (point,) = collapse_points("smoke", "late", None)
    assert {r.config.seed for r in point.arm.records} == {0} and len(point.arm.records) == 2
    assert point.spread.seeds == 1
    results.append_record(path, stored(configs[3], "seed_noise"))
    (point,) = collapse_points("smoke", "late", None)
    assert {r.config.seed for r in point.arm.records} == {0, 1} and point.spread.seeds == 2


def test_every_optimizers_mechanism_counts_on_the_clock_it_reads():
    mechanisms = {(o, wd): mechanism(TrainConfig(optimizer=o, weight_decay=wd))
                  for o, wd in (("sgd", 0.0), ("sgd", 0.1), ("msgd", 0.0), ("adam", 0.0), ("adamw", 0.01),
                                ("muon", 0.0))}
    assert list(mechanisms.values()) == ["SGD", "SGD + L2", "momentum SGD", "Adam", "AdamW", "Muon"]
    for (o, wd), name in mechanisms.items():  # each in exactly one clock's trend: the clock its runs read
        assert [k for k, names in CLOCK_MECHANISMS.items() if name in names] == [
            clock_key(TrainConfig(optimizer=o, weight_decay=wd))]


def points(*specs, tau=1):
    """One ClockPoint (no noise floor) per (optimizer, lr, epochs, weight decay) arm, each of two sigma_w whose
    synthetic runs record T_adapt = epochs / 6 and T_SGD = epochs / 3000 whatever the rate (:func:`rec`)."""
    records = [rec(s, 0, 0.9 - 0.05 * (s > 1), tau, 1.0, optimizer=o, lr=lr, epochs=e, wd=wd)
               for o, lr, e, wd in specs for s in (0.1, 2.5)]
    return [clock_point("x", a, None) for a in arms(records)]


def test_equal_clock_pairs_differ_only_in_the_settings_their_clock_is_made_of():
    adam, half_rate, longer, w1, w2 = points(("adam", 1e-3, 3, 0.0), ("adam", 5e-4, 3, 0.0), ("adam", 1e-3, 6, 0.0),
                                             ("adamw", 1e-3, 3, 0.01), ("adamw", 1e-3, 3, 0.03))
    assert adam.run_value == half_rate.run_value == pytest.approx(0.5) and longer.run_value == pytest.approx(1.0)
    # Adam at two rates, one clock: a pair; AdamW at two decays (not part of T_adapt): none; Adam and AdamW: none
    assert [(p.arm, q.arm) for p, q in equal_clock_pairs([adam, half_rate, longer, w1, w2])] == [
        (adam.arm, half_rate.arm)]
    # a clock equal to 9 significant digits is equal; one that differs in the 7th is not
    close, apart = (dataclasses.replace(half_rate, run_value=half_rate.run_value * f) for f in (1 + 1e-12, 1 + 1e-6))
    assert len(equal_clock_pairs([adam, close])) == 1 and equal_clock_pairs([adam, apart]) == []


def test_sgd_arms_at_another_batch_size_pair_on_t_sgd_and_another_architecture_does_not():
    records = [rec(s, 0, 0.9, 1, 1.0, epochs=3, **kw) for kw in ({"batch_size": 64}, {"batch_size": 128},
                                                                    {"batch_size": 128, "arch": "resnet8"})
               for s in (0.1, 2.5)]
    b64, b128, deeper = (clock_point("x", a, None) for a in arms(records, show=("batch_size", "arch")))
    assert b64.clock == b128.clock == deeper.clock == "T_SGD"
    assert [(p.arm.config.batch_size, q.arm.config.batch_size) for p, q in equal_clock_pairs([b64, b128, deeper])] \
        == [(64, 128)]


def test_the_longest_clock_arm_of_each_adaptive_mechanism_is_among_the_arms_that_interpolate():
    fitted = points(("adam", 1e-3, 3, 0.0), ("adam", 1e-3, 6, 0.0), ("adamw", 1e-3, 3, 0.01), ("sgd", 0.01, 9, 0.0))
    unfitted = points(("adam", 1e-3, 9, 0.0), tau=None)  # the longest Adam run never fits the training set
    assert unfitted[0].left_out == "selected predictor does not interpolate" and not unfitted[0].included
    longest = longest_clock_arms(fitted + unfitted)
    assert longest == [fitted[1].arm, fitted[2].arm]  # Adam's 6 epochs, AdamW's only arm; no Muon arm, no SGD
    assert longest_clock_arms(fitted, mechanisms=("SGD",)) == [fitted[3].arm]


def test_the_baseline_is_low_learning_rate_sgd_at_the_presets_rate_batch_and_length():
    f, g = get_preset("smoke").forgetting, grids("smoke")
    others = points(("sgd", g.sgd_lr / 5, f.epochs, 0.0), ("sgd", g.sgd_lr, f.epochs + 1, 0.0),
                    ("sgd", g.sgd_lr, f.epochs, 0.01), ("msgd", g.sgd_lr, f.epochs, 0.0))
    assert baseline_arm(others, "smoke") is None
    records = [rec(s, 0, 0.9, 1, 1.0, lr=g.sgd_lr, epochs=f.epochs, batch_size=128) for s in (0.1, 2.5)]
    (baseline,) = arms(records)
    assert baseline_arm([*others, clock_point("x", baseline, None)], "smoke") is baseline
