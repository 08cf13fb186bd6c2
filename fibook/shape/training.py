"""The trained models of Part II and the gradient flow that trains them (chapters "Scale and shape in diagonal
networks" and "Beyond mirror descent").

Every model predicts with parameters ``p`` (a dict of float64 arrays) and is trained on
``L(p) = 1/2 ||f_p(X) - y||^2`` by gradient flow ``dp/dt = -grad L(p)``:

* :class:`DiagonalNet` -- ``beta = u+ * v+ - u- * v-`` (untied; Theorem 4.1 of Azulay et al. 2021) or
  ``beta = u+^2 - u-^2`` (tied; Woodworth et al. 2020), initialized by :func:`diagonal_init` from (alpha, s).
* :class:`TwoLayerNet` -- ``f(x) = sum_i a_i sigma(w_i^T x)`` with ``sigma`` the identity (``rho = 1``, a fully
  connected linear network; Theorem 6.1 for width 1) or a leaky ReLU ``max(z, rho z)``, initialized by
  :func:`two_layer_init` from (alpha, s).

:func:`gradient_flow` integrates the flow with an adaptive ODE solver (LSODA, stated tolerances),
:func:`gradient_descent` runs plain gradient descent; :func:`conserved` returns the quantities the flow keeps
fixed. :func:`paper_gd` (and :func:`figure71_gd_checks` over the checked grid points) runs Figure 7.1's
early-stopped gradient descent, the paper's protocol, against the gradient-flow limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from fibook.shape.diagonal import diagonal_argmin_Q, diagonal_u0_v0, effective_scale
from fibook.shape.interpolators import check_alpha_s, check_problem
from fibook.shape.neuron import neuron_a_w0
from fibook.shape.sparse_recovery import figure71_gd_points, population_error


@dataclass(frozen=True)
class DiagonalNet:
    """Diagonal linear network: ``beta = u+ * v+ - u- * v-`` (``tied=False``) or ``u+^2 - u-^2`` (``tied=True``).

    With ``r = X^T (X beta - y)``, gradient flow is ``du+/dt = -v+ r``, ``dv+/dt = -u+ r``, ``du-/dt = v- r``,
    ``dv-/dt = u- r`` (tied: ``du+/dt = -2 u+ r``, ``du-/dt = 2 u- r``).
    """

    tied: bool = False

    @property
    def names(self):
        return ("u_plus", "u_minus") if self.tied else ("u_plus", "v_plus", "u_minus", "v_minus")

    def beta(self, p):
        if self.tied:
            return p["u_plus"] ** 2 - p["u_minus"] ** 2
        return p["u_plus"] * p["v_plus"] - p["u_minus"] * p["v_minus"]

    def outputs(self, p, X):
        return X @ self.beta(p)

    def grad(self, p, X, y):
        r = X.T @ (X @ self.beta(p) - y)
        if self.tied:
            return {"u_plus": 2 * p["u_plus"] * r, "u_minus": -2 * p["u_minus"] * r}
        return {"u_plus": p["v_plus"] * r, "v_plus": p["u_plus"] * r,
                "u_minus": -p["v_minus"] * r, "v_minus": -p["u_minus"] * r}


@dataclass(frozen=True)
class TwoLayerNet:
    """Two-layer network ``f(x) = sum_i a_i sigma(w_i^T x)``, ``sigma(z) = max(z, rho z)``; ``rho = 1`` is linear.

    Parameters ``a`` (m,) and ``W`` (m, d). Its effective linear predictor is ``beta = W^T a`` (``w~ = a w`` for
    one neuron); with ``rho = 1``, ``f(x) = beta^T x``. Gradient flow: ``da_i/dt = -sum_n e_n sigma(w_i^T x_n)``,
    ``dw_i/dt = -a_i sum_n e_n sigma'(w_i^T x_n) x_n`` with ``e = f(X) - y``.
    """

    rho: float = 1.0

    names = ("a", "W")

    def __post_init__(self):
        if not 0 < self.rho <= 1:
            raise ValueError(f"rho must lie in (0, 1] (1: linear, <1: leaky ReLU), got {self.rho!r}")

    def beta(self, p):
        return p["W"].T @ p["a"]

    def outputs(self, p, X):
        z = X @ p["W"].T  # (n, m)
        return np.maximum(z, self.rho * z) @ p["a"]

    def grad(self, p, X, y):
        z = X @ p["W"].T
        act = np.maximum(z, self.rho * z)
        e = act @ p["a"] - y
        slope = np.where(z > 0, 1.0, self.rho)
        return {"a": act.T @ e, "W": p["a"][:, None] * ((slope * e[:, None]).T @ X)}


def diagonal_init(alpha, s, d, *, tied=False):
    """Symmetric initialization of a :class:`DiagonalNet`: every coordinate of ``u+ = u-`` is ``u0`` and of
    ``v+ = v-`` is ``v0`` (:func:`fibook.shape.diagonal.diagonal_u0_v0`), so ``beta(0) = 0``. ``alpha = u0 v0``.

    The tied model has ``u = v``, so only ``s = 0`` is allowed; ``u0 = sqrt(alpha)`` (Woodworth's scale squared).
    """
    if int(d) != d or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    if tied and s != 0:
        raise ValueError(f"the tied model u+^2 - u-^2 has u = v, so its shape s must be 0, got {s!r}")
    u0, v0 = diagonal_u0_v0(alpha, s)
    u, v = np.full(int(d), float(u0)), np.full(int(d), float(v0))
    if tied:
        return {"u_plus": u.copy(), "u_minus": u.copy()}
    return {"u_plus": u.copy(), "v_plus": v.copy(), "u_minus": u.copy(), "v_minus": v.copy()}


def two_layer_init(alpha, s, d, *, width=1, rng=None, signs=None):
    """Initialization of a :class:`TwoLayerNet` from scale and shape (the official code's ``symmetric_init``).

    Each ``w_i(0)`` is a uniformly random direction of norm ``sqrt(alpha (1 - s) / (1 + s))`` and
    ``|a_i(0)| = sqrt(alpha (1 + s) / (1 - s))``, so ``alpha = |a0| ||w0||`` and
    ``delta = a0^2 - ||w0||^2 = 4 alpha s / (1 - s^2)``. Signs of ``a_i`` are random unless ``signs`` is given.
    """
    check_alpha_s(alpha, s, shape_range="neuron")
    if int(width) != width or width < 1:
        raise ValueError(f"width must be a positive integer, got {width!r}")
    rng = np.random.default_rng(rng)
    a_abs, w_norm = neuron_a_w0(alpha, s)
    W = rng.standard_normal((int(width), int(d)))
    W *= w_norm / np.linalg.norm(W, axis=1, keepdims=True)
    signs = rng.choice([-1.0, 1.0], size=int(width)) if signs is None else np.sign(np.broadcast_to(signs, (width,)))
    if np.any(signs == 0):
        raise ValueError("signs must be non-zero")
    return {"a": a_abs * signs.astype(float), "W": W}


def delta_init(deltas, w_norm, d, *, rng=None, signs=None):
    """A :class:`TwoLayerNet` initialization by balancedness and size: neuron ``i`` has ``||w_i(0)|| = w_norm``
    (a uniformly random direction) and ``|a_i(0)| = sqrt(delta_i + w_norm^2)``, so ``delta_i = a_i^2 - ||w_i||^2``
    is what ``deltas`` says whatever ``w_norm`` (the vanishing-initialization limit at fixed balancedness).
    Signs of ``a_i`` are random unless ``signs`` is given."""
    deltas = np.atleast_1d(np.asarray(deltas, dtype=float))
    if not w_norm > 0 or np.any(deltas + w_norm**2 <= 0):
        raise ValueError(f"need w_norm > 0 and delta_i + w_norm^2 > 0, got w_norm={w_norm!r}, deltas={deltas}")
    rng = np.random.default_rng(rng)
    W = rng.standard_normal((deltas.size, int(d)))
    W *= w_norm / np.linalg.norm(W, axis=1, keepdims=True)
    signs = (rng.choice([-1.0, 1.0], size=deltas.size) if signs is None
             else np.sign(np.broadcast_to(signs, deltas.shape)))
    if np.any(signs == 0):
        raise ValueError("signs must be non-zero")
    return {"a": signs * np.sqrt(deltas + w_norm**2), "W": W}


def conserved(model, p):
    """Quantities gradient flow keeps constant.

    Diagonal untied: ``u+_i^2 - v+_i^2`` and ``u-_i^2 - v-_i^2`` (the ``delta_i``); tied: ``u+_i u-_i``.
    Two-layer (linear or leaky): the m x m matrix ``a a^T - W W^T`` (diagonal: ``delta_i = a_i^2 - ||w_i||^2``),
    whose off-diagonal entries are conserved only for the linear network.
    """
    if isinstance(model, DiagonalNet):
        if model.tied:
            return {"u_plus*u_minus": p["u_plus"] * p["u_minus"]}
        return {"delta_plus": p["u_plus"] ** 2 - p["v_plus"] ** 2,
                "delta_minus": p["u_minus"] ** 2 - p["v_minus"] ** 2}
    if isinstance(model, TwoLayerNet):
        return {"aa^T-WW^T": np.outer(p["a"], p["a"]) - p["W"] @ p["W"].T}
    raise TypeError(f"unknown model {type(model).__name__}; expected DiagonalNet or TwoLayerNet")


@dataclass(frozen=True)
class FlowResult:
    """End of a gradient-flow integration: parameters, the linear predictor, the final loss, the time ``t``
    reached and, when ``times`` were asked for, the parameters ``path`` at those ``times``."""

    params: dict
    beta: np.ndarray
    loss: float
    t: float
    times: np.ndarray | None = None
    path: list | None = None


@dataclass(frozen=True)
class DescentResult:
    """End of a gradient-descent run: parameters, the linear predictor, the final loss, the ``steps`` taken and,
    when a recording interval was asked for, the parameters ``path`` after each of ``at_steps``."""

    params: dict
    beta: np.ndarray
    loss: float
    steps: int
    at_steps: np.ndarray | None = None
    path: list | None = None


def _check_init(model, init, d):
    missing = [k for k in model.names if k not in init]
    if missing:
        raise ValueError(f"init lacks {missing}; {type(model).__name__} needs {list(model.names)}")
    p = {k: np.array(init[k], dtype=float) for k in model.names}
    width = p["W"].shape[-1] if "W" in p else p["u_plus"].shape[-1]
    if width != d or ("W" in p and (p["W"].ndim != 2 or p["a"].shape != (p["W"].shape[0],))):
        raise ValueError(f"init shapes {({k: v.shape for k, v in p.items()})} do not match d = {d}")
    return p


@dataclass(frozen=True)
class _Problem:
    """The flat-vector view of a training problem that both solvers step."""

    model: object
    X: np.ndarray
    y: np.ndarray
    names: tuple
    shapes: list
    sizes: np.ndarray
    theta0: np.ndarray
    target: float  # stop once L < loss_tol max(1, ||y||^2)

    def unpack(self, theta):
        return {k: theta[self.sizes[i]:self.sizes[i + 1]].reshape(self.shapes[i]) for i, k in enumerate(self.names)}

    def loss(self, theta):
        e = self.model.outputs(self.unpack(theta), self.X) - self.y
        return 0.5 * float(e @ e)

    def descent_direction(self, theta):
        g = self.model.grad(self.unpack(theta), self.X, self.y)
        return -np.concatenate([g[k].ravel() for k in self.names])


def _problem(model, X, y, init, loss_tol) -> _Problem:
    X, y = check_problem(X, y)
    p0 = _check_init(model, init, X.shape[1])
    names, shapes = tuple(model.names), [p0[k].shape for k in model.names]
    sizes = np.cumsum([0] + [int(np.prod(s)) for s in shapes])
    theta0 = np.concatenate([p0[k].ravel() for k in names])
    return _Problem(model, X, y, names, shapes, sizes, theta0, loss_tol * max(1.0, float(y @ y)))


def gradient_flow(model, X, y, init, *, t_max=1e4, rtol=1e-11, atol=1e-14, loss_tol=1e-26, times=None):
    """Gradient flow ``dp/dt = -grad L`` on ``L = 1/2 ||f(X) - y||^2`` from ``init``, integrated by
    ``scipy.integrate.solve_ivp`` (LSODA, relative tolerance ``rtol``, absolute ``atol``) until ``t_max`` or
    until ``L < loss_tol * max(1, ||y||^2)``; ``times`` stores the path at those times. Returns a
    :class:`FlowResult` (``t``: the time reached)."""
    prob = _problem(model, X, y, init, loss_tol)

    def converged(_t, theta):
        return prob.loss(theta) - prob.target

    converged.terminal = True
    t_eval = None
    if times is not None:
        t_eval = np.unique(np.append(np.asarray(times, dtype=float), t_max))
        t_eval = t_eval[(t_eval >= 0) & (t_eval <= t_max)]
    sol = solve_ivp(lambda _t, theta: prob.descent_direction(theta), (0.0, float(t_max)), prob.theta0,
                    method="LSODA", rtol=rtol, atol=atol, events=converged, t_eval=t_eval)
    if sol.status == -1:
        raise RuntimeError(f"gradient-flow integration failed: {sol.message}")
    stopped = sol.status == 1
    theta_end = (sol.y_events[0][0] if stopped else sol.y[:, -1]).copy()
    p_end = prob.unpack(theta_end)
    t_end = float(sol.t_events[0][0]) if stopped else float(sol.t[-1])
    path = None if t_eval is None else [prob.unpack(sol.y[:, j].copy()) for j in range(sol.y.shape[1])]
    return FlowResult(p_end, model.beta(p_end), prob.loss(theta_end), t_end, None if t_eval is None else sol.t,
                      path)


def gradient_descent(model, X, y, init, *, lr, max_steps=1_000_000, loss_tol=1e-26, check_every=100,
                     every=None):
    """Plain gradient descent ``p <- p - lr grad L`` on ``L = 1/2 ||f(X) - y||^2`` from ``init``, stopped
    (checked every ``check_every`` steps) once ``L < loss_tol * max(1, ||y||^2)`` or after ``max_steps``;
    ``every`` (a step interval) stores the path every that many steps. A small ``lr`` approximates the flow at
    time ``steps * lr``. Returns a :class:`DescentResult`."""
    prob = _problem(model, X, y, init, loss_tol)
    theta = prob.theta0.copy()
    at_steps, path = ([0], [prob.unpack(theta.copy())]) if every else (None, None)
    step = 0
    while step < max_steps:
        theta = theta + lr * prob.descent_direction(theta)
        step += 1
        if every and step % every == 0:
            at_steps.append(step)
            path.append(prob.unpack(theta.copy()))
        if step % check_every == 0 and prob.loss(theta) < prob.target:
            break
    p_end = prob.unpack(theta)
    return DescentResult(p_end, model.beta(p_end), prob.loss(theta), step,
                         None if at_steps is None else np.array(at_steps), path)


# --------------------------------------------------------------------------------------------------------------
# Figure 7.1's check of the paper's protocol: early-stopped gradient descent against the gradient-flow limit


@dataclass(frozen=True)
class PaperGD:
    """One grid point of Figure 7.1 trained with the paper's gradient-descent protocol (:func:`paper_gd`):
    ``steps`` taken, whether the stop rule was met (``stopped``; else the step cap was reached), the population
    errors of the GD endpoint and of the exact limit ``argmin Q_k``, the distance ``||beta_GD - beta_Q||`` and the
    GD endpoint ``beta``.

    Like the flow, these GD steps see the initialization only through ``kappa``: per coordinate, with
    ``r = X^T (X beta - y)``, ``D = u+ v+ - u- v-`` (that is, ``beta``) and ``P = u+^2 + v+^2 + u-^2 + v-^2`` follow
    ``D' = (1 + eta^2 r^2) D - eta r P``, ``P' = (1 + eta^2 r^2) P - 4 eta r D`` from ``D = 0``,
    ``P = 4 kappa``, so equal ``kappa`` gives the same iterates whatever the shape."""

    alpha: float
    s: float
    steps: int
    stopped: bool
    error_gd: float
    error_exact: float
    distance: float
    beta: np.ndarray = field(repr=False, compare=False)

    @property
    def gap(self) -> float:
        """``|error_gd - error_exact|``, the population-error gap to the gradient-flow limit."""
        return abs(self.error_gd - self.error_exact)


def paper_gd(data, alpha, s, *, max_steps, mse_tol=1e-4, step=1e-3, check_every=1000):
    """The paper's protocol for Figure 7.1 at one ``(alpha, s)`` on ``data`` (a
    :class:`fibook.shape.sparse_recovery.SparseRegression`): full-batch gradient descent on the untied
    :class:`DiagonalNet` from :func:`diagonal_init`, gradient ``X^T (X beta - y) / N`` with step ``step`` (i.e.
    ``lr = step / N`` on ``1/2 ||X beta - y||^2``), stopped (checked every ``check_every`` steps) once the training
    MSE ``||X beta - y||^2 / N < mse_tol`` or after ``max_steps``; compared with Theorem 4.1's limit
    ``argmin Q_k``, ``sqrt(k) = 4 kappa``. Returns a :class:`PaperGD`."""
    n = data.X.shape[0]
    target = n * mse_tol / 2  # 1/2 ||e||^2 < N mse_tol / 2
    gd = gradient_descent(DiagonalNet(), data.X, data.y, diagonal_init(alpha, s, data.X.shape[1]), lr=step / n,
                          loss_tol=target / max(1.0, float(data.y @ data.y)), max_steps=max_steps,
                          check_every=check_every)
    exact = diagonal_argmin_Q(data.X, data.y, 4 * effective_scale(alpha, s)).beta
    return PaperGD(float(alpha), float(s), gd.steps, bool(gd.loss < target), population_error(data, gd.beta),
                   population_error(data, exact), float(np.linalg.norm(gd.beta - exact)), gd.beta)


def figure71_gd_checks(sc, data):
    """:func:`paper_gd` at every grid point of :func:`fibook.shape.sparse_recovery.figure71_gd_points` (the smallest
    and the largest shape of the ShapePreset ``sc``, each over the window of ``kappa`` around the smallest shape's
    transition), with ``sc.gd_max_steps`` as the step cap: a list of :class:`PaperGD`."""
    return [paper_gd(data, alpha, s, max_steps=sc.gd_max_steps) for alpha, s in figure71_gd_points(sc)]
