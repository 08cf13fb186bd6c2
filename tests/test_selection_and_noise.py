"""Part I's reading rules: which checkpoint a run is read at, the clock and the interpolation there, and how
large a spread or a difference of spreads is by chance. Each against an independent computation."""

import dataclasses
import math

import numpy as np
import pytest
from scipy.optimize import minimize
from synthetic import rec

from fibook.forgetting import analysis, metrics
from fibook.forgetting.analysis import NoiseFloor


def test_selection_from_a_first_epoch_breaks_ties_early_and_refuses_the_initialization():
    losses = [0.1, 0.5, 0.3, 0.3, 0.4]
    assert metrics.selected_epoch(losses) == 2 and metrics.selected_epoch(losses, first=3) == 3
    assert metrics.selected_epoch(losses, first=4) == 4 and metrics.selected_epoch(losses, first=5) is None
    with pytest.raises(ValueError, match="first must be an epoch >= 1"):
        metrics.selected_epoch(losses, first=0)


@pytest.mark.parametrize(("epochs", "start"), [(1, 1), (2, 2), (3, 2), (40, 21), (41, 21), (80, 41), (120, 61)])
def test_the_late_window_is_the_second_half(epochs, start):
    assert metrics.late_window_start(epochs) == start
    assert start > epochs / 2 and start - 1 <= epochs / 2  # just above half, and the epoch before is not


def test_a_long_runs_late_window_starts_after_a_run_half_as_long_has_ended():
    assert metrics.late_window_start(80) > 40 and metrics.late_window_start(120) > 40
    with pytest.raises(ValueError, match="at least one epoch"):
        metrics.late_window_start(0)


def test_expected_range_of_normals_matches_closed_forms_and_simulation():
    assert metrics.expected_range(2) == pytest.approx(2 / math.sqrt(math.pi), rel=1e-9)
    assert metrics.expected_range(3) == pytest.approx(3 / math.sqrt(math.pi), rel=1e-9)  # d_3 = 3 / sqrt(pi)
    draws = np.random.default_rng(0).standard_normal((200_000, 5))
    assert metrics.expected_range(5) == pytest.approx(np.ptp(draws, axis=1).mean(), rel=5e-3)
    with pytest.raises(ValueError, match="k >= 2"):
        metrics.expected_range(1)


def test_binomial_standard_error():
    assert metrics.binomial_se_pp(0.88, 3000) == pytest.approx(100 * math.sqrt(0.88 * 0.12 / 3000))
    assert metrics.binomial_se_pp(1.0, 10) == 0.0
    with pytest.raises(ValueError, match="fraction"):
        metrics.binomial_se_pp(88.0, 3000)


def test_the_decreasing_fit_is_the_constrained_least_squares_solution():
    rng = np.random.default_rng(1)
    x = np.array([0.3, 1.0, 2.0, 2.0, 4.0, 8.0, 9.0])
    y = rng.normal(size=x.size) + np.array([5, 4, 4.5, 3, 3.2, 1, 2.0])
    fit = metrics.decreasing_fit(x, y)
    xs = np.unique(x)
    idx = np.searchsorted(xs, x)
    cons = [{"type": "ineq", "fun": lambda f, i=i: f[i] - f[i + 1]} for i in range(len(xs) - 1)]
    ref = minimize(lambda f: np.sum((y - f[idx]) ** 2), np.full(len(xs), y.mean()), constraints=cons,
                   method="SLSQP", options={"ftol": 1e-14, "maxiter": 500}).x[idx]
    assert fit == pytest.approx(ref, abs=1e-6)
    assert np.all(np.diff(fit[np.argsort(x)]) <= 1e-12)
    assert metrics.decreasing_fit([1, 2, 3], [3, 2, 1]) == pytest.approx([3, 2, 1])  # already decreasing
    assert metrics.decreasing_fit([1, 2, 3], [1, 2, 3]) == pytest.approx([2, 2, 2])  # increasing: one block


def run(val_loss, test_acc, train_acc, epochs=None, **kw):
    """A synthetic record with the given per-epoch curves (epoch 0 first); T_adapt = epoch / 10."""
    e = len(val_loss) - 1
    r = rec(1.0, 0, test_acc[1], None, 1.0, epochs=epochs or e, **kw)
    history = dict(r.history, epoch=list(range(e + 1)), val_loss=val_loss, test_acc=test_acc, train_acc=train_acc,
                   T_SGD=[0.0] * (e + 1), T_L2=[0.0] * (e + 1), T_adapt=[t / 10 for t in range(e + 1)])
    best = metrics.selected_epoch(val_loss)
    summary = dataclasses.replace(r.summary, selected_epoch=best, selected_test_acc=test_acc[best],
                                  tau_interp=metrics.interpolation_epoch(train_acc))
    return dataclasses.replace(r, history=history, summary=summary)


def test_checkpoints_of_the_two_rules_and_the_clock_and_fit_there():
    r = run(val_loss=[2.0, 0.5, 0.4, 0.6, 0.7], test_acc=[0.1, 0.8, 0.85, 0.84, 0.83],
            train_acc=[0.1, 0.95, 0.994999, 0.995, 1.0], optimizer="adam", lr=1e-3)
    best, late = analysis.checkpoint(r, "best"), analysis.checkpoint(r, "late")
    assert (best.epoch, best.test_acc, best.clocks["T_adapt"]) == (2, 0.85, pytest.approx(0.2))
    assert not best.interpolates  # 99.4999 % at epoch 2: just below the threshold
    assert (late.epoch, late.test_acc, late.clocks["T_adapt"]) == (3, 0.84, pytest.approx(0.3))
    assert late.interpolates  # exactly 99.5 %
    with pytest.raises(ValueError, match="unknown selection 'last'; choose one of: best, late"):
        analysis.checkpoint(r, "last")


