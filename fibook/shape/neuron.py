"""One hidden neuron and two-layer linear networks: Theorem 6.1 of Azulay et al. (ICML 2021) and its time warp.

A linear neuron ``f(x) = a w^T x`` of scale ``alpha = |a0| ||w0||`` and shape
``s = (|a0| - ||w0||) / (|a0| + ||w0||)`` (:func:`neuron_a_w0`) conserves its balancedness
``delta = a0^2 - ||w0||^2`` (:func:`neuron_delta`) and is driven by gradient flow to the minimizer of Theorem 6.1's
regularizer, :func:`neuron_Q` (written without cancellation; :func:`neuron_Q_paper_form` is the paper's form).
That regularizer comes from mirror descent with the time warp ``|a(t)|``: the potential :func:`neuron_potential`
and the metric :func:`neuron_metric` of the flow. The interpolator is explicit, :func:`neuron_endpoint`
``beta_inf = X^+ y + a_inf P_perp w0``. A leaky-ReLU neuron is the linear one on transformed targets
(:func:`leaky_targets`, :func:`leaky_inverse`); for a width-m two-layer linear network the paper's code sums the
regularizer over the neurons, whose minimizer is :func:`summed_neuron_argmin` (exact only for m = 1).

Chapter of ``chapters/part2_shape/``: "Beyond mirror descent" (``beyond_mirror_descent``); the trained networks it
is checked against are in :mod:`fibook.shape.training`.
"""

from __future__ import annotations

import warnings

import numpy as np

from fibook.shape.interpolators import check_alpha_s, check_problem, dual_newton


def neuron_a_w0(alpha, s):
    """Theorem 6.1's initialization (the official code's ``symmetric_init``):
    ``|a0| = sqrt(alpha (1 + s) / (1 - s))``, ``||w0|| = sqrt(alpha (1 - s) / (1 + s))`` for a neuron of scale
    ``alpha = |a0| ||w0||`` and shape ``s = (|a0| - ||w0||) / (|a0| + ||w0||)`` in ``(-1, 1)``."""
    check_alpha_s(alpha, s, shape_range="neuron")
    alpha, s = np.asarray(alpha, dtype=float), np.asarray(s, dtype=float)
    return np.sqrt(alpha * (1 + s) / (1 - s)), np.sqrt(alpha * (1 - s) / (1 + s))


def neuron_delta(alpha, s):
    """Theorem 6.1's balancedness ``delta = a0^2 - ||w0||^2 = 4 alpha s / (1 - s^2)`` (conserved by gradient
    flow)."""
    check_alpha_s(alpha, s, shape_range="neuron")
    return 4 * np.asarray(alpha, dtype=float) * np.asarray(s, dtype=float) / (1 - np.asarray(s, dtype=float) ** 2)


def _a_squared(norm2, delta):
    """``a^2 = (delta + sqrt(delta^2 + 4 n2)) / 2``, the root of ``a^4 - delta a^2 - n2 = 0``, without
    cancellation when ``delta << 0`` (then ``a^2 = 2 n2 / (sqrt(delta^2 + 4 n2) - delta)``)."""
    norm2, delta = np.asarray(norm2, dtype=float), np.asarray(delta, dtype=float)
    root = np.sqrt(delta**2 + 4 * norm2)
    with np.errstate(divide="ignore", invalid="ignore"):
        neg = np.where(root - delta > 0, 2 * norm2 / (root - delta), 0.0)
    return np.where(delta >= 0, (delta + root) / 2, neg)


def neuron_potential(beta, delta):
    """The time-warped mirror potential ``h(beta) = |a| ||w||^2 - |a|^3 / 3`` of a neuron with ``beta = a w``.

    On the conservation manifold ``a^2 - ||w||^2 = delta``: ``a^2 = S + delta/2`` with
    ``S = sqrt(||beta||^2 + delta^2/4)`` (computed by :func:`_a_squared`) and ``||w||^2 = a^2 - delta``, so
    ``h = |a| (2 a^2 / 3 - delta)``. Its gradient is ``beta / |a| = sign(a) w`` and its Hessian is
    ``|a| M^{-1}`` with ``M = a^2 I + w w^T`` (the time warp ``g = |a|``). Sums over the last axis of ``beta``.
    Theorem 6.1's regularizer is ``3/2 [h(beta) - m0^T beta]`` (:func:`neuron_Q`).
    """
    beta = np.asarray(beta, dtype=float)
    a2 = _a_squared(np.sum(beta**2, axis=-1), delta)
    return np.sqrt(a2) * (2 * a2 / 3 - delta)


