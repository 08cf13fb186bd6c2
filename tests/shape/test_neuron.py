"""Theorem 6.1 (one hidden neuron), its time warp, the leaky-ReLU neuron and the many-neuron case."""

import numpy as np
import pytest
from synthetic import regression_problem, rel

from fibook.presets import get_preset
from fibook.shape import interpolators, neuron, sparse_recovery
from fibook.shape import training as G


@pytest.mark.parametrize(("alpha", "s"), [(0.01, 0.0), (0.1, 0.5), (0.1, 0.95), (1.0, -0.5), (0.5, 0.3)])
def test_single_neuron_flow_reaches_explicit_endpoint(alpha, s):
    X, y = regression_problem(0)
    init = G.two_layer_init(alpha, s, X.shape[1], rng=1, signs=1)
    flow = G.gradient_flow(G.TwoLayerNet(), X, y, init, t_max=1e5)
    assert np.sign(flow.params["a"][0]) == 1  # no sign flip for these shapes
    end = neuron.neuron_endpoint(X, y, init["a"][0], init["W"][0])
    assert rel(flow.beta, end) < 1e-6
    # conservation of delta = a^2 - ||w||^2 and of P_perp w
    np.testing.assert_allclose(G.conserved(G.TwoLayerNet(), flow.params)["aa^T-WW^T"],
                               neuron.neuron_delta(alpha, s), atol=1e-9)
    P = interpolators.projector_null(X)
    np.testing.assert_allclose(P @ flow.params["W"][0], P @ init["W"][0], atol=1e-9)
    # the endpoint is the constrained minimizer of Q: perturbing within ker X never lowers it
    m0 = np.sign(init["a"][0]) * init["W"][0]
    delta = neuron.neuron_delta(alpha, s)
    q_end = neuron.neuron_Q(end, delta, m0)
    rng = np.random.default_rng(2)
    for _ in range(20):
        step = P @ rng.standard_normal(X.shape[1])
        assert neuron.neuron_Q(end + 1e-3 * step / np.linalg.norm(step), delta, m0) > q_end


def test_neuron_Q_equals_paper_form_and_is_stable():
    rng = np.random.default_rng(3)
    for delta in (-0.7, 0.0, 0.4, 3.0):
        beta0 = rng.standard_normal(6)
        a0 = np.sqrt(neuron._a_squared(beta0 @ beta0, delta))
        m0 = beta0 / a0  # sign(a0) w0 with a0 > 0
        for _ in range(5):
            b = rng.standard_normal(6)
            paper = neuron.neuron_Q_paper_form(b, delta, beta0)
            assert neuron.neuron_Q(b, delta, m0) == pytest.approx(paper, abs=1e-12)
    # delta >> ||beta||: Q ~ |a|(a^2 - 3 delta/2) with a^2 = delta + ||b||^2/delta - ...; the paper's form cancels
    b = np.array([1e-3, 0.0])
    delta = 1e8
    a2 = delta + (b @ b) / delta
    exact = np.sqrt(a2) * (a2 - 1.5 * delta)
    assert neuron.neuron_potential(b, delta) * 1.5 == pytest.approx(exact, rel=1e-12)
    # delta << 0 (a^2 = 2||b||^2 / (sqrt(delta^2 + 4||b||^2) - delta) ~ ||b||^2/|delta|): no cancellation
    assert neuron._a_squared(1e-20, -1e10) == pytest.approx(1e-30, rel=1e-12)


def test_time_warp_turns_the_metric_into_a_hessian():
    rng = np.random.default_rng(4)
    beta, delta, eps = rng.standard_normal(4), 0.3, 1e-4

    def grad_h(b):  # central differences of h
        h = neuron.neuron_potential
        return np.array([(h(b + eps * e, delta) - h(b - eps * e, delta)) / (2 * eps) for e in np.eye(4)])

    a = np.sqrt(neuron._a_squared(beta @ beta, delta))
    np.testing.assert_allclose(grad_h(beta), beta / a, atol=1e-7)  # grad h = sign(a) w
    hess = np.array([(grad_h(beta + eps * e) - grad_h(beta - eps * e)) / (2 * eps) for e in np.eye(4)])
    Minv = np.linalg.inv(neuron.neuron_metric(beta, delta))
    np.testing.assert_allclose(hess, a * Minv, atol=1e-5)

    # unwarped M^{-1} is not a Hessian: its derivative is not symmetric in (j, k)
    def dMinv(k):
        e = np.eye(4)[k]
        return (np.linalg.inv(neuron.neuron_metric(beta + eps * e, delta))
                - np.linalg.inv(neuron.neuron_metric(beta - eps * e, delta))) / (2 * eps)

    T = np.array([dMinv(k) for k in range(4)])  # T[k, i, j] = d_k (M^-1)_ij
    assert np.max(np.abs(T - T.transpose(2, 1, 0))) > 1e-2


