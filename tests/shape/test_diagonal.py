"""Part II closed forms (fibook.shape.diagonal, fibook.shape.sparse_recovery, fibook.shape.interpolators)
against trained models (fibook.shape.training) and independent references."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq
from synthetic import regression_problem, rel

from fibook.claims import Verdict
from fibook.presets import get_preset
from fibook.shape import claims, diagonal, interpolators, sparse_recovery
from fibook.shape import training as G

# ---- Theorem 4.1: diagonal networks -----------------------------------------------------------------------

SHAPES = [(0.01, 0.0), (0.01, 0.5), (1e-3, 0.3), (0.1, 0.9), (0.2, 0.7), (1.0, 0.99)]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(("alpha", "s"), SHAPES)
def test_gradient_flow_reaches_argmin_Q(seed, alpha, s):
    X, y = regression_problem(seed)
    net = G.DiagonalNet()
    init = G.diagonal_init(alpha, s, X.shape[1])
    flow = G.gradient_flow(net, X, y, init, t_max=1e5)
    ref = diagonal.diagonal_argmin_Q(X, y, 4 * diagonal.effective_scale(alpha, s))
    assert flow.loss < 1e-20
    assert rel(flow.beta, ref.beta) < 1e-6
    # the constrained minimizer is also a KKT point of the primal: grad Q in range X^T
    grad_q = 0.5 * np.arcsinh(2 * ref.beta / (4 * diagonal.effective_scale(alpha, s)))
    assert np.linalg.norm(grad_q - np.linalg.pinv(X) @ (X @ grad_q)) < 1e-8
    # conserved quantities are conserved along the flow
    before, after = G.conserved(net, init), G.conserved(net, flow.params)
    for key in before:
        np.testing.assert_allclose(after[key], before[key], atol=1e-9)


def test_tied_model_is_the_u_equals_v_case():
    X, y = regression_problem(2)
    flow = G.gradient_flow(G.DiagonalNet(tied=True), X, y, G.diagonal_init(0.01, 0, X.shape[1], tied=True))
    assert rel(flow.beta, diagonal.diagonal_argmin_Q(X, y, 4 * 0.01).beta) < 1e-6
    init = G.diagonal_init(0.01, 0, X.shape[1], tied=True)
    np.testing.assert_allclose(G.conserved(G.DiagonalNet(tied=True), flow.params)["u_plus*u_minus"],
                               init["u_plus"] * init["u_minus"], rtol=1e-8)


def test_bias_depends_on_effective_scale_not_product():
    X, y = regression_problem(3)
    # equal u0^2 + v0^2 = 0.02 (kappa = 0.01) from different products
    s = 0.9
    alpha = 0.01 * (1 - s**2) / (1 + s**2)
    a = G.gradient_flow(G.DiagonalNet(), X, y, G.diagonal_init(0.01, 0, 30)).beta
    b = G.gradient_flow(G.DiagonalNet(), X, y, G.diagonal_init(alpha, s, 30)).beta
    assert rel(a, b) < 1e-8
    # equal product 0.01, different shapes: a different interpolator
    c = G.gradient_flow(G.DiagonalNet(), X, y, G.diagonal_init(0.01, 0.9, 30)).beta
    assert rel(a, c) > 1e-2


def test_gd_with_small_steps_approaches_the_flow():
    X, y = regression_problem(4)
    init = G.diagonal_init(0.1, 0.5, 30)
    ref = diagonal.diagonal_argmin_Q(X, y, 4 * diagonal.effective_scale(0.1, 0.5)).beta
    errs = [rel(G.gradient_descent(G.DiagonalNet(), X, y, init, lr=lr, loss_tol=1e-24).beta, ref)
            for lr in (4e-3, 2e-3)]
    assert errs[1] < errs[0] < 1e-2  # first-order in the step


def test_large_scale_gives_min_l2_at_rate_one_over_k():
    X, y = regression_problem(5)
    l2 = interpolators.min_l2(X, y)
    dist = [np.linalg.norm(diagonal.diagonal_argmin_Q(X, y, sk).beta - l2) for sk in (1e2, 1e4)]
    # q_k(x) = x^2 / (2 sqrt k) - x^4 / (6 k^{3/2}) + ...: the l2 error shrinks like 1/sqrt(k)^2
    assert dist[1] < 1e-6
    assert 0.5e-4 < dist[1] / dist[0] < 2e-4


def test_small_scale_approaches_min_l1_logarithmically():
    X, y = regression_problem(6)
    l1 = interpolators.min_l1(X, y)
    n1 = np.abs(l1).sum()
    # Q_k(beta) = L ||beta||_1 + R(beta) + O(sqrt k) with L = 1/2 log(2/sqrt k), R(beta) = sum |b|/2 (log 2|b| - 1)
    # and R >= -d/4, so 0 <= ||beta_k||_1 - ||beta_l1||_1 <= (R(beta_l1) + d/4) / L: a 1/log(1/sqrt k) rate.
    R = float(np.sum(np.abs(l1) / 2 * (np.log(2 * np.abs(l1) + 1e-300) - 1)))
    gaps = []
    for sk in (1e-6, 1e-30, 1e-100, 1e-300):
        beta = diagonal.diagonal_argmin_Q(X, y, sk).beta
        L = 0.5 * np.log(2 / sk)
        gap = np.abs(beta).sum() - n1
        assert -1e-9 <= gap <= (R + X.shape[1] / 4) / L + 1e-9
        gaps.append(gap)
    assert gaps == sorted(gaps, reverse=True)
    assert gaps[-1] < 2e-2 * n1


def test_q_k_matches_integral_series_and_asymptotics():
    # moderate arguments: numerical quadrature of the defining integral 1/2 int_0^x arcsinh(2z / sqrt k) dz
    for x, sk in [(0.3, 1.0), (-2.0, 0.1), (5.0, 3.0), (1e-3, 1e-4)]:
        ref = quad(lambda z, sk=sk: 0.5 * np.arcsinh(2 * z / sk), 0, x, epsabs=0, epsrel=1e-13)[0]
        assert diagonal.q_k(x, sk) == pytest.approx(ref, rel=1e-10)
    # tiny t = 2x/sqrt k: series x^2/(2 sqrt k) - x^4/(6 k^{3/2})
    for x, sk in [(1e-9, 1.0), (1.0, 1e300), (-1e-200, 1e-100)]:
        series = x**2 / (2 * sk) * (1 - (x / sk) ** 2 / 3)
        assert diagonal.q_k(x, sk) == pytest.approx(series, rel=1e-12)
        assert diagonal.q_k(x, sk) > 0
    # huge t: sqrt k/4 + (|x|/2)(log(4|x|/sqrt k) - 1) up to O(k / |x|)
    for x, sk in [(1.0, 1e-300), (1e200, 1e-200), (-3.0, 1e-12)]:
        asym = sk / 4 + abs(x) / 2 * (np.log(4 * abs(x)) - np.log(sk) - 1)
        assert diagonal.q_k(x, sk) == pytest.approx(asym, rel=1e-12)
    # vectorized, symmetric, and Q sums it
    xs = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(diagonal.q_k(xs, 0.5), diagonal.q_k(-xs, 0.5), rtol=0, atol=0)
    assert diagonal.diagonal_Q(xs, 0.5) == pytest.approx(sum(diagonal.q_k(x, 0.5) for x in xs), rel=1e-14)


def test_dual_newton_stable_for_extreme_k():
    X, y = regression_problem(7)
    for sk in (1e-300, 1e-50, 1e50):
        sol = diagonal.diagonal_argmin_Q(X, y, sk)
        assert np.all(np.isfinite(sol.beta))
        assert np.max(np.abs(X @ sol.beta - y)) < 1e-9


def test_bad_input_is_rejected_with_what_is_allowed():
    X, y = regression_problem(8)
    with pytest.raises(ValueError, match=r"alpha must be finite and > 0"):
        G.diagonal_init(0.0, 0.5, 30)
    with pytest.raises(ValueError, match=r"shape s must lie in \[0, 1\)"):
        diagonal.effective_scale(0.1, 1.0)
    with pytest.raises(ValueError, match=r"shape s must lie in \[0, 1\)"):
        G.diagonal_init(0.1, -0.2, 30)
    with pytest.raises(ValueError, match=r"neuron shape s must lie in \(-1, 1\)"):
        G.two_layer_init(0.1, 1.0, 30)
    with pytest.raises(ValueError, match=r"sqrt_k must be finite and > 0"):
        diagonal.q_k(1.0, -1.0)
    with pytest.raises(ValueError, match=r"X must be \(N, d\) and y must be \(N,\)"):
        diagonal.diagonal_argmin_Q(X, y[:-1], 1.0)
    with pytest.raises(ValueError, match=r"sqrt_k must be a scalar or have d = 30"):
        diagonal.diagonal_argmin_Q(X, y, np.ones(5))
    with pytest.raises(ValueError, match=r"init shapes .* do not match d = 30"):
        G.gradient_flow(G.DiagonalNet(), X, y, G.diagonal_init(0.1, 0, 20))
    with pytest.raises(ValueError, match=r"its shape s must be 0"):
        G.diagonal_init(0.1, 0.5, 30, tied=True)
    with pytest.raises(ValueError, match=r"rho must lie in \(0, 1\]"):
        G.TwoLayerNet(rho=0.0)


# ---- Figure 7.1: transitions, collapse against kappa, the GD check -------------------------------------------


def fig71_problem():
    """A small sparse regression (d = 40, N = 20, 2-sparse teacher) whose exact-limit error rises from below to
    above the midpoint of its min-l1 (0.023) and min-l2 (0.549) errors, at kappa = 0.046."""
    data = sparse_recovery.draw_sparse_regression(d=40, n_train=20, sparsity=2, noise_var=0.01, n_test=500, seed=0)
    return (data, sparse_recovery.population_error(data, interpolators.min_l1(data.X, data.y)),
            sparse_recovery.population_error(data, interpolators.min_l2(data.X, data.y)))


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


def test_paper_gd_stops_at_the_training_mse_and_sees_only_kappa():
    data, _, _ = fig71_problem()
    n = data.X.shape[0]
    a = G.paper_gd(data, 0.05, 0.0, max_steps=1_000_000)
    assert a.stopped and a.steps % 1000 == 0 and a.steps < 1_000_000
    assert np.mean((data.X @ a.beta - data.y) ** 2) < 1e-4  # the paper's stop rule, on the mean squared error
    exact = diagonal.diagonal_argmin_Q(data.X, data.y, 4 * 0.05).beta
    assert a.distance == pytest.approx(np.linalg.norm(a.beta - exact), rel=1e-12)
    gap = sparse_recovery.population_error(data, a.beta) - sparse_recovery.population_error(data, exact)
    assert a.gap == pytest.approx(abs(gap), rel=1e-12)
    tight = G.paper_gd(data, 0.05, 0.0, max_steps=1_000_000, mse_tol=1e-8)
    assert tight.steps > a.steps and tight.distance < a.distance / 10 and tight.gap < a.gap / 10
    # same kappa, another shape: the same GD iterates (the (D, P) recursion); same alpha, another shape: not
    same_kappa = G.paper_gd(data, 0.05 * (1 - 0.9**2) / (1 + 0.9**2), 0.9, max_steps=1_000_000)
    assert same_kappa.steps == a.steps and rel(same_kappa.beta, a.beta) < 1e-10
    same_alpha = G.paper_gd(data, 0.05, 0.9, max_steps=1_000_000)
    assert rel(same_alpha.beta, a.beta) > 1e-2
    capped = G.paper_gd(data, 0.05, 0.0, max_steps=2000)
    assert not capped.stopped and capped.steps == 2000 and n == 20
    sc = get_preset("smoke").shape
    checks = G.figure71_gd_checks(sc, sparse_recovery.figure71_data(sc))
    assert [(c.alpha, c.s) for c in checks] == sparse_recovery.figure71_gd_points(sc)
    assert [c.s for c in checks] == [0.0, 0.9]


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
