"""The sparse-regression experiment of Figure 7.1 of Azulay et al. (ICML 2021; data of their section 9, after
Woodworth et al. 2020).

A 5-sparse teacher in d = 1,000 dimensions is fitted from 100 noisy samples (:func:`draw_sparse_regression`) by the
gradient-flow limit of a diagonal network, Theorem 4.1's interpolator (:mod:`fibook.shape.diagonal`), over a grid
of scales ``alpha`` and shapes ``s``. This module holds the grid (:func:`figure71_alphas`, :func:`figure71_data`),
its population errors (:func:`population_error`, :func:`population_error_grid`,
:func:`figure71_population_errors`), the transition of each shape's curve from min-l1-like to min-l2-like error
(:func:`figure71_transitions`, with the midpoint crossing :func:`first_crossing`, and its table
:func:`transition_rows`), the collapse of the curves against the effective scale ``kappa``
(:func:`collapse_deviation`), the grid points re-run with the paper's gradient descent
(:func:`figure71_gd_points`) and the coordinates an explorer of the interpolators shows (:func:`explorer_window`).

Chapter of ``chapters/part2_shape/``: "Scale and shape in diagonal networks" (``diagonal_networks``); "Beyond
mirror descent" (``beyond_mirror_descent``) reuses its data and population error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fibook.shape.diagonal import diagonal_argmin_Q, effective_scale


@dataclass(frozen=True)
class SparseRegression:
    """Training and test data of the sparse-regression experiment, and the teacher ``beta_star``."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    beta_star: np.ndarray


def draw_sparse_regression(d=1000, n_train=100, sparsity=5, noise_var=0.01, n_test=2000, seed=1993):
    """The paper's data (its section 9, the experiment of Figure 7.1): ``x ~ N(0, I_d)``,
    ``y ~ N(<beta*, x>, noise_var)``, ``beta*`` r-sparse with entries ``1/sqrt(r)`` on a uniformly random support;
    noiseless test labels.

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
    """Test mean squared error ``||y_test - X_test beta||^2 / n_test`` (the paper's population error, section 9;
    the y axis of Figure 7.1)."""
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
    """The scales ``alpha`` of Figure 7.1 at a :class:`fibook.presets.ShapePreset`: ``n_alpha`` log-spaced values."""
    return np.logspace(*sc.alpha_log10, sc.n_alpha)


def figure71_data(sc, instance=0):
    """Data draw ``instance`` of the named experiment "Figure 7.1" (paper section 9) at a ShapePreset.

    Instance 0 is the authors' draw (legacy generator, seed 1993); instance ``i > 0`` uses seed ``1993 + i``.
    """
    return draw_sparse_regression(sc.d, sc.n_train, sc.sparsity, sc.noise_var, sc.n_test, seed=1993 + instance)


def figure71_population_errors(sc):
    """Figure 7.1: population error of the gradient-flow limit on the (shape x alpha) grid of a ShapePreset,
    for each of its ``n_instances`` data draws: an array (n_instances, len(shapes), n_alpha)."""
    alphas = figure71_alphas(sc)
    return np.stack([population_error_grid(figure71_data(sc, i), alphas, sc.shapes) for i in range(sc.n_instances)])


def figure71_gd_points(sc):
    """The grid points of Figure 7.1 that are re-run with the paper's gradient-descent protocol, as a list of
    ``(alpha, s)``: for the smallest and for the largest shape of the ShapePreset ``sc``, ``sc.gd_checks`` of its
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
