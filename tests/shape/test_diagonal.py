"""Theorem 4.1's closed form for diagonal networks (fibook.shape.diagonal): the potential q_k, the interpolator
argmin Q_k s.t. X beta = y through its dual, and its kernel and rich limits, against independent references."""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import minimize
from synthetic import regression_problem

from fibook.shape import diagonal, interpolators


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


@pytest.mark.parametrize("sqrt_k", [0.5, np.array([0.05, 0.2, 0.5, 1.0, 2.0, 5.0])])
def test_argmin_Q_is_the_constrained_minimizer_a_generic_solver_finds(sqrt_k):
    """SLSQP on Q_k(beta) = sum sqrt k_i / 4 (1 - sqrt(1 + t_i^2) + t_i arcsinh t_i), t_i = 2 beta_i / sqrt k_i
    (the closed form of the integral, written out here) subject to X beta = y, from the minimum-l2 start."""
    rng = np.random.default_rng(11)
    X, y = rng.standard_normal((3, 6)), rng.standard_normal(3)
    sk = np.broadcast_to(sqrt_k, (6,))

    def Q(beta):
        t = 2 * beta / sk
        return float(np.sum(sk / 4 * (1 - np.sqrt(1 + t**2) + t * np.arcsinh(t))))

    def grad(beta):
        return 0.5 * np.arcsinh(2 * beta / sk)

    ref = minimize(Q, interpolators.min_l2(X, y), jac=grad, method="SLSQP",
                   constraints=[{"type": "eq", "fun": lambda b: X @ b - y, "jac": lambda b: X}],
                   options={"ftol": 1e-15, "maxiter": 1000})
    sol = diagonal.diagonal_argmin_Q(X, y, sqrt_k)
    assert ref.success and sol.beta == pytest.approx(ref.x, abs=1e-6)
    assert diagonal.diagonal_Q(sol.beta, sqrt_k) == pytest.approx(Q(sol.beta), rel=1e-12)
    assert Q(sol.beta) <= Q(ref.x) + 1e-12  # no worse than the generic solver's
    # stationarity: grad Q = X^T nu with the multipliers the dual returns
    assert grad(sol.beta) == pytest.approx(X.T @ sol.nu, abs=1e-10)


def test_bad_input_is_rejected_with_what_is_allowed():
    X, y = regression_problem(8)
    with pytest.raises(ValueError, match=r"shape s must lie in \[0, 1\)"):
        diagonal.effective_scale(0.1, 1.0)
    with pytest.raises(ValueError, match=r"sqrt_k must be finite and > 0"):
        diagonal.q_k(1.0, -1.0)
    with pytest.raises(ValueError, match=r"X must be \(N, d\) and y must be \(N,\)"):
        diagonal.diagonal_argmin_Q(X, y[:-1], 1.0)
    with pytest.raises(ValueError, match=r"sqrt_k must be a scalar or have d = 30"):
        diagonal.diagonal_argmin_Q(X, y, np.ones(5))
