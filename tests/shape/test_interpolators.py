"""What every Part II interpolator shares (fibook.shape.interpolators): the minimum-l2 and minimum-l1 interpolators,
the projector onto ker X, dual Newton on a dual whose answer is known, and the input checks, each against an
independent computation."""

import itertools

import numpy as np
import pytest
from scipy.linalg import null_space
from synthetic import regression_problem

from fibook.shape import interpolators


def test_min_l2_interpolates_and_is_the_smallest_interpolator_in_l2():
    X, y = regression_problem(0)
    beta = interpolators.min_l2(X, y)
    assert np.max(np.abs(X @ beta - y)) < 1e-12
    assert beta == pytest.approx(np.linalg.lstsq(X, y, rcond=None)[0], abs=1e-12)  # LAPACK's minimum-norm solution
    kernel = null_space(X)
    assert np.max(np.abs(kernel.T @ beta)) < 1e-12  # no component in ker X, so any other interpolator is longer
    other = beta + kernel @ np.random.default_rng(1).standard_normal(kernel.shape[1])
    assert np.max(np.abs(X @ other - y)) < 1e-10 and np.linalg.norm(other) > np.linalg.norm(beta)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_min_l1_is_the_best_basic_solution_found_by_enumerating_every_support(seed):
    """A linear program's optimum sits at a vertex: an interpolator supported on N columns. Every one of the
    C(d, N) supports is solved here and the smallest l1 norm kept."""
    rng = np.random.default_rng(seed)
    n, d = 3, 8
    X, y = rng.standard_normal((n, d)), rng.standard_normal(n)
    best = min(np.abs(np.linalg.solve(X[:, list(cols)], y)).sum() for cols in itertools.combinations(range(d), n))
    beta = interpolators.min_l1(X, y)
    assert np.max(np.abs(X @ beta - y)) < 1e-9
    assert np.abs(beta).sum() == pytest.approx(best, rel=1e-9)
    assert np.count_nonzero(np.abs(beta) > 1e-9) <= n  # a vertex: at most N nonzero coordinates


def test_min_l1_recovers_a_sparse_teacher_that_min_l2_smears_out():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((20, 40))
    teacher = np.zeros(40)
    teacher[[4, 17]] = [1.5, -2.0]
    y = X @ teacher
    assert interpolators.min_l1(X, y) == pytest.approx(teacher, abs=1e-8)
    assert np.count_nonzero(np.abs(interpolators.min_l2(X, y)) > 1e-3) > 20


def test_the_null_space_projector_is_the_orthogonal_projector_onto_ker_x():
    X, _ = regression_problem(4)  # 10 x 30: ker X has dimension 20
    P = interpolators.projector_null(X)
    Z = null_space(X)
    assert P == pytest.approx(Z @ Z.T, abs=1e-12)  # an orthonormal basis of ker X, from scipy's SVD
    assert P == pytest.approx(P.T, abs=1e-14) and P @ P == pytest.approx(P, abs=1e-12)
    assert np.max(np.abs(X @ P)) < 1e-12 and np.trace(P) == pytest.approx(20, abs=1e-10)


def test_dual_newton_on_the_dual_of_min_half_squared_norm_returns_min_l2():
    """phi(beta) = ||beta||^2 / 2 has phi* = phi: beta(nu) = X^T nu, the dual's Hessian X X^T and
    D(nu) = ||X^T nu||^2 / 2 - nu^T y, so the constrained minimizer is the minimum-l2 interpolator."""
    X, y = regression_problem(5)

    def primal(nu):
        z = X.T @ nu
        return z, X @ X.T, 0.5 * float(z @ z) - float(nu @ y)

    sol = interpolators.dual_newton(X, y, primal, np.zeros(X.shape[0]), tol=1e-12, max_iter=50)
    assert sol.beta == pytest.approx(interpolators.min_l2(X, y), abs=1e-10)
    assert sol.nu == pytest.approx(np.linalg.solve(X @ X.T, y), abs=1e-10)
    assert sol.iterations == 1  # a quadratic dual: one Newton step
    assert sol.residual == np.max(np.abs(X @ sol.beta - y)) <= 1e-12 * max(1.0, np.max(np.abs(y)))


def test_dual_newton_says_when_there_is_no_interpolator_or_it_runs_out_of_iterations():
    X = np.array([[1.0, 0.0], [1.0, 0.0]])  # two equal rows asked for different labels
    y = np.array([1.0, 2.0])

    def primal(nu):
        z = X.T @ nu
        return z, X @ X.T + 1e-12 * np.eye(2), 0.5 * float(z @ z) - float(nu @ y)

    with pytest.raises(RuntimeError, match="dual Newton"):
        interpolators.dual_newton(X, y, primal, np.zeros(2), tol=1e-12, max_iter=50)
    X2, y2 = regression_problem(6)

    def slow(nu):  # a dual whose Hessian is overstated 10x: Newton only creeps towards the answer
        z = X2.T @ nu
        return z, 10 * X2 @ X2.T, 0.5 * float(z @ z) - float(nu @ y2)

    with pytest.raises(RuntimeError, match="did not converge in 3 iterations"):
        interpolators.dual_newton(X2, y2, slow, np.zeros(X2.shape[0]), tol=1e-12, max_iter=3)


def test_bad_input_is_rejected_with_what_is_allowed():
    interpolators.check_alpha_s(0.1, 0.0)
    interpolators.check_alpha_s(0.1, -0.5, shape_range="neuron")
    with pytest.raises(ValueError, match=r"scale alpha must be finite and > 0"):
        interpolators.check_alpha_s(0.0, 0.5)
    with pytest.raises(ValueError, match=r"diagonal shape s must lie in \[0, 1\), got -0.5"):
        interpolators.check_alpha_s(0.1, -0.5)
    with pytest.raises(ValueError, match=r"neuron shape s must lie in \(-1, 1\), got 1.0"):
        interpolators.check_alpha_s(0.1, 1.0, shape_range="neuron")
    with pytest.raises(ValueError, match=r"diagonal shape s must lie in \[0, 1\)"):
        interpolators.check_alpha_s(0.1, np.array([0.0, 0.5, 1.0]))  # every entry of an array
    X, y = interpolators.check_problem([[1, 2], [3, 4]], [1, 2])
    assert X.dtype == y.dtype == np.float64
    with pytest.raises(ValueError, match=r"X must be \(N, d\) and y must be \(N,\) with the same N; got X \(2, 2\), "
                                         r"y \(3,\)"):
        interpolators.check_problem(X, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="X and y must be finite"):
        interpolators.min_l2(X, [1.0, np.nan])
