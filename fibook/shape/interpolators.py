"""The regression problem every model of Part II interpolates, and what their interpolators share (Azulay et al.,
ICML 2021).

Gradient flow on ``L = 1/2 ||X beta - y||^2`` over an over-parametrized model of a linear predictor ``beta``
converges (when it reaches zero loss) to ``argmin Q(beta) s.t. X beta = y`` for a model- and
initialization-dependent *implicit regularizer* ``Q``: Theorem 4.1's for diagonal networks
(:mod:`fibook.shape.diagonal`), Theorem 6.1's for one hidden neuron (:mod:`fibook.shape.neuron`). This module holds
what both use:

* the input checks :func:`check_alpha_s` (scale ``alpha`` and shape ``s`` of either model) and
  :func:`check_problem` (the data ``X``, ``y``);
* :func:`dual_newton`, Newton's method on the smooth convex dual of ``min Q s.t. X beta = y``, returning a
  :class:`DualSolution`;
* the reference interpolators the regularizers reach in their limits, :func:`min_l2` (``X^+ y``: Theorem 4.1's
  kernel limit and Theorem 6.1's small-initialization limit) and :func:`min_l1` (Theorem 4.1's rich limit), and
  :func:`projector_null`, the projector ``P_perp`` onto ``ker X`` of Theorem 6.1's endpoint.

Chapters of ``chapters/part2_shape/``: "Scale and shape in diagonal networks" (``diagonal_networks``) and "Beyond
mirror descent" (``beyond_mirror_descent``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from fibook.checks import positive


def check_alpha_s(alpha, s, *, shape_range: str = "diagonal"):
    """Validate a scale ``alpha > 0`` and a shape ``s`` (diagonal: ``0 <= s < 1``; neuron: ``-1 < s < 1``)."""
    positive("scale alpha", alpha)
    s_a = np.asarray(s, dtype=float)
    if shape_range == "diagonal":
        if not np.all((s_a >= 0) & (s_a < 1)):
            raise ValueError(f"diagonal shape s must lie in [0, 1), got {s!r}")
    elif not np.all((s_a > -1) & (s_a < 1)):
        raise ValueError(f"neuron shape s must lie in (-1, 1), got {s!r}")



def check_problem(X, y):
    """Validate a regression problem: ``X`` of shape (N, d), ``y`` of shape (N,), finite; return float arrays."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be (N, d) and y must be (N,) with the same N; got X {X.shape}, y {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite")
    return X, y


@dataclass(frozen=True)
class DualSolution:
    """A constrained minimizer found through the dual: ``beta``, the multipliers ``nu``, Newton iterations and
    the final constraint residual ``max |X beta - y|``."""

    beta: np.ndarray
    nu: np.ndarray
    iterations: int
    residual: float


def dual_newton(X, y, primal, nu0, *, tol, max_iter):
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


def min_l2(X, y):
    """The minimum-l2-norm interpolator ``X^+ y`` (kernel limit of every regularizer of this Part)."""
    X, y = check_problem(X, y)
    return np.linalg.pinv(X) @ y


def min_l1(X, y):
    """The minimum-l1-norm interpolator, a linear program on ``beta = p - n`` with ``p, n >= 0`` (HiGHS).

    The rich limit (``sqrt k -> 0``) of Theorem 4.1's interpolator when it is unique, and Figure 7.1's sparse
    reference.
    """
    X, y = check_problem(X, y)
    d = X.shape[1]
    res = linprog(np.ones(2 * d), A_eq=np.hstack([X, -X]), b_eq=y, bounds=(0, None), method="highs")
    if not res.success:
        raise RuntimeError(f"min-l1 linear program failed: {res.message}")
    return res.x[:d] - res.x[d:]


def projector_null(X):
    """``P_perp``, the orthogonal projector onto ``ker X``: ``I - X^+ X`` (Theorem 6.1's endpoint
    ``X^+ y + a_inf P_perp w0`` keeps the part ``P_perp w0`` of the initial weights)."""
    X = np.asarray(X, dtype=float)
    return np.eye(X.shape[1]) - np.linalg.pinv(X) @ X