def neuron_Q(beta, delta, mirror0):
    """Theorem 6.1's regularizer for one hidden neuron, ``q(w~) = 3/2 [h(w~) - m0^T w~]`` with ``m0 = sign(a) w0``.

    This equals the paper's ``(||w~||^2 - delta/2 (delta/2 + S)) sqrt(S - delta/2) / ||w~||
    - 3/2 sqrt(S0 - delta/2) w~(0)^T w~ / ||w~(0)||`` with ``S = sqrt(||w~||^2 + delta^2/4)``, but is written as
    ``sqrt(S + delta/2) (S - delta)`` (:func:`neuron_potential`), which loses no digits when
    ``delta >> ||w~||``. ``mirror0`` is ``sign(a0) w0`` when ``a(t)`` keeps its sign, ``sign(a_inf) w0`` otherwise.
    """
    beta = np.asarray(beta, dtype=float)
    return 1.5 * (neuron_potential(beta, delta) - beta @ np.asarray(mirror0, dtype=float))


def neuron_Q_paper_form(beta, delta, beta0):
    """Theorem 6.1 exactly as the paper (and its code) writes it; cancels badly for ``delta >> ||beta||``.

    Kept as an independent check of :func:`neuron_Q` (``beta0 = a0 w0``, and ``sign(a0)`` is assumed).
    """
    beta, beta0 = np.asarray(beta, dtype=float), np.asarray(beta0, dtype=float)
    n2, n0 = beta @ beta, np.linalg.norm(beta0)
    S, S0 = np.sqrt(n2 + delta**2 / 4), np.sqrt(n0**2 + delta**2 / 4)
    return ((n2 - delta / 2 * (delta / 2 + S)) * np.sqrt(S - delta / 2) / np.sqrt(n2)
            - 1.5 * np.sqrt(S0 - delta / 2) * (beta0 @ beta) / n0)


def neuron_metric(beta, delta):
    """The metric of Theorem 6.1's neuron: ``M = J J^T = a^2 I + w w^T`` with ``w = beta / a`` on the
    conservation manifold, so that gradient flow moves ``beta`` by ``d beta/dt = -M X^T (X beta - y)``.
    ``M^{-1}`` is not a Hessian; ``|a| M^{-1}`` is."""
    beta = np.asarray(beta, dtype=float)
    a2 = float(_a_squared(beta @ beta, delta))
    return a2 * np.eye(beta.size) + np.outer(beta, beta) / a2


def neuron_endpoint(X, y, a0, w0, *, a_sign=None):
    """Theorem 6.1 solved explicitly: ``beta_inf = X^+ y + a_inf P_perp w0``.

    The mirror variable ``sign(a) w`` moves only in ``range X^T``, so ``P_perp w`` is conserved and
    ``beta_inf = a_inf w_inf`` has range part ``X^+ y``; the conserved ``delta = a0^2 - ||w0||^2`` then fixes
    ``a_inf^2 = (c + sqrt(c^2 + 4 ||X^+ y||^2)) / 2`` with ``c = delta + ||P_perp w0||^2``. The sign of ``a_inf``
    is ``sign(a0)`` whenever ``a(t)`` never crosses zero, which is guaranteed for ``delta > 0``; for ``delta < 0``
    it may flip, so pass ``a_sign`` (e.g. from a trained network) — a warning is raised if it differs from a0's.
    """
    X, y = check_problem(X, y)
    w0 = np.asarray(w0, dtype=float)
    if w0.shape != (X.shape[1],):
        raise ValueError(f"w0 must have shape ({X.shape[1]},) to match X, got {w0.shape}")
    if a0 == 0:
        raise ValueError("a0 must be non-zero (a neuron with a0 = 0 and delta < 0 has no defined sign)")
    sign0 = float(np.sign(a0))
    sign = sign0 if a_sign is None else float(np.sign(a_sign))
    if sign != sign0:
        warnings.warn("a(t) changed sign during training: using sign(a_inf), not sign(a0)", stacklevel=2)
    pinv = np.linalg.pinv(X)
    b_range = pinv @ y
    w_perp = w0 - pinv @ (X @ w0)
    delta = a0**2 - w0 @ w0
    a_inf = sign * np.sqrt(_a_squared(b_range @ b_range, delta + w_perp @ w_perp))
    return b_range + a_inf * w_perp


