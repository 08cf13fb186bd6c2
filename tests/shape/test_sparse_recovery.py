"""Figure 7.1's experiment (fibook.shape.sparse_recovery): the first crossing of a level, the collapse of the
error curves against the effective scale, the transitions and the GD check points, and the explorer's window."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import brentq
from synthetic import fig71_problem

from fibook.claims import Verdict
from fibook.presets import get_preset
from fibook.shape import claims, diagonal, sparse_recovery


def test_first_crossing_is_the_first_log_interpolated_rise_through_the_level():
    xs, ys = [1e-3, 1e-2, 1e-1, 1.0], [0.1, 0.3, 0.7, 0.2]
    # first index above 0.5 is 2: t = (0.5 - 0.3) / (0.7 - 0.3) = 1/2, x = 10^(-2 + 1/2)
    assert sparse_recovery.first_crossing(xs, ys, 0.5) == pytest.approx(10**-1.5, rel=1e-12)
    # t = (0.2 - 0.1) / (0.3 - 0.1) = 1/2 between 1e-3 and 1e-2; and a level met exactly is not yet crossed
    assert sparse_recovery.first_crossing(xs, ys, 0.2) == pytest.approx(10**-2.5, rel=1e-12)
    assert sparse_recovery.first_crossing(xs, ys, 0.3) == pytest.approx(10**-2, rel=1e-12)
    # 0.6 is crossed between 1e-2 and 1e-1 at t = 3/4; of two rises the first is taken (t = 1/2 between 1 and 2)
    assert sparse_recovery.first_crossing(xs, ys, 0.6) == pytest.approx(10**-1.25, rel=1e-12)
    assert sparse_recovery.first_crossing([1, 2, 4, 8], [0.0, 1.0, 0.0, 1.0], 0.5) == pytest.approx(2**0.5, rel=1e-12)
    with pytest.raises(ValueError, match="never rises above the level 0.8"):
        sparse_recovery.first_crossing(xs, ys, 0.8)
    with pytest.raises(ValueError, match="starts above the level 0.05"):
        sparse_recovery.first_crossing(xs, ys, 0.05)
    with pytest.raises(ValueError, match="positive and increasing"):
        sparse_recovery.first_crossing([1e-2, 1e-3, 1e-1, 1.0], ys, 0.5)
    with pytest.raises(ValueError, match="same length"):
        sparse_recovery.first_crossing(xs, ys[:3], 0.5)


def test_collapse_deviation_vanishes_on_one_curve_of_kappa_and_measures_a_shift():
    def f(k):  # a curve linear in log kappa, so interpolating it in log kappa is exact
        return 0.3 + 0.05 * np.log(k)

    factors = np.array([1.0, 5 / 3, 3.0, 9.5])  # (1+s^2)/(1-s^2) at s = 0, 0.5, ~0.58, 0.9
    kappas = np.logspace(-4, 0, 9)[None, :] * factors[:, None]
    assert sparse_recovery.collapse_deviation(kappas, f(kappas)) < 1e-14
    # curve 2 shifted by a factor e^0.4 in kappa: it is off by 0.05 * 0.4 = 0.02 wherever it overlaps curve 0
    shifted = f(kappas).copy()
    shifted[2] = f(kappas[2] * np.exp(0.4))
    assert sparse_recovery.collapse_deviation(kappas, shifted) == pytest.approx(0.02, rel=1e-10)
    # a smooth, non-linear curve of kappa collapses to the interpolation error only (far below COLLAPSE_MAX)
    def g(k):
        return 0.5 + 0.4 * np.tanh(np.log(k / 1e-2))

    fine = np.logspace(-4, 0, 81)[None, :] * factors[:, None]
    dev = sparse_recovery.collapse_deviation(kappas, g(kappas))
    dev_fine = sparse_recovery.collapse_deviation(fine, g(fine))
    assert 1e-4 < dev < 0.1 and dev_fine < dev / 20  # second order in the spacing: 10x finer, ~100x smaller
    with pytest.raises(ValueError, match="does not overlap"):
        sparse_recovery.collapse_deviation(np.vstack([kappas[0], kappas[0] * 1e5]), f(kappas[:2]))
    with pytest.raises(ValueError, match="positive and increasing"):
        sparse_recovery.collapse_deviation(kappas[:, ::-1], f(kappas))


def test_figure71_transitions_shift_by_the_effective_scale_and_the_curves_collapse():
    data, err_l1, err_l2 = fig71_problem()
    mid = 0.5 * (err_l1 + err_l2)

    def error_at(kappa):
        return sparse_recovery.population_error(data, diagonal.diagonal_argmin_Q(data.X, data.y, 4 * kappa).beta)

    # an independent prediction: the root of error(kappa) = mid (Brent, no grid), then alpha = kappa (1-s^2)/(1+s^2)
    kappa_star = np.exp(brentq(lambda lk: error_at(np.exp(lk)) - mid, np.log(1e-3), 0.0, xtol=1e-12))
    shapes = (0.0, 0.5, 0.9, 0.99)
    alphas = np.logspace(-5, 0, 26)  # 5 per decade
    errors = sparse_recovery.population_error_grid(data, alphas, shapes)
    transitions = sparse_recovery.figure71_transitions(alphas, shapes, errors, err_l1, err_l2)
    assert list(transitions) == list(shapes)
    for s, t in transitions.items():
        assert t == pytest.approx(kappa_star * (1 - s**2) / (1 + s**2), rel=1e-2)  # interpolation accuracy
    assert claims.transition_shift(transitions[0.0], transitions[0.99], err_l1, err_l2).text == (
        "yes (a shift of 2.0 decades)")
    kappas = np.array([diagonal.effective_scale(alphas, s) for s in shapes])
    assert sparse_recovery.collapse_deviation(kappas, errors) < claims.COLLAPSE_MAX / 2
    assert claims.collapses(sparse_recovery.collapse_deviation(kappas, errors)).verdict is Verdict.YES
    # against alpha instead of kappa the curves do not collapse
    assert sparse_recovery.collapse_deviation(np.broadcast_to(alphas, errors.shape), errors) > 0.3
    # min-l1 no better than min-l2: no shape has a transition; a curve that starts above the midpoint has none
    assert sparse_recovery.figure71_transitions(alphas, shapes, errors, err_l2, err_l1) == dict.fromkeys(shapes)
    late = sparse_recovery.figure71_transitions(alphas[15:], shapes, errors[:, 15:], err_l1, err_l2)
    assert late[0.9] is late[0.99] is None and late[0.0] == pytest.approx(transitions[0.0], rel=1e-12)
    assert sparse_recovery.transition_rows({0.0: 1e-3, 0.99: None}) == [
        {"s": 0.0, "transition α": "0.001", "transition κ": "0.001"},
        {"s": 0.99, "transition α": "none on this grid", "transition κ": "none on this grid"}]
    with pytest.raises(ValueError, match=r"errors must be \(shapes, alphas\)"):
        sparse_recovery.figure71_transitions(alphas, shapes[:2], errors, err_l1, err_l2)


def test_figure71_gd_points_check_the_smallest_and_largest_shape_over_one_kappa_window():
    sc = get_preset("book").shape
    alphas = sparse_recovery.figure71_alphas(sc)
    points = sparse_recovery.figure71_gd_points(sc)
    assert sorted({s for _, s in points}) == [sc.shapes[0], sc.shapes[-1]] == [0.0, 0.99]
    # s = 0: indices linspace(20 // 3, 2 * 20 // 3, 3) = 6, 9.5, 13 -> 6, 9, 13
    np.testing.assert_allclose([a for a, s in points if s == 0.0], alphas[[6, 9, 13]], rtol=1e-15)
    lo, hi = alphas[6], alphas[13]  # the kappa window (s = 0: kappa = alpha)
    big = [a for a, s in points if s == 0.99]
    assert len(big) == sc.gd_checks
    kap = diagonal.effective_scale(np.array(big), 0.99)
    assert np.all((kap >= lo * (1 - 1e-12)) & (kap <= hi * (1 + 1e-12)))
    # spread over every grid point of s = 0.99 in the window: those with 99.5 alpha in [lo, hi]
    inside = np.flatnonzero((99.5 * alphas >= lo) & (99.5 * alphas <= hi))
    assert big[0] == alphas[inside[0]] and big[-1] == alphas[inside[-1]]
    narrow = replace(sc, alpha_log10=(-2.0, -1.5), n_alpha=6)
    with pytest.raises(ValueError, match="no grid point of shape s = 0.99"):
        sparse_recovery.figure71_gd_points(narrow)


@pytest.mark.parametrize("seed", [1993, 0, 7])
def test_the_explorer_window_holds_the_teachers_support_and_the_heaviest_coordinates(seed):
    data = sparse_recovery.draw_sparse_regression(d=300, n_train=40, seed=seed)
    support = set(np.flatnonzero(data.beta_star))
    sparse, dense = (diagonal.diagonal_argmin_Q(data.X, data.y, 4 * diagonal.effective_scale(a, 0.0)).beta
                     for a in (1e-5, 1.0))
    window = sparse_recovery.explorer_window(data.beta_star, [sparse, dense], 20)
    assert support <= set(window) and len(window) == 20 and list(window) == sorted(set(window))
    # the rest are the largest max(|beta_sparse|, |beta_dense|) off the support, found here by brute force
    weight = np.maximum(np.abs(sparse), np.abs(dense))
    off = sorted((i for i in range(300) if i not in support), key=lambda i: (-weight[i], i))
    assert set(window) - support == set(off[:20 - len(support)])
    # the first coordinates alone (the old window) need not hold the support: the window does for any seed
    assert support <= set(sparse_recovery.explorer_window(data.beta_star, [dense], len(support)))


def test_the_explorer_window_refuses_a_mismatched_or_empty_window():
    with pytest.raises(ValueError, match="teacher's 3 coordinates"):
        sparse_recovery.explorer_window(np.array([0.0, 1.0, 0.0]), [np.zeros(4)])
    with pytest.raises(ValueError, match="at least one coordinate"):
        sparse_recovery.explorer_window(np.array([0.0, 1.0, 0.0]), [np.zeros(3)], 0)
