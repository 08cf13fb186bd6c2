"""Closed-form implicit regularizers of gradient flow (Part II; Azulay et al., ICML 2021).

Gradient flow on ``L = 1/2 ||X beta - y||^2`` over an over-parametrized model of a linear predictor ``beta``
converges (when it reaches zero loss) to ``argmin Q(beta) s.t. X beta = y`` for a model- and
initialization-dependent *implicit regularizer* ``Q``. This module holds the regularizers and their
constrained minimizers; :mod:`fibook.shape.training` holds the trained models they are checked against.

* Diagonal networks ``beta = u+ * v+ - u- * v-`` (Theorem 4.1): :func:`q_k`, :func:`diagonal_Q`,
  :func:`diagonal_argmin_Q`, with ``sqrt(k) = 2 (u0^2 + v0^2) = 4 kappa`` and the effective scale
  ``kappa = alpha (1 + s^2) / (1 - s^2)`` (:func:`effective_scale`).
* One hidden linear neuron ``f(x) = a w^T x`` (Theorem 6.1): :func:`neuron_Q` in a cancellation-free form,
  the explicit endpoint :func:`neuron_endpoint` ``beta_inf = X^+ y + a_inf P_perp w0``, the time-warped mirror
  potential :func:`neuron_potential` and metric :func:`neuron_metric`; the leaky-ReLU neuron through
  :func:`leaky_targets`; the summed regularizer of a width-m network, :func:`summed_neuron_argmin`.
* Reference interpolators :func:`min_l2`, :func:`min_l1`, and the paper's sparse-regression experiment
  (section 9 of the paper, after Woodworth et al. 2020): :func:`sparse_regression`, :func:`population_error`;
  Figure 7.1's grid (:func:`figure71_errors`), its transitions (:func:`figure71_transitions`, the midpoint
  crossing :func:`first_crossing`), the collapse against ``kappa`` (:func:`collapse_deviation`) and the grid
  points re-run with gradient descent (:func:`figure71_gd_points`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from fibook.checks import positive

# --------------------------------------------------------------------------------------------------------------
# Input checks


def check_alpha_s(alpha, s, *, shape_range: str = "diagonal"):
    """Validate a scale ``alpha > 0`` and a shape ``s`` (diagonal: ``0 <= s < 1``; neuron: ``-1 < s < 1``)."""
    positive("scale alpha", alpha)
    s_a = np.asarray(s, dtype=float)
    if shape_range == "diagonal":
        if not np.all((s_a >= 0) & (s_a < 1)):
            raise ValueError(f"diagonal shape s must lie in [0, 1), got {s!r}")
    elif not np.all((s_a > -1) & (s_a < 1)):
        raise ValueError(f"neuron shape s must lie in (-1, 1), got {s!r}")


def check_sqrt_k(sqrt_k):
    """Validate ``sqrt(k)``: finite and > 0 (scalar or one value per coordinate)."""
    return positive("sqrt_k", sqrt_k)


def check_problem(X, y):
    """Validate a regression problem: ``X`` of shape (N, d), ``y`` of shape (N,), finite; return float arrays."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be (N, d) and y must be (N,) with the same N; got X {X.shape}, y {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite")
    return X, y


# --------------------------------------------------------------------------------------------------------------
# Diagonal networks (Theorem 4.1)


