"""Part II closed forms (fibook.shape.closed_forms) against trained models (fibook.shape.training) and
independent references."""

import numpy as np
import pytest
from scipy.integrate import quad

from fibook.scales import get_scale
from fibook.shape import closed_forms as S
from fibook.shape import training as G

SMALL = get_scale("smoke").shape  # N = 10, d = 30 random problems


def problem(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((SMALL.n_small, SMALL.d_small)), rng.standard_normal(SMALL.n_small)


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


# ---- Theorem 4.1: diagonal networks -----------------------------------------------------------------------

SHAPES = [(0.01, 0.0), (0.01, 0.5), (1e-3, 0.3), (0.1, 0.9), (0.2, 0.7), (1.0, 0.99)]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(("alpha", "s"), SHAPES)
def test_gradient_flow_reaches_argmin_Q(seed, alpha, s):
    X, y = problem(seed)
    net = G.DiagonalNet()
    init = G.diagonal_init(alpha, s, X.shape[1])
    flow = G.gradient_flow(net, X, y, init, t_max=1e5)
    ref = S.diagonal_argmin_Q(X, y, 4 * S.effective_scale(alpha, s))
    assert flow.loss < 1e-20
    assert rel(flow.beta, ref.beta) < 1e-6
    # the constrained minimizer is also a KKT point of the primal: grad Q in range X^T
    grad_q = 0.5 * np.arcsinh(2 * ref.beta / (4 * S.effective_scale(alpha, s)))
    assert np.linalg.norm(grad_q - np.linalg.pinv(X) @ (X @ grad_q)) < 1e-8
    # conserved quantities are conserved along the flow
    before, after = G.conserved(net, init), G.conserved(net, flow.params)
    for key in before:
        np.testing.assert_allclose(after[key], before[key], atol=1e-9)


def test_tied_model_is_the_u_equals_v_case():
    X, y = problem(2)
    flow = G.gradient_flow(G.DiagonalNet(tied=True), X, y, G.diagonal_init(0.01, 0, X.shape[1], tied=True))
    assert rel(flow.beta, S.diagonal_argmin_Q(X, y, 4 * 0.01).beta) < 1e-6
    init = G.diagonal_init(0.01, 0, X.shape[1], tied=True)
    np.testing.assert_allclose(G.conserved(G.DiagonalNet(tied=True), flow.params)["u_plus*u_minus"],
                               init["u_plus"] * init["u_minus"], rtol=1e-8)


def test_bias_depends_on_effective_scale_not_product():
    X, y = problem(3)
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
    X, y = problem(4)
    init = G.diagonal_init(0.1, 0.5, 30)
    ref = S.diagonal_argmin_Q(X, y, 4 * S.effective_scale(0.1, 0.5)).beta
    errs = [rel(G.gradient_descent(G.DiagonalNet(), X, y, init, lr=lr, loss_tol=1e-24).beta, ref)
            for lr in (4e-3, 2e-3)]
    assert errs[1] < errs[0] < 1e-2  # first-order in the step


def test_large_scale_gives_min_l2_at_rate_one_over_k():
    X, y = problem(5)
    l2 = S.min_l2(X, y)
    dist = [np.linalg.norm(S.diagonal_argmin_Q(X, y, sk).beta - l2) for sk in (1e2, 1e4)]
    # q_k(x) = x^2 / (2 sqrt k) - x^4 / (6 k^{3/2}) + ...: the l2 error shrinks like 1/sqrt(k)^2
    assert dist[1] < 1e-6
    assert 0.5e-4 < dist[1] / dist[0] < 2e-4


def test_small_scale_approaches_min_l1_logarithmically():
    X, y = problem(6)
    l1 = S.min_l1(X, y)
    n1 = np.abs(l1).sum()
    # Q_k(beta) = L ||beta||_1 + R(beta) + O(sqrt k) with L = 1/2 log(2/sqrt k), R(beta) = sum |b|/2 (log 2|b| - 1)
    # and R >= -d/4, so 0 <= ||beta_k||_1 - ||beta_l1||_1 <= (R(beta_l1) + d/4) / L: a 1/log(1/sqrt k) rate.
    R = float(np.sum(np.abs(l1) / 2 * (np.log(2 * np.abs(l1) + 1e-300) - 1)))
    gaps = []
    for sk in (1e-6, 1e-30, 1e-100, 1e-300):
        beta = S.diagonal_argmin_Q(X, y, sk).beta
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
        assert S.q_k(x, sk) == pytest.approx(ref, rel=1e-10)
    # tiny t = 2x/sqrt k: series x^2/(2 sqrt k) - x^4/(6 k^{3/2})
    for x, sk in [(1e-9, 1.0), (1.0, 1e300), (-1e-200, 1e-100)]:
        series = x**2 / (2 * sk) * (1 - (x / sk) ** 2 / 3)
        assert S.q_k(x, sk) == pytest.approx(series, rel=1e-12)
        assert S.q_k(x, sk) > 0
    # huge t: sqrt k/4 + (|x|/2)(log(4|x|/sqrt k) - 1) up to O(k / |x|)
    for x, sk in [(1.0, 1e-300), (1e200, 1e-200), (-3.0, 1e-12)]:
        asym = sk / 4 + abs(x) / 2 * (np.log(4 * abs(x)) - np.log(sk) - 1)
        assert S.q_k(x, sk) == pytest.approx(asym, rel=1e-12)
    # vectorized, symmetric, and Q sums it
    xs = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(S.q_k(xs, 0.5), S.q_k(-xs, 0.5), rtol=0, atol=0)
    assert S.diagonal_Q(xs, 0.5) == pytest.approx(sum(S.q_k(x, 0.5) for x in xs), rel=1e-14)


def test_dual_newton_stable_for_extreme_k():
    X, y = problem(7)
    for sk in (1e-300, 1e-50, 1e50):
        sol = S.diagonal_argmin_Q(X, y, sk)
        assert np.all(np.isfinite(sol.beta))
        assert np.max(np.abs(X @ sol.beta - y)) < 1e-9


def test_bad_input_is_rejected_with_what_is_allowed():
    X, y = problem(8)
    with pytest.raises(ValueError, match=r"alpha must be finite and > 0"):
        G.diagonal_init(0.0, 0.5, 30)
    with pytest.raises(ValueError, match=r"shape s must lie in \[0, 1\)"):
        S.effective_scale(0.1, 1.0)
    with pytest.raises(ValueError, match=r"shape s must lie in \[0, 1\)"):
        G.diagonal_init(0.1, -0.2, 30)
    with pytest.raises(ValueError, match=r"neuron shape s must lie in \(-1, 1\)"):
        G.two_layer_init(0.1, 1.0, 30)
    with pytest.raises(ValueError, match=r"sqrt_k must be finite and > 0"):
        S.q_k(1.0, -1.0)
    with pytest.raises(ValueError, match=r"X must be \(N, d\) and y must be \(N,\)"):
        S.diagonal_argmin_Q(X, y[:-1], 1.0)
    with pytest.raises(ValueError, match=r"sqrt_k must be a scalar or have d = 30"):
        S.diagonal_argmin_Q(X, y, np.ones(5))
    with pytest.raises(ValueError, match=r"init shapes .* do not match d = 30"):
        G.gradient_flow(G.DiagonalNet(), X, y, G.diagonal_init(0.1, 0, 20))
    with pytest.raises(ValueError, match=r"its shape s must be 0"):
        G.diagonal_init(0.1, 0.5, 30, tied=True)
    with pytest.raises(ValueError, match=r"rho must lie in \(0, 1\]"):
        G.TwoLayerNet(rho=0.0)
