"""Metrics against values computed by hand."""

import math

import pytest

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
