"""How large a spread or a difference of spreads is by chance (fibook.forgetting.noise): the noise floor, the seed
bootstrap, the pooled std a one-seed spread borrows and paired differences, each against an independent
computation."""

import dataclasses
import itertools
import math

import numpy as np
import pytest
from scipy.stats import f as f_dist
from synthetic import enumerated_bootstrap, rec, t975

from fibook.forgetting import results
from fibook.forgetting.arms import arm_of, arms
from fibook.forgetting.checkpoints import LAST_EPOCHS
from fibook.forgetting.experiments import run_id, runs
from fibook.forgetting.noise import (
    NoiseFloor,
    noise_floor,
    pooled_spread_std,
    precision_check,
    reading_rows,
    selection_rows,
    spread_difference,
    spread_estimate,
)


def test_the_noise_floor_is_the_expected_range_of_seed_and_test_noise():
    noise = NoiseFloor(seed_std_pp=0.3, spread_std_pp=0.4, n_test=3000, seeds=3)
    s = math.hypot(0.3, 100 * math.sqrt(0.88 * 0.12 / 3000))
    assert noise.floor_pp(3, 0.88) == pytest.approx(3 / math.sqrt(math.pi) * s, rel=1e-9)
    assert noise.floor_pp(5, 0.88) > noise.floor_pp(3, 0.88)
    assert noise.seed_floor_pp(3) == pytest.approx(3 / math.sqrt(math.pi) * 0.3, rel=1e-9)


def store(name, c, acc, tau, collapse=False):
    """A finished run of grid config ``c`` of experiment ``name`` in the results store (its history as long as
    ``c``'s epochs), falling to 50 % train accuracy at its last epoch with ``collapse``."""
    r = rec(c.sigma_w, c.seed, acc, tau, 1.0, epochs=c.epochs, collapse_to=0.5 if collapse else None)
    results.append_record(results.results_path(name, "smoke"),
                          dataclasses.replace(r, config=c, id=run_id(c), experiment=name))


def headline_adam() -> list:
    """The runs of ``seeds``' first Adam arm at smoke (the optimizer comparison's), over its seeds and sigma_w."""
    adam = [c for c in runs("seeds", "smoke") if c.optimizer == "adam"]
    return [c for c in adam if arm_of(c) == arm_of(adam[0])]