def diagonal_u0_v0(alpha, s):
    """Initial layer scales of the symmetric diagonal init (paper's ``symmetric_init``).

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


@dataclass(frozen=True)
class DualSolution:
    """A constrained minimizer found through the dual: ``beta``, the multipliers ``nu``, Newton iterations and
    the final constraint residual ``max |X beta - y|``."""

    beta: np.ndarray
    nu: np.ndarray
    iterations: int
    residual: float


def _newton(X, y, primal, nu0, *, tol, max_iter):
    """Newton with backtracking on a smooth convex dual ``D(nu) = phi*(X^T nu) - nu^T y``.

    ``primal(nu)`` returns ``(beta(nu), J(nu), D(nu))`` with ``beta = grad phi*(X^T nu)`` and ``J`` the Hessian
    of ``D`` (N x N). Stops when ``max |X beta - y| <= tol * max(1, max |y|)``.
    """
    nu = nu0.copy()
    beta, J, D = primal(nu)
    scale = tol * max(1.0, float(np.max(np.abs(y))))
    for it in range(max_iter):
        g = X @ beta - y
        if np.max(np.abs(g)) <= scale:
            return DualSolution(beta, nu, it, float(np.max(np.abs(g))))
        step = np.linalg.solve(J, -g)
        slope = float(g @ step)
        t = 1.0
        while True:
            cand = nu + t * step
            with np.errstate(over="ignore", invalid="ignore"):
                b2, J2, D2 = primal(cand)
            if np.isfinite(D2) and D2 <= D + 1e-4 * t * slope + 1e-15 * abs(D):
                break
            t *= 0.5
            if t < 1e-20:
                raise RuntimeError("dual Newton line search failed; the problem may have no interpolator")
        nu, beta, J, D = cand, b2, J2, D2
    g = X @ beta - y
    raise RuntimeError(f"dual Newton did not converge in {max_iter} iterations (residual {np.max(np.abs(g)):.2e})")


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

        return _newton(X, y, primal, nu0, tol=tol, max_iter=max_iter)

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


# --------------------------------------------------------------------------------------------------------------
# Reference interpolators


def min_l2(X, y):
    """The minimum-l2-norm interpolator ``X^+ y`` (kernel limit of every regularizer of this Part)."""
    X, y = check_problem(X, y)
    return np.linalg.pinv(X) @ y


def min_l1(X, y):
    """The minimum-l1-norm interpolator, a linear program on ``beta = p - n`` with ``p, n >= 0`` (HiGHS)."""
    X, y = check_problem(X, y)
    d = X.shape[1]
    res = linprog(np.ones(2 * d), A_eq=np.hstack([X, -X]), b_eq=y, bounds=(0, None), method="highs")
    if not res.success:
        raise RuntimeError(f"min-l1 linear program failed: {res.message}")
    return res.x[:d] - res.x[d:]


def projector_null(X):
    """``P_perp``, the orthogonal projector onto ``ker X``: ``I - X^+ X``."""
    X = np.asarray(X, dtype=float)
    return np.eye(X.shape[1]) - np.linalg.pinv(X) @ X


# --------------------------------------------------------------------------------------------------------------
# One hidden neuron (Theorem 6.1) and its time warp


def neuron_a_w0(alpha, s):
    """``|a0| = sqrt(alpha (1 + s) / (1 - s))``, ``||w0|| = sqrt(alpha (1 - s) / (1 + s))`` for a neuron of scale
    ``alpha = |a0| ||w0||`` and shape ``s = (|a0| - ||w0||) / (|a0| + ||w0||)`` in ``(-1, 1)``."""
    check_alpha_s(alpha, s, shape_range="neuron")
    alpha, s = np.asarray(alpha, dtype=float), np.asarray(s, dtype=float)
    return np.sqrt(alpha * (1 + s) / (1 - s)), np.sqrt(alpha * (1 - s) / (1 + s))


def neuron_delta(alpha, s):
    """Balancedness ``delta = a0^2 - ||w0||^2 = 4 alpha s / (1 - s^2)`` (conserved by gradient flow)."""
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
    """``M = J J^T = a^2 I + w w^T`` with ``w = beta / a`` on the conservation manifold, so that gradient flow
    moves ``beta`` by ``d beta/dt = -M X^T (X beta - y)``. ``M^{-1}`` is not a Hessian; ``|a| M^{-1}`` is."""
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

    sol = _newton(X, y, primal_sum, np.zeros(X.shape[0]), tol=tol, max_iter=max_iter)
    return primal(sol.nu)[0]


# --------------------------------------------------------------------------------------------------------------
# The paper's experiment (section 9; Woodworth et al. 2020's sparse regression)


@dataclass(frozen=True)
class SparseRegression:
    """Training and test data of the sparse-regression experiment, and the teacher ``beta_star``."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    beta_star: np.ndarray


