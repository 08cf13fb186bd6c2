"""Diagonal linear networks and their implicit regularizer, Theorem 4.1 of Azulay et al. (ICML 2021).

A diagonal network ``beta = u+ * v+ - u- * v-`` with the symmetric initialization of scale ``alpha = u0 v0`` and
shape ``s = (v0 - u0) / (v0 + u0)`` (:func:`diagonal_u0_v0`) is driven by gradient flow to
``argmin Q_k(beta) s.t. X beta = y`` (Theorem 4.1), with ``Q_k(beta) = sum_i q_k(beta_i)`` (:func:`q_k`,
:func:`diagonal_Q`) and ``sqrt(k) = 2 (u0^2 + v0^2) = 4 kappa``. The initialization enters only through the
effective scale ``kappa = alpha (1 + s^2) / (1 - s^2)`` (:func:`effective_scale`). :func:`diagonal_argmin_Q` finds
the interpolator through the dual of the constrained problem, with a continuation in ``sqrt(k)`` for the deep rich
regime.

Chapter of ``chapters/part2_shape/``: "Scale and shape in diagonal networks" (``diagonal_networks``); the trained
networks it is checked against are in :mod:`fibook.shape.training`, Figure 7.1's experiment on it in
:mod:`fibook.shape.sparse_recovery`.
"""

from __future__ import annotations

import numpy as np

from fibook.checks import positive
from fibook.shape.interpolators import DualSolution, check_alpha_s, check_problem, dual_newton


def check_sqrt_k(sqrt_k):
    """Validate ``sqrt(k)``: finite and > 0 (scalar or one value per coordinate)."""
    return positive("sqrt_k", sqrt_k)


def diagonal_u0_v0(alpha, s):
    """Initial layer scales of Theorem 4.1's symmetric diagonal init (the official code's ``symmetric_init``).

    ``u0 = sqrt(alpha (1 - s) / (1 + s))``, ``v0 = sqrt(alpha (1 + s) / (1 - s))``, so ``alpha = u0 v0`` (the
    product, as in the official code) and ``s = (v0 - u0) / (v0 + u0)`` in ``[0, 1)``.
    """
    check_alpha_s(alpha, s)
    alpha, s = np.asarray(alpha, dtype=float), np.asarray(s, dtype=float)
    return np.sqrt(alpha * (1 - s) / (1 + s)), np.sqrt(alpha * (1 + s) / (1 - s))


def effective_scale(alpha, s):
    """The effective scale ``kappa = alpha (1 + s^2) / (1 - s^2) = (u0^2 + v0^2) / 2 = sqrt(k) / 4``.

    Theorem 4.1's regularizer depends on the initialization only through ``kappa``: two inits with equal
    ``u0^2 + v0^2`` reach the same interpolator, whatever their product ``alpha``.
    """
    check_alpha_s(alpha, s)
    alpha, s = np.asarray(alpha, dtype=float), np.asarray(s, dtype=float)
    return alpha * (1 + s**2) / (1 - s**2)


def _asinh_ratio(x, sqrt_k):
    """``arcsinh(2 x / sqrt(k))`` without overflow of the ratio (uses ``log(4|x|/sqrt k)`` when it is huge)."""
    x, sqrt_k = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(sqrt_k, dtype=float))
    big = np.abs(x) * 1e-150 > sqrt_k
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        direct = np.arcsinh(2 * x / sqrt_k)
        asym = np.sign(x) * (np.log(4 * np.abs(x)) - np.log(sqrt_k))
    return np.where(big, asym, direct)


def q_k(x, sqrt_k):
    """Theorem 4.1's per-coordinate potential ``q_k(x) = 1/2 int_0^x arcsinh(2 z / sqrt k) dz``.

    Closed form ``sqrt(k)/4 [1 - sqrt(1 + t^2) + t arcsinh t]`` with ``t = 2x / sqrt(k)``, evaluated as
    ``(x / 2) [arcsinh t - t / (1 + sqrt(1 + t^2))]``, which has no cancellation for tiny ``t`` (kernel limit
    ``x^2 / (2 sqrt k)``) and no overflow for huge ``t`` (rich limit ``(x/2)(log(4|x|/sqrt k) - 1)``).
    Vectorized over ``x`` and ``sqrt_k`` (broadcast).
    """
    sqrt_k = check_sqrt_k(sqrt_k)
    x = np.asarray(x, dtype=float)
    x, sqrt_k = np.broadcast_arrays(x, sqrt_k)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        t = 2 * x / sqrt_k
        small = np.abs(t) <= 1
        # t / (1 + sqrt(1 + t^2)), written with 1/|t| when |t| > 1 so that t = inf gives sign(t).
        inv = np.where(small, 1.0, 1 / np.abs(np.where(small, 1.0, t)))
        ratio = np.where(small, t / (1 + np.sqrt(1 + t**2)), np.sign(x) / (inv + np.sqrt(inv**2 + 1)))
    return 0.5 * x * (_asinh_ratio(x, sqrt_k) - ratio)


