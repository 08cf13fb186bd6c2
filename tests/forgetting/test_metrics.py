"""Metrics against values computed by hand."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from fibook.forgetting import metrics


def test_spread_in_percentage_points():
    assert metrics.spread_pp({0.1: 0.90, 0.5: 0.85, 2.5: 0.635}) == pytest.approx(26.5)
    with pytest.raises(ValueError, match="two or more"):
        metrics.spread_pp({0.1: 0.9})
    with pytest.raises(ValueError, match="fractions in \\[0, 1\\]"):
        metrics.spread_pp({0.1: 90.0, 2.5: 63.5})


def test_selected_epoch_earliest_minimum_after_init_skipping_nan():
    assert metrics.selected_epoch([0.1, 0.9, 0.5, 0.5, 0.7]) == 2  # epoch 0 is never selected; earliest tie
    assert metrics.selected_epoch([2.0, math.nan, 1.0]) == 2
    assert metrics.selected_epoch([2.0, math.inf]) is None


def test_interpolation_epoch_and_repair_gap():
    train = [0.1, 0.8, 0.994, 0.995, 1.0]
    assert metrics.interpolation_epoch(train) == 3
    assert metrics.interpolation_epoch([0.1, 0.99]) is None
    assert metrics.interpolation_epoch([1.0, 0.5]) is None  # the initialization does not count
    val = [0.1, 0.7, 0.8, 0.82, 0.85]
    assert metrics.repair_gap(val, 3) == pytest.approx(3.0)  # (0.85 - 0.82) in pp
    assert metrics.repair_gap(val, None) is None


def test_forgetting_clocks_reproduce_the_headline_values():
    # eta = 1e-3, b = 128, N = 40,000 with drop_last: 312 steps per epoch
    k300 = 300 * 312
    c = metrics.forgetting_clocks([1e-3] * k300, 128, weight_decay=0.0)
    assert c["T_SGD"] == pytest.approx(7.3125e-4, rel=1e-9)
    assert c["T_adapt"] == pytest.approx(93.6, rel=1e-9)
    assert c["T_L2"] == 0.0
    c = metrics.forgetting_clocks([1e-2] * k300, 128, weight_decay=1e-2)
    assert c["T_L2"] == pytest.approx(9.36, rel=1e-9)
    assert metrics.forgetting_clocks([1e-3] * (5000 * 312), 128)["T_SGD"] == pytest.approx(1.21875e-2, rel=1e-9)
    varying = metrics.forgetting_clocks([0.1, 0.2, 0.3], 2, 0.5)
    assert varying == pytest.approx({"T_SGD": (0.01 + 0.04 + 0.09) / 2, "T_L2": 0.3, "T_adapt": 0.6})


def test_radial_memory_slope():
    sigmas = [0.1, 0.5, 2.5]
    assert metrics.radial_memory_slope(sigmas, [3 * s for s in sigmas]) == pytest.approx(1.0)  # full memory
    assert metrics.radial_memory_slope(sigmas, [7.0, 7.0, 7.0]) == pytest.approx(0.0, abs=1e-12)  # forgotten
    assert metrics.radial_memory_slope(sigmas, [s**0.5 for s in sigmas]) == pytest.approx(0.5)
    # OLS by hand: x = log(1), log(e), log(e^2) = 0, 1, 2; y = 0, 1, 3 -> slope 1.5
    assert metrics.radial_memory_slope([1, math.e, math.e**2], [1, math.e, math.e**3]) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="must not all be equal"):
        metrics.radial_memory_slope([1, 1], [1, 2])


def test_rank_correlation_matches_the_rank_difference_formula():
    # ranks of y: 1, 3, 2, 4 -> sum d^2 = 2 -> rho = 1 - 6 * 2 / (4 * 15) = 0.8
    assert metrics.rank_correlation([1, 2, 3, 4], [10, 30, 20, 40]) == pytest.approx(0.8)
    assert metrics.rank_correlation([1e-3, 1e-2, 1e-1], [9.0, 5.0, 1.0]) == pytest.approx(-1.0)
    assert metrics.rank_correlation([1, 2], [3, 4]) is None
    assert metrics.rank_correlation([1, 1, 1], [3, 4, 5]) is None
    with pytest.raises(ValueError, match="equal length"):
        metrics.rank_correlation([1, 2, 3], [1, 2])


def test_fit_fraction_counts_the_second_half_epochs_at_or_above_the_threshold():
    # E = 4: the second half is epochs 3 and 4
    assert metrics.fit_fraction([0.1, 0.2, 0.3, 0.995, 0.994999]) == pytest.approx(0.5)  # 99.5 % counts, just below not
    assert metrics.fit_fraction([0.1, 1.0, 1.0, 0.5, 0.6]) == 0.0  # a fit in the first half does not count
    assert metrics.fit_fraction([0.1, 0.2, 0.3, 1.0, 1.0]) == 1.0
    # E = 5: epochs 3, 4, 5 (floor(5 / 2) + 1 = 3)
    assert metrics.fit_fraction([0.1, 0.2, 1.0, 1.0, 0.3, 1.0]) == pytest.approx(2 / 3)
    assert metrics.fit_fraction([0.1, 0.8, 0.85], threshold=0.85) == 1.0  # epoch 2 alone, at the threshold given


def test_the_deepest_drop_is_measured_from_the_fit_onwards_and_is_zero_without_one():
    accs = [0.1, 0.5, 1.0, 0.93, 0.97, 0.62, 0.99]
    assert metrics.deepest_drop_pp(accs, 2) == pytest.approx(100 * (1.0 - 0.62))
    assert metrics.deepest_drop_pp(accs, 6) == pytest.approx(0.0)  # nothing after the last epoch
    assert metrics.deepest_drop_pp([0.1, 0.05, 0.995, 1.0], 2) == pytest.approx(0.0)  # a fall before tau is no drop
    assert metrics.deepest_drop_pp(accs, None) == 0.0


def test_the_peak_loss_after_the_fit_ignores_the_loss_before_it_and_is_nan_without_a_fit():
    losses = [2.3, 9.0, 0.02, 0.5, 7.5, 0.01]
    assert metrics.peak_loss_after(losses, 2) == 7.5  # the 9.0 before the fit does not count
    assert metrics.peak_loss_after(losses, 5) == 0.01
    assert math.isnan(metrics.peak_loss_after(losses, None))


@pytest.mark.parametrize(("low", "collapsed"), [(metrics.COLLAPSE_TRAIN_ACC - 1e-9, True),
                                                (metrics.COLLAPSE_TRAIN_ACC, False),
                                                (metrics.COLLAPSE_TRAIN_ACC + 1e-9, False)])
def test_a_run_collapses_when_it_falls_below_the_floor_after_fitting(low, collapsed):
    assert metrics.COLLAPSE_TRAIN_ACC == 0.90
    assert metrics.collapsed([0.1, 1.0, low, 1.0], 1) is collapsed


def test_only_a_fall_after_fitting_is_a_collapse():
    assert not metrics.collapsed([0.1, 0.3, 0.995, 0.95], 2)  # 30 % before the fit
    assert not metrics.collapsed([0.1, 0.3, 0.5], None)  # never fit: nothing to lose
    assert metrics.collapsed([0.1, 1.0, 0.95, 0.97], 1, floor=0.96)  # a floor of one's own


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