def sparse_regression(d=1000, n_train=100, sparsity=5, noise_var=0.01, n_test=2000, seed=1993):
    """The paper's data: ``x ~ N(0, I_d)``, ``y ~ N(<beta*, x>, noise_var)``, ``beta*`` r-sparse with entries
    ``1/sqrt(r)`` on a uniformly random support; noiseless test labels.

    Draw order of the official code (legacy ``np.random`` generator, seed 1993 for the figures): training
    inputs, test inputs, support, noise.
    """
    if min(d, n_train, sparsity, n_test) < 1 or sparsity > d or noise_var < 0:
        raise ValueError("need d, n_train, n_test >= 1, 1 <= sparsity <= d and noise_var >= 0")
    rs = np.random.RandomState(seed)
    X = rs.multivariate_normal(np.zeros(d), np.eye(d), n_train)
    X_test = rs.multivariate_normal(np.zeros(d), np.eye(d), n_test)
    support = rs.choice(d, sparsity, replace=False)
    beta_star = np.zeros(d)
    beta_star[support] = 1 / np.sqrt(sparsity)
    y = X @ beta_star + np.sqrt(noise_var) * rs.randn(n_train)
    return SparseRegression(X, y, X_test, X_test @ beta_star, beta_star)


def population_error(data: SparseRegression, beta):
    """Test mean squared error ``||y_test - X_test beta||^2 / n_test`` (the paper's population error)."""
    return float(np.mean((data.y_test - data.X_test @ np.asarray(beta, dtype=float)) ** 2))


def population_error_grid(data: SparseRegression, alphas, shapes):
    """Population error of Theorem 4.1's interpolator for every (shape, alpha): an array (len(shapes), len(alphas)).

    Figure 7.1 of the paper (exact gradient-flow limit instead of early-stopped GD).
    """
    out = np.empty((len(shapes), len(alphas)))
    for i, s in enumerate(shapes):
        for j, a in enumerate(alphas):
            sol = diagonal_argmin_Q(data.X, data.y, 4 * effective_scale(a, s))
            out[i, j] = population_error(data, sol.beta)
    return out


def figure71_alphas(sc):
    """The scales ``alpha`` of Figure 7.1 at a :class:`fibook.scales.ShapeScale`: ``n_alpha`` log-spaced values."""
    return np.logspace(*sc.alpha_log10, sc.n_alpha)


def figure71_data(sc, instance=0):
    """Data draw ``instance`` of the named experiment "Figure 7.1" (paper section 9) at a ShapeScale.

    Instance 0 is the authors' draw (legacy generator, seed 1993); instance ``i > 0`` uses seed ``1993 + i``.
    """
    return sparse_regression(sc.d, sc.n_train, sc.sparsity, sc.noise_var, sc.n_test, seed=1993 + instance)


def figure71_errors(sc):
    """Figure 7.1: population error of the gradient-flow limit on the (shape x alpha) grid of a ShapeScale,
    for each of its ``n_instances`` data draws: an array (n_instances, len(shapes), n_alpha)."""
    alphas = figure71_alphas(sc)
    return np.stack([population_error_grid(figure71_data(sc, i), alphas, sc.shapes) for i in range(sc.n_instances)])