def diagonal_Q(beta, sqrt_k):
    """Theorem 4.1: ``Q_k(beta) = sum_i q_{k_i}(beta_i)`` (sum over the last axis; ``sqrt_k`` scalar or per i)."""
    beta = np.asarray(beta, dtype=float)
    sk = check_sqrt_k(sqrt_k)
    if sk.ndim and sk.shape[-1] != beta.shape[-1]:
        raise ValueError(f"sqrt_k must be a scalar or have {beta.shape[-1]} entries (one per coordinate), "
                         f"got shape {sk.shape}")
    return q_k(beta, sk).sum(axis=-1)


def _primal_from_dual(z, log_c):
    """``beta = (sqrt k / 2) sinh(2z)``, ``h = sqrt(k) cosh(2z)`` and ``(sqrt k / 4)(cosh 2z - 1)`` with
    ``log_c = log(sqrt k / 4)``, computed from exponents so that tiny ``sqrt k`` with large ``z`` cannot overflow."""
    a = 2 * np.abs(z)
    hi, lo = np.exp(a + log_c), np.exp(-a + log_c)  # (sqrt k / 4) e^{+-2|z|}
    hess = 2 * (hi + lo)
    # Below |z| = 150 use sinh directly (no cancellation at small z); above, the exponent forms cannot overflow
    # and the dropped e^{-2|z|} terms are below rounding.
    moderate = np.abs(z) < 150
    zc = np.where(moderate, z, 0.0)
    c = np.exp(log_c)
    beta = np.where(moderate, 2 * c * np.sinh(2 * zc), np.sign(z) * hi)
    conj = np.where(moderate, 2 * c * np.sinh(zc) ** 2, hi / 2)
    return beta, hess, conj


def diagonal_argmin_Q(X, y, sqrt_k, *, tol=1e-12, max_iter=200):
    """Theorem 4.1's interpolator ``argmin_beta Q_k(beta) s.t. X beta = y``, solved through its dual.

    Stationarity gives ``q_k'(beta_i) = 1/2 arcsinh(2 beta_i / sqrt k_i) = (X^T nu)_i``, so
    ``beta_i(nu) = (sqrt k_i / 2) sinh(2 (X^T nu)_i)``, and ``nu`` minimizes the smooth convex dual
    ``D(nu) = sum_i (sqrt k_i / 4)(cosh(2 (X^T nu)_i) - 1) - nu^T y`` with Hessian
    ``X diag(sqrt k_i cosh 2z_i) X^T``. Newton with backtracking on ``nu``; for tiny ``sqrt k`` (deep rich
    regime, ``z ~ L = 1/2 log(2 / sqrt k)``) it continues from ``sqrt k`` = 1 down to the target, rescaling
    ``nu`` by the ratio of the ``L``'s at each stage. Stops at ``max |X beta - y| <= tol max(1, max|y|)``.
    """
    X, y = check_problem(X, y)
    sk = check_sqrt_k(sqrt_k)
    if sk.ndim and sk.shape != (X.shape[1],):
        raise ValueError(f"sqrt_k must be a scalar or have d = {X.shape[1]} entries, got shape {sk.shape}")
    sk = np.broadcast_to(sk, (X.shape[1],))

    def solve(factor, nu0):
        log_c = np.log(sk * factor / 4)

        def primal(nu):
            z = X.T @ nu
            beta, h, conj = _primal_from_dual(z, log_c)
            return beta, (X * h) @ X.T, float(conj.sum() - nu @ y)

        return dual_newton(X, y, primal, nu0, tol=tol, max_iter=max_iter)

    def level(factor):
        return max(1.0, 0.5 * np.log(2 / float(np.median(sk) * factor)))

    smallest = float(np.median(sk))
    factors = [1.0]
    if smallest < 1e-2:  # continuation: sqrt_k * f from ~1 down to sqrt_k, four decades per stage
        n = int(np.ceil(-np.log10(smallest) / 4))
        factors = list(np.logspace(-np.log10(smallest), 0, n + 1)) + [1.0]
        factors = sorted(set(factors), reverse=True)
    nu = np.zeros(X.shape[0])
    iters = 0
    for i, f in enumerate(factors):
        if i:
            nu = nu * level(f) / level(factors[i - 1])
        sol = solve(f, nu)
        nu, iters = sol.nu, iters + sol.iterations
    return DualSolution(sol.beta, sol.nu, iters, sol.residual)