def test_sign_flip_needs_the_final_sign():
    X, y = regression_problem(5)
    # delta < 0 with a tiny output weight of the "wrong" sign: a(t) crosses zero
    rng = np.random.default_rng(6)
    w0 = rng.standard_normal(X.shape[1])
    w0 *= 1.0 / np.linalg.norm(w0)
    target = np.linalg.pinv(X) @ y
    a0 = -0.05 * np.sign(w0 @ target)  # pointing away from the data's direction
    init = {"a": np.array([a0]), "W": w0[None, :]}
    flow = G.gradient_flow(G.TwoLayerNet(), X, y, init, t_max=1e5)
    a_end = flow.params["a"][0]
    assert np.sign(a_end) != np.sign(a0)
    wrong = neuron.neuron_endpoint(X, y, a0, w0)
    with pytest.warns(UserWarning, match="changed sign"):
        right = neuron.neuron_endpoint(X, y, a0, w0, a_sign=a_end)
    assert rel(flow.beta, right) < 1e-6
    assert rel(flow.beta, wrong) > 1e-2


def test_leaky_neuron_via_transformed_targets():
    X, y = regression_problem(7)
    rho = 0.2
    init = G.two_layer_init(0.1, 0.5, X.shape[1], rng=8, signs=1)
    net = G.TwoLayerNet(rho=rho)
    runs = {lr: G.gradient_descent(net, X, y, init, lr=lr, loss_tol=1e-24, max_steps=400_000)
            for lr in (2e-3, 1e-3)}
    a_sign = runs[1e-3].params["a"][0]
    end = neuron.neuron_endpoint(X, neuron.leaky_targets(y, rho, a_sign), init["a"][0], init["W"][0], a_sign=a_sign)
    np.testing.assert_allclose(net.outputs(runs[1e-3].params, X), y, atol=1e-9)
    assert rel(runs[1e-3].beta, end) < 1e-3
    richardson = 2 * runs[1e-3].beta - runs[2e-3].beta
    assert rel(richardson, end) < 1e-4
    # the untransformed targets give a different (wrong) answer
    assert rel(neuron.neuron_endpoint(X, y, init["a"][0], init["W"][0]), end) > 1e-2


def test_many_neurons_deviate_from_the_summed_formula():
    X, y = regression_problem(9)
    init = G.two_layer_init(1.0, -0.3, X.shape[1], width=3, rng=10)  # mixed signs of a0
    flow = G.gradient_flow(G.TwoLayerNet(), X, y, init, t_max=1e5)
    Bq = neuron.summed_neuron_argmin(X, y, init["a"], init["W"])
    np.testing.assert_allclose(X @ Bq.sum(axis=0), y, atol=1e-9)
    Bgf = flow.params["a"][:, None] * flow.params["W"]
    delta = init["a"] ** 2 - np.sum(init["W"] ** 2, axis=1)
    m0 = np.sign(init["a"])[:, None] * init["W"]

    def total_q(B):
        return sum(neuron.neuron_Q(B[i], delta[i], m0[i]) for i in range(3))

    assert np.max(np.linalg.norm(Bgf - Bq, axis=1)) > 1e-2
    np.testing.assert_allclose(X @ Bgf.sum(axis=0), y, atol=1e-9)  # both interpolate
    assert total_q(Bgf) - total_q(Bq) > 1e-6  # gradient flow is not the summed-Q minimizer
    # for one neuron the summed form is exact and agrees with the explicit endpoint
    one = neuron.summed_neuron_argmin(X, y, init["a"][:1], init["W"][:1])[0]
    assert rel(one, neuron.neuron_endpoint(X, y, init["a"][0], init["W"][0])) < 1e-10


def test_many_neurons_reach_the_summed_formula_as_equal_delta_inits_vanish_and_not_with_unequal_delta():
    X, y = regression_problem(9)
    net = G.TwoLayerNet()

    def gap(deltas, r):
        init = G.delta_init(deltas, r, X.shape[1], rng=40, signs=[1.0, -1.0, 1.0])
        d = init["a"] ** 2 - np.sum(init["W"] ** 2, axis=1)
        np.testing.assert_allclose(d, deltas, rtol=1e-12)  # the balancedness asked for, at every size
        np.testing.assert_allclose(np.linalg.norm(init["W"], axis=1), r, rtol=1e-12)
        flow = G.gradient_flow(net, X, y, init, t_max=1e5)
        Bgf = flow.params["a"][:, None] * flow.params["W"]
        return np.max(np.linalg.norm(Bgf - neuron.summed_neuron_argmin(X, y, init["a"], init["W"]), axis=1))

    norms = (1.0, 0.1, 0.01)
    equal = [gap([1.0, 1.0, 1.0], r) for r in norms]
    unequal = [gap([0.5, 1.0, 2.0], r) for r in norms]
    slope = np.polyfit(np.log(norms), np.log(equal), 1)[0]
    assert 0.8 < slope < 1.3 and equal[-1] < 1e-3  # the gap falls like ||w0||
    assert min(unequal) > 1e-2  # unequal warps keep it open
    with pytest.raises(ValueError, match="need w_norm > 0"):
        G.delta_init([-1.0], 0.5, 3)


def test_figure71_data_follows_the_paper_settings():
    sc = get_preset("book").shape
    assert (sc.d, sc.n_train, sc.sparsity, sc.noise_var) == (1000, 100, 5, 0.01)
    data = sparse_recovery.figure71_data(get_preset("smoke").shape)
    assert np.count_nonzero(data.beta_star) == 5
    np.testing.assert_allclose(data.beta_star[data.beta_star != 0], 1 / np.sqrt(5))
    np.testing.assert_allclose(data.y_test, data.X_test @ data.beta_star)
    noise = data.y - data.X @ data.beta_star
    assert 0 < np.std(noise) < 0.3