def test_an_arm_reads_its_clock_and_condition_at_the_selected_checkpoints():
    curves = dict(val_loss=[2.0, 0.5, 0.4, 0.6, 0.7], test_acc=[0.1, 0.8, 0.85, 0.84, 0.83],
                  train_acc=[0.1, 0.95, 0.99, 0.996, 1.0], optimizer="adam", lr=1e-3)
    records = [dataclasses.replace(run(**curves), config=dataclasses.replace(run(**curves).config, sigma_w=s))
               for s in (0.5, 2.0)]
    (best,) = analysis.arms(records, selection="best")
    (late,) = analysis.arms(records, selection="late")
    assert best.clock() == ("T_adapt", pytest.approx(0.2))
    assert best.run_clock() == ("T_adapt", pytest.approx(0.5 * 4 / 3))
    assert late.clock() == ("T_adapt", pytest.approx(0.3))
    assert best.selected_interpolated == [False, False] and not best.interpolates_at_selection
    assert late.interpolates_at_selection and late.epoch_range() == "3"
    assert best.interpolated == [True, True]  # reached at some epoch, which is not the paper's condition


def test_the_noise_floor_is_the_expected_range_of_seed_and_test_noise():
    noise = NoiseFloor(seed_std_pp=0.3, spread_std_pp=0.4, n_test=3000, seeds=3)
    s = math.hypot(0.3, 100 * math.sqrt(0.88 * 0.12 / 3000))
    assert noise.floor_pp(3, 0.88) == pytest.approx(3 / math.sqrt(math.pi) * s, rel=1e-9)
    assert noise.floor_pp(5, 0.88) > noise.floor_pp(3, 0.88)
    assert noise.seed_floor_pp(3) == pytest.approx(3 / math.sqrt(math.pi) * 0.3, rel=1e-9)


def seeded(spreads, optimizer="sgd", lr=0.01):
    records = [rec(s, seed, acc, 1, 10.0 * s, optimizer=optimizer, lr=lr)
               for seed, spread in enumerate(spreads) for s, acc in ((1.0, 0.9), (2.0, 0.9 - spread / 100))]
    (a,) = analysis.arms(records)
    return a


def test_spreads_carry_their_seed_std_or_borrow_the_noise_floors():
    noise = NoiseFloor(seed_std_pp=0.3, spread_std_pp=0.4, n_test=3000, seeds=3)
    three = analysis.spread_estimate(seeded([4.0, 5.0, 6.0]), noise)
    assert (three.mean, three.std, three.seeds, three.borrowed) == (pytest.approx(5.0), pytest.approx(1.0), 3, False)
    assert str(three) == "5.0 ± 1.0 pp (3 seeds; std over seeds)"
    one = analysis.spread_estimate(seeded([4.0]), noise)
    assert (one.mean, one.std, one.borrowed) == (pytest.approx(4.0), 0.4, True)
    assert math.isnan(analysis.spread_estimate(seeded([4.0]), None).std)


def test_a_one_seed_error_bar_pools_the_seed_variance_of_every_multi_seed_arm():
    arms = [seeded([4.0, 5.0, 6.0]), seeded([1.0, 1.0, 1.6, 2.2], optimizer="adam"), seeded([3.0], lr=0.1)]
    std, used = analysis.pooled_spread_std(arms)
    # by hand: variances 1.0 (2 dof) and 0.33 (3 dof: spreads 1, 1, 1.6, 2.2 have mean 1.45, squares 0.99 / 3)
    assert used == 2 and std == pytest.approx(math.sqrt((2 * 1.0 + 0.99) / 5))
    assert std == pytest.approx(math.sqrt((2 * np.var([4, 5, 6], ddof=1) + 3 * np.var([1, 1, 1.6, 2.2], ddof=1)) / 5))
    nan, none = analysis.pooled_spread_std([seeded([3.0])])
    assert math.isnan(nan) and none == 0


def test_differences_are_paired_over_shared_seeds_and_unpaired_otherwise():
    noise = NoiseFloor(seed_std_pp=0.3, spread_std_pp=0.4, n_test=3000, seeds=3)
    a, b = seeded([4.0, 5.0, 6.5]), seeded([3.0, 4.5, 5.0], optimizer="adam")
    d = analysis.spread_difference(a, b, noise)
    per_seed = np.array([1.0, 0.5, 1.5])
    assert d.paired and d.value == pytest.approx(1.0)
    assert d.std == pytest.approx(per_seed.std(ddof=1) / math.sqrt(3))
    u = analysis.spread_difference(a, seeded([2.0], optimizer="adam"), noise)
    assert not u.paired and u.value == pytest.approx(5.0 + 0.5 / 3 - 2.0)
    assert u.std == pytest.approx(math.hypot(np.std([4.0, 5.0, 6.5], ddof=1) / math.sqrt(3), 0.4))
