"""Part I's reading rules: which checkpoint a run is read at, the clock and the interpolation there, and how
large a spread or a difference of spreads is by chance. Each against an independent computation."""

import dataclasses
import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize
from synthetic import enumerated_bootstrap, rec, t975

from fibook.forgetting import metrics
from fibook.forgetting.arms import arms
from fibook.forgetting.checkpoints import LAST_EPOCHS, checkpoint, last_epochs_acc
from fibook.forgetting.noise import NoiseFloor, pooled_spread_std, spread_difference, spread_estimate


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


def test_checkpoints_of_the_three_rules_and_the_clock_and_fit_there():
    r = run(val_loss=[2.0, 0.5, 0.4, 0.6, 0.7], test_acc=[0.1, 0.8, 0.85, 0.84, 0.83],
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
    r = run(val_loss=[2.0, 0.5, 0.4, 0.6, 0.7], test_acc=[0.1, 0.8, 0.85, 0.84, 0.83],
            train_acc=[0.1, 0.95, 0.99, 0.996, 1.0])
    stopped = dataclasses.replace(r, status="diverged", history={k: v[:3] for k, v in r.history.items()})
    assert checkpoint(stopped, "last").epoch == 2
    assert checkpoint(stopped, "late") is None  # it never reached the second half (epochs 3, 4)
    only_init = dataclasses.replace(r, status="diverged", history={k: v[:1] for k, v in r.history.items()})
    assert checkpoint(only_init, "last") is None  # the initialization is never read


def test_the_last_epochs_reading_averages_the_last_five_recorded_test_accuracies():
    accs = [0.1, 0.5, 0.6, 0.7, 0.8, 0.82, 0.84, 0.86]
    r = run(val_loss=[2.0] + [1.0] * 7, test_acc=accs, train_acc=[0.1] + [1.0] * 7)
    assert LAST_EPOCHS == 5
    assert last_epochs_acc(r) == pytest.approx(np.mean(accs[-5:]))
    assert last_epochs_acc(r, epochs=10) == pytest.approx(np.mean(accs[1:]))  # fewer epochs: all of them


def test_an_arm_reads_its_clock_and_condition_at_the_selected_checkpoints():
    curves = dict(val_loss=[2.0, 0.5, 0.4, 0.6, 0.7], test_acc=[0.1, 0.8, 0.85, 0.84, 0.83],
                  train_acc=[0.1, 0.95, 0.99, 0.996, 1.0], optimizer="adam", lr=1e-3)
    records = [dataclasses.replace(run(**curves), config=dataclasses.replace(run(**curves).config, sigma_w=s))
               for s in (0.5, 2.0)]
    (best,) = arms(records, selection="best")
    (late,) = arms(records, selection="late")
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


def seeded(spreads, optimizer="sgd", lr=0.01, sigmas=(1.0, 2.0), collapse=False):
    """An arm over ``sigmas`` whose seed k has test accuracy 0.9 at the smallest sigma_w and 0.9 - spreads[k] /
    100 at the others (its one-seed spread: spreads[k] pp); every run collapses after fitting with ``collapse``."""
    records = [rec(s, seed, acc, 1, 10.0 * s, optimizer=optimizer, lr=lr, collapse_to=0.5 if collapse else None)
               for seed, spread in enumerate(spreads)
               for s, acc in zip(sigmas, (0.9,) + (0.9 - spread / 100,) * (len(sigmas) - 1), strict=True)]
    (a,) = arms(records)
    return a


NOISE = NoiseFloor(seed_std_pp=0.3, spread_std_pp=0.4, n_test=3000, seeds=3, spread_arms=2, spread_df=5,
                   unstable_spread_std_pp=1.5, unstable_spread_arms=1, unstable_spread_df=2)


def test_the_spread_of_seed_means_carries_the_exact_seed_bootstrap_on_seeds_minus_one_dof():
    three = spread_estimate(seeded([4.0, 5.0, 6.5]), NOISE)
    # with one accuracy fixed at 90 %, the spread of seed-means is the mean of the per-seed spreads
    se = math.sqrt(np.var([4.0, 5.0, 6.5]) / 3)  # the exact bootstrap variance of a mean: (1/n) (1/n) sum dev^2
    assert (three.value, three.se, three.df) == (pytest.approx(5.0 + 0.5 / 3), pytest.approx(se), 2)
    assert three.se == pytest.approx(enumerated_bootstrap([4.0, 5.0, 6.5]))
    assert (three.seeds, three.borrowed, three.unstable) == (3, False, False)
    means = [np.mean(np.array([4.0, 5.0, 6.5])[list(i)]) for i in itertools.product(range(3), repeat=3)]
    assert (three.low, three.high) == (pytest.approx(np.quantile(means, 0.025)),
                                       pytest.approx(np.quantile(means, 0.975)))
    assert str(three) == (f"5.2 ± {se:.1f} pp (3 seeds; seed bootstrap {np.quantile(means, 0.025):.1f}–"
                          f"{np.quantile(means, 0.975):.1f})")


def test_the_bootstrap_resamples_seeds_as_whole_rows_across_sigma_w():
    # three sigma_w: seed 0 falls 5 then 10 pp, seed 1 falls 8 then 2 pp, so the spread of means is not a mean
    accs = {0: (0.9, 0.85, 0.80), 1: (0.9, 0.82, 0.88), 2: (0.88, 0.86, 0.81)}
    records = [rec(s, seed, acc, 1, 10.0 * s) for seed, row in accs.items()
               for s, acc in zip((0.5, 1.0, 2.0), row, strict=True)]
    (a,) = arms(records)
    matrix = 100 * np.array(list(accs.values()))

    def spread(rows):
        means = rows.mean(axis=0)
        return means.max() - means.min()

    e = spread_estimate(a, None)
    assert e.value == pytest.approx(spread(matrix)) == pytest.approx(a.spread_pp)
    assert e.se == pytest.approx(enumerated_bootstrap(matrix, spread)) and e.df == 2


def test_a_one_seed_spread_borrows_the_pooled_std_of_its_stability_or_has_none():
    one = spread_estimate(seeded([4.0]), NOISE)
    assert (one.value, one.se, one.df, one.borrowed) == (pytest.approx(4.0), 0.4, 5, True)
    assert str(one) == "4.0 ± 0.4 pp (1 seed; pooled std of a one-seed spread)"
    unstable = spread_estimate(seeded([4.0], collapse=True), NOISE)
    assert (unstable.se, unstable.df, unstable.unstable) == (1.5, 2, True)  # from the unstable arms only
    assert str(unstable) == "4.0 ± 1.5 pp (1 seed, unstable; pooled std of a one-seed spread)"
    no_unstable_pool = dataclasses.replace(NOISE, unstable_spread_std_pp=math.nan, unstable_spread_arms=0,
                                           unstable_spread_df=math.nan)
    alone = spread_estimate(seeded([4.0], collapse=True), no_unstable_pool)
    assert math.isnan(alone.se) and not alone.has_error_bar  # never the stable arms' error bar
    assert str(alone) == "4.0 pp (1 seed, unstable; no error bar: no pooled std of a one-seed spread)"
    assert spread_estimate(seeded([4.0]), no_unstable_pool).se == 0.4
    none = spread_estimate(seeded([4.0]), None)
    assert math.isnan(none.se) and not none.has_error_bar


def test_the_noise_floor_lends_each_stability_its_own_pool():
    assert NOISE.borrowed(False) == (0.4, 5, 2) and NOISE.borrowed(True) == (1.5, 2, 1)
    default = NoiseFloor(seed_std_pp=0.3, spread_std_pp=0.4, n_test=3000, seeds=3)
    std, df, used = default.borrowed(True)
    assert math.isnan(std) and math.isnan(df) and used == 0


def test_a_one_seed_error_bar_pools_the_seed_variance_of_every_multi_seed_arm():
    arm_list = [seeded([4.0, 5.0, 6.0]), seeded([1.0, 1.0, 1.6, 2.2], optimizer="adam"), seeded([3.0], lr=0.1)]
    std, used, dof = pooled_spread_std(arm_list)
    # by hand: variances 1.0 (2 dof) and 0.33 (3 dof: spreads 1, 1, 1.6, 2.2 have mean 1.45, squares 0.99 / 3)
    assert used == 2 and dof == 5 and std == pytest.approx(math.sqrt((2 * 1.0 + 0.99) / 5))
    assert std == pytest.approx(math.sqrt((2 * np.var([4, 5, 6], ddof=1) + 3 * np.var([1, 1, 1.6, 2.2], ddof=1)) / 5))
    nan, none, no_dof = pooled_spread_std([seeded([3.0])])
    assert math.isnan(nan) and none == 0 and math.isnan(no_dof)


def test_differences_are_paired_over_shared_seeds_by_the_same_bootstrap():
    a, b = seeded([4.0, 5.0, 6.5]), seeded([2.0, 3.5, 4.0], optimizer="adam")
    d = spread_difference(a, b, NOISE)
    per_seed = np.array([2.0, 1.5, 2.5])
    assert d.paired and d.seeds == 3 and d.df == 2 and d.value == pytest.approx(2.0)
    assert d.se == pytest.approx(enumerated_bootstrap(per_seed)) == pytest.approx(math.sqrt(np.var(per_seed) / 3))
    half = spread_difference(a, b, NOISE, weight=0.5)  # a - b / 2, seed by seed
    assert half.value == pytest.approx(np.mean([4.0, 5.0, 6.5]) - 0.5 * np.mean([2.0, 3.5, 4.0]))
    assert half.se == pytest.approx(enumerated_bootstrap(np.array([4.0, 5.0, 6.5]) - 0.5 * np.array([2.0, 3.5, 4.0])))
    h = t975(2) * d.se
    assert str(d) == f"+2.0 pp, 95 % [{2.0 - h:+.1f}, {2.0 + h:+.1f}] (paired over 3 seeds)"


def test_differences_without_two_shared_seeds_add_each_arms_error_bar():
    a = seeded([4.0, 5.0, 6.5])
    u = spread_difference(a, seeded([2.0], optimizer="adam"), NOISE)
    assert not u.paired and u.value == pytest.approx(5.0 + 0.5 / 3 - 2.0)
    assert u.se == pytest.approx(math.hypot(enumerated_bootstrap([4.0, 5.0, 6.5]), 0.4))
    assert u.df == 2  # the smaller of the bootstrap's 2 and the pool's 5
    w = spread_difference(seeded([2.0], optimizer="adam"), a, NOISE, weight=0.5)
    assert w.value == pytest.approx(2.0 - 0.5 * (5.0 + 0.5 / 3))
    assert w.se == pytest.approx(math.hypot(0.4, 0.5 * enumerated_bootstrap([4.0, 5.0, 6.5])))
    ones = spread_difference(seeded([4.0]), seeded([2.0], optimizer="adam"), NOISE)
    assert (ones.se, ones.df) == (pytest.approx(0.4 * math.sqrt(2)), 5)
    other_grid = seeded([3.0, 4.5, 5.0], optimizer="adam", sigmas=(1.0, 2.0, 3.0))  # shared seeds, not one grid
    assert not spread_difference(a, other_grid, NOISE).paired
    no_bar = spread_difference(seeded([4.0]), seeded([2.0], optimizer="adam"), None)
    assert not no_bar.has_error_bar and str(no_bar) == "+2.0 pp (no error bar)"
