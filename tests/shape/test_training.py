"""Part II's trained models (fibook.shape.training): gradient flow and gradient descent on diagonal networks reach
Theorem 4.1's interpolator (fibook.shape.diagonal) and conserve what they must, and the paper's gradient
descent of Figure 7.1 stops where it says."""

import numpy as np
import pytest
from synthetic import fig71_problem, regression_problem, rel

from fibook.presets import get_preset
from fibook.shape import diagonal, sparse_recovery
from fibook.shape import training as G

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


def test_bad_input_is_rejected_with_what_is_allowed():
    X, y = regression_problem(8)
    with pytest.raises(ValueError, match=r"alpha must be finite and > 0"):
        G.diagonal_init(0.0, 0.5, 30)
    with pytest.raises(ValueError, match=r"shape s must lie in \[0, 1\)"):
        G.diagonal_init(0.1, -0.2, 30)
    with pytest.raises(ValueError, match=r"neuron shape s must lie in \(-1, 1\)"):
        G.two_layer_init(0.1, 1.0, 30)
    with pytest.raises(ValueError, match=r"init shapes .* do not match d = 30"):
        G.gradient_flow(G.DiagonalNet(), X, y, G.diagonal_init(0.1, 0, 20))
    with pytest.raises(ValueError, match=r"its shape s must be 0"):
        G.diagonal_init(0.1, 0.5, 30, tied=True)
    with pytest.raises(ValueError, match=r"rho must lie in \(0, 1\]"):
        G.TwoLayerNet(rho=0.0)