def leaky_inverse(z, rho):
    """Inverse of the leaky ReLU ``sigma(z) = max(z, rho z)``: ``z`` for ``z > 0``, ``z / rho`` otherwise."""
    if not 0 < rho < 1:
        raise ValueError(f"leaky slope rho must lie in (0, 1), got {rho!r} (rho = 0, the ReLU, has no inverse)")
    z = np.asarray(z, dtype=float)
    return np.where(z > 0, z, z / rho)


def leaky_targets(y, rho, a_sign):
    """Targets that turn a leaky-ReLU neuron ``a sigma(w^T x)`` into a linear one with ``beta = a w``.

    For fixed ``sign(a)``, ``a sigma(w^T x) = sign(a) sigma(sign(a) beta^T x)``, so zero loss is the linear
    constraint ``beta^T x_n = sign(a) sigma^{-1}(sign(a) y_n)``; Theorem 6.1 then applies with these targets.
    """
    sign = float(np.sign(a_sign))
    if sign == 0:
        raise ValueError("a_sign must be non-zero")
    return sign * leaky_inverse(sign * np.asarray(y, dtype=float), rho)


def summed_neuron_argmin(X, y, a0, W0, *, tol=1e-10, max_iter=100):
    """Minimizer of the *summed* Theorem-6.1 regularizer of a width-m network, ``sum_i q_i(w~_i)`` s.t.
    ``X sum_i w~_i = y`` (the official code's form for m > 1; exact only for m = 1).

    Stationarity gives one multiplier ``nu`` for all neurons: ``sign(a_i) w_i = m_i + X^T nu`` with
    ``m_i = sign(a0_i) w0_i``, hence ``w~_i(nu) = sqrt(delta_i + ||z_i||^2) z_i`` with ``z_i = m_i + X^T nu``.
    ``nu`` solves ``X sum_i w~_i(nu) = y`` by Newton on the convex dual. Returns the per-neuron ``w~_i`` (m, d).
    Gradient flow instead gives each neuron its own multiplier (its own time warp ``|a_i(t)|``).
    """
    X, y = check_problem(X, y)
    a0, W0 = np.atleast_1d(np.asarray(a0, dtype=float)), np.atleast_2d(np.asarray(W0, dtype=float))
    if W0.shape != (a0.size, X.shape[1]):
        raise ValueError(f"W0 must have shape (m, d) = ({a0.size}, {X.shape[1]}), got {W0.shape}")
    delta = a0**2 - np.sum(W0**2, axis=1)
    M0 = np.sign(a0)[:, None] * W0

    def primal(nu):
        Z = M0 + (X.T @ nu)[None, :]
        r2 = delta + np.sum(Z**2, axis=1)
        if np.any(r2 <= 0):
            return None, None, np.inf
        r = np.sqrt(r2)
        B = r[:, None] * Z
        H = sum(X @ (r[i] * np.eye(X.shape[1]) + np.outer(Z[i], Z[i]) / r[i]) @ X.T for i in range(a0.size))
        # dual objective: sum_i (delta_i + ||z_i||^2)^{3/2} / 3 - nu^T y  (its gradient is X sum_i w~_i - y)
        return B, H, float(np.sum(r2**1.5) / 3 - nu @ y)

    def primal_sum(nu):
        B, H, D = primal(nu)
        return (None if B is None else B.sum(axis=0)), H, D

    sol = dual_newton(X, y, primal_sum, np.zeros(X.shape[0]), tol=tol, max_iter=max_iter)
    return primal(sol.nu)[0]