def test_the_borrowed_seed_std_pools_only_arms_whose_selected_predictors_interpolate(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    for c in runs("seed_noise", "smoke"):  # SGD: spreads 1 and 3 pp over seeds 0 and 1, every run fits
        store("seed_noise", c, 0.8 - (0.01 + 0.02 * c.seed) * (c.sigma_w > 0.5), 1)
    for c in headline_adam():  # Adam: spreads 0 and 10 pp, never fitting the training set
        store("seeds", c, 0.8 - 0.1 * c.seed * (c.sigma_w > 0.5), None)
    noise = noise_floor("smoke", "late")
    assert noise.spread_arms == 1 and noise.spread_std_pp == pytest.approx(np.std([1.0, 3.0], ddof=1))
    assert noise.spread_df == 1  # two seeds of one arm
    assert math.isnan(noise.unstable_spread_std_pp) and noise.unstable_spread_arms == 0  # no unstable arm


def test_unstable_arms_are_pooled_apart_and_lend_their_std_only_to_unstable_arms(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    for c in runs("seed_noise", "smoke"):  # SGD, stable: spreads 1 and 3 pp
        store("seed_noise", c, 0.8 - (0.01 + 0.02 * c.seed) * (c.sigma_w > 0.5), 1)
    for c in headline_adam():  # Adam: 0 and 4 pp, every run collapses
        store("seeds", c, 0.8 - 0.04 * c.seed * (c.sigma_w > 0.5), 1, collapse=True)
    noise = noise_floor("smoke", "best")  # the best checkpoint (epoch 1) of every run fits
    assert (noise.spread_arms, noise.spread_df) == (1, 1)
    assert noise.spread_std_pp == pytest.approx(np.std([1.0, 3.0], ddof=1))
    assert (noise.unstable_spread_arms, noise.unstable_spread_df) == (1, 1)
    assert noise.unstable_spread_std_pp == pytest.approx(np.std([0.0, 4.0], ddof=1))
    (stable_one,) = arms([rec(s, 0, 0.9 - 0.05 * (s > 1), 1, 1.0) for s in (0.1, 2.5)])
    (unstable_one,) = arms([rec(s, 0, 0.9 - 0.05 * (s > 1), 1, 1.0, collapse_to=0.5) for s in (0.1, 2.5)])
    assert spread_estimate(stable_one, noise).se == pytest.approx(noise.spread_std_pp)
    assert spread_estimate(unstable_one, noise).se == pytest.approx(noise.unstable_spread_std_pp)
    assert spread_estimate(stable_one, noise).brief() == f"5.0 ± {noise.spread_std_pp:.1f} pp"
    assert spread_estimate(unstable_one, noise).brief() == f"5.0 ± {noise.unstable_spread_std_pp:.1f} pp [unstable]"
    assert spread_estimate(stable_one, None).brief() == "5.0 pp (no error bar)"
    rows = {r["arm"]: r for r in reading_rows("smoke")}
    assert rows["Adam (η = 0.001, b = 128, 2 epochs) [unstable]"]["stable"] == "no"
    sgd = rows["SGD (η = 0.05, b = 128, 2 epochs)"]
    assert sgd["stable"] == "yes" and sgd["seeds"] == 2
    assert set(sgd) == {"arm", "seeds", "best: spread (pp)", "late: spread (pp)", "last: spread (pp)",
                        f"last {LAST_EPOCHS} epochs: spread (pp)", "selected predictors fit (book's reading)",
                        "stable"}
    assert sgd["selected predictors fit (book's reading)"] == "2 of 2"
    se = enumerated_bootstrap([[0.8, 0.79], [0.8, 0.77]], lambda m: 100 * np.ptp(m.mean(axis=0)))
    assert se == pytest.approx(1.0)  # the seed-means' spread over the four resamples: 1, 2, 2, 3 pp
    assert sgd["best: spread (pp)"] == f"2.0 ± {se:.1f}"  # the seed-means: 1 and 3 pp average to 2
    adam = rows["Adam (η = 0.001, b = 128, 2 epochs) [unstable]"]
    assert adam["best: spread (pp)"] == f"2.0 ± {se * 2:.1f}"  # 0 and 4 pp: twice the scatter
    (row,) = selection_rows("seed_noise", "smoke")  # the same SGD runs, read per experiment
    assert row == {"arm": "SGD (η = 0.05)", "best: spread (pp)": f"2.0 ± {se:.1f}", "best: epochs": "1",
                   "best: interpolating": "2 of 2", "late: spread (pp)": f"2.0 ± {se:.1f}", "late: epochs": "2",
                   "late: interpolating": "2 of 2"}


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
    se = np.std([4.0, 5.0, 6.5], ddof=1) / math.sqrt(3)  # a mean's bootstrap se on the scale of sd / sqrt(n)
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
    assert d.se == pytest.approx(enumerated_bootstrap(per_seed))
    assert d.se == pytest.approx(np.std(per_seed, ddof=1) / math.sqrt(3))
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


def test_runs_of_one_seed_at_two_precisions_are_compared_against_two_independent_one_seed_spreads(tmp_path,
                                                                                                monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    for c in runs("seed_noise", "smoke"):  # SGD, stable, one precision: spreads 1 and 3 pp (the pooled std)
        store("seed_noise", dataclasses.replace(c, precision="bf16"), 0.8 - (0.01 + 0.02 * c.seed) * (c.sigma_w > 0.5),
              1)
    empty = precision_check("smoke", "late", noise_floor("smoke", "late"))
    assert empty.rows == [] and empty.line.startswith("no run was trained at both precisions")
    for c in headline_adam():  # Adam in both, seeds 0 and 1
        store("seeds", dataclasses.replace(c, precision="bf16"), 0.8 - 0.05 * (c.sigma_w > 0.5), 1)
        fp32 = dataclasses.replace(c, precision="fp32")
        store("clock_ladder", fp32, 0.8 - (0.02 + 0.01 * c.seed) * (c.sigma_w > 0.5), 1)
    noise = noise_floor("smoke", "late")
    check = precision_check("smoke", "late", noise)
    assert [(r["seed"], r["spread, bf16 (pp)"], r["spread, fp32 (pp)"], r["difference (pp)"]) for r in check.rows] == [
        (0, "5.0", "2.0", "+3.0"), (1, "5.0", "3.0", "+2.0")]
    s = noise.spread_std_pp  # pooled over the stable multi-seed arms: SGD (1, 3) and both Adam arms
    assert check.rms_pp == pytest.approx(math.sqrt((9 + 4) / 2))
    assert check.expected_pp == pytest.approx(math.sqrt(2) * s)
    assert check.p_value == pytest.approx(f_dist.sf(6.5 / (2 * s**2), 2, noise.spread_df))
    assert check.line == (f"2 paired spreads: root mean square difference 2.5 pp against {math.sqrt(2) * s:.1f} pp for "
                          f"two independent one-seed spreads (√2 × the pooled std); F test p = {check.p_value:.2g}")