def figure71_gd_points(sc):
    """The grid points of Figure 7.1 that are re-run with the paper's gradient-descent protocol, as a list of
    ``(alpha, s)``: for the smallest and for the largest shape of the ShapeScale ``sc``, ``sc.gd_checks`` of its
    grid points, spread evenly by index over those whose effective scale ``kappa = alpha (1+s^2)/(1-s^2)`` lies in
    the window ``[kappa(alpha_lo, s_0), kappa(alpha_hi, s_0)]`` with ``lo = n // 3``, ``hi = 2 n // 3`` (``n``
    scales): the middle third of the smallest shape's curve, where its transition lies. For the smallest shape
    these are ``linspace(lo, hi, gd_checks)``; a larger shape is checked over the same range of ``kappa``, i.e. at
    its own transition (fewer points when fewer grid points lie in the window; none is a ValueError)."""
    alphas = figure71_alphas(sc)
    n, k = len(alphas), int(sc.gd_checks)
    if k < 1:
        raise ValueError(f"gd_checks must be at least 1, got {sc.gd_checks!r}")
    s0 = sc.shapes[0]
    lo_k, hi_k = effective_scale(alphas[n // 3], s0), effective_scale(alphas[2 * n // 3], s0)
    points = []
    for s in dict.fromkeys((s0, sc.shapes[-1])):  # one shape when the scale has one
        kap = effective_scale(alphas, s)
        inside = np.flatnonzero((kap >= lo_k * (1 - 1e-12)) & (kap <= hi_k * (1 + 1e-12)))
        if inside.size == 0:
            raise ValueError(f"no grid point of shape s = {s:g} has kappa in [{lo_k:.3g}, {hi_k:.3g}] "
                             f"(its kappa range is [{kap[0]:.3g}, {kap[-1]:.3g}]); widen alpha_log10")
        picks = np.unique(np.linspace(inside[0], inside[-1], k).astype(int))
        points += [(float(alphas[j]), float(s)) for j in picks]
    return points


def explorer_window(beta_star, betas, size: int = 60) -> np.ndarray:
    """The coordinates an explorer of interpolators shows, ascending: the teacher's support (every i with
    beta*_i != 0) first, then the coordinates that carry most of the interpolators' weight, max over ``betas`` of
    |beta_i| in decreasing order (ties to the smaller index), up to ``size`` in all. On the paper's data (d = 1,000,
    a 5-sparse teacher) the first 60 coordinates may hold none of the support; this window always holds all of it
    (when ``size`` allows)."""
    beta_star = np.asarray(beta_star, dtype=float)
    weight = np.max(np.abs(np.atleast_2d(np.asarray(betas, dtype=float))), axis=0)
    if weight.shape != beta_star.shape:
        raise ValueError(f"betas must have the teacher's {beta_star.size} coordinates, got {weight.size}")
    if size < 1:
        raise ValueError(f"the window needs at least one coordinate, got size {size}")
    support = list(np.flatnonzero(beta_star))
    rest = [int(i) for i in np.lexsort((np.arange(weight.size), -weight)) if beta_star[i] == 0]
    return np.sort(np.array((support + rest)[:size], dtype=int))


def first_crossing(xs, ys, level):
    """The first ``x`` at which the curve ``ys(xs)`` rises through ``level``, interpolated linearly in ``log x``.

    With ``j`` the first index where ``ys[j] > level`` (so ``ys[j-1] <= level``),
    ``t = (level - ys[j-1]) / (ys[j] - ys[j-1])`` and ``x = exp((1 - t) log xs[j-1] + t log xs[j])``.
    ``xs`` must be positive and increasing. A curve that starts above ``level`` or never rises above it has no
    crossing on its grid: ValueError.
    """
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if xs.ndim != 1 or xs.shape != ys.shape or xs.size < 2:
        raise ValueError(f"xs and ys must be 1-d of the same length >= 2, got {xs.shape} and {ys.shape}")
    if not (np.all(np.isfinite(ys)) and np.all(xs > 0) and np.all(np.diff(xs) > 0)):
        raise ValueError("xs must be positive and increasing and ys finite")
    above = ys > level
    if above[0]:
        raise ValueError(f"the curve starts above the level {level:.4g} ({ys[0]:.4g} at x = {xs[0]:.3g}): "
                         "no crossing on this grid")
    if not above.any():
        raise ValueError(f"the curve never rises above the level {level:.4g} (its maximum is {ys.max():.4g})")
    j = int(np.argmax(above))
    t = (level - ys[j - 1]) / (ys[j] - ys[j - 1])
    return float(np.exp((1 - t) * np.log(xs[j - 1]) + t * np.log(xs[j])))


def figure71_transitions(alphas, shapes, errors, err_l1, err_l2):
    """Figure 7.1's transitions: for each shape ``s`` (row ``i`` of ``errors``, shapes x alphas), the first scale
    ``alpha`` at which its population error rises through the midpoint ``(err_l1 + err_l2) / 2`` of the min-l1
    and min-l2 errors (:func:`first_crossing`, log-interpolated). Returns ``{s: alpha}`` in the order of
    ``shapes``; ``alpha`` is None where the shape has no transition: its curve has no crossing on the grid, or
    (for every shape) ``err_l1 >= err_l2``, when min-l1 does not recover the teacher better than min-l2 and no
    transition runs from one to the other. By Theorem 4.1 the error is a function of
    ``kappa = alpha (1+s^2)/(1-s^2)`` alone, so the transition of shape ``s`` is that of ``s = 0`` times
    ``(1-s^2)/(1+s^2)``."""
    errors = np.asarray(errors, dtype=float)
    if errors.shape != (len(shapes), len(alphas)):
        raise ValueError(f"errors must be (shapes, alphas) = ({len(shapes)}, {len(alphas)}), got {errors.shape}")
    if not err_l1 < err_l2:
        return dict.fromkeys(shapes)
    mid = 0.5 * (err_l1 + err_l2)
    out = {}
    for i, s in enumerate(shapes):
        above = errors[i] > mid
        out[s] = first_crossing(alphas, errors[i], mid) if above.any() and not above[0] else None
    return out


def transition_rows(transitions):
    """The table of :func:`figure71_transitions`: per shape its transition ``alpha`` and ``kappa`` to two
    digits, or ``none on this grid`` where it has none."""
    def fmt(value):
        return "none on this grid" if value is None else f"{value:.2g}"

    return [{"s": s, "transition α": fmt(a), "transition κ": fmt(None if a is None else effective_scale(a, s))}
            for s, a in transitions.items()]


def collapse_deviation(kappas, errors):
    """How far Figure 7.1's curves are from one curve against the effective scale: the largest
    ``|errors[i, j] - e_0(kappas[i, j])|`` over the curves ``i >= 1`` and their points inside the first curve's
    range ``kappas[0, 0] <= kappas[i, j] <= kappas[0, -1]``, where ``e_0`` interpolates the first curve
    (``kappas[0]``, ``errors[0]``) linearly in ``log kappa``. ``kappas`` and ``errors`` are (curves, points), each
    row's ``kappas`` positive and increasing. Zero when every curve samples one function of ``kappa`` that is
    linear in ``log kappa`` between the first curve's points; otherwise it also holds that interpolation's error.
    A curve with no point inside the first curve's range cannot be compared: ValueError."""
    kappas, errors = np.asarray(kappas, dtype=float), np.asarray(errors, dtype=float)
    if kappas.ndim != 2 or kappas.shape != errors.shape or kappas.shape[0] < 2 or kappas.shape[1] < 2:
        raise ValueError(f"kappas and errors must be (curves >= 2, points >= 2) of one shape, got {kappas.shape} "
                         f"and {errors.shape}")
    if not (np.all(kappas > 0) and np.all(np.diff(kappas, axis=1) > 0) and np.all(np.isfinite(errors))):
        raise ValueError("every row of kappas must be positive and increasing, and errors finite")
    worst = 0.0
    for i in range(1, kappas.shape[0]):
        inside = (kappas[i] >= kappas[0, 0]) & (kappas[i] <= kappas[0, -1])
        if not inside.any():
            raise ValueError(f"curve {i} (kappa {kappas[i, 0]:.3g}..{kappas[i, -1]:.3g}) does not overlap the first "
                             f"curve's kappa range {kappas[0, 0]:.3g}..{kappas[0, -1]:.3g}")
        ref = np.interp(np.log(kappas[i][inside]), np.log(kappas[0]), errors[0])
        worst = max(worst, float(np.max(np.abs(errors[i][inside] - ref))))
    return worst
