"""Part III's sampled linear nets and gradient descent on them (fibook.layerwise.simulation): the sampled problems,
the end-to-end map and losses, the gradient against autograd, the descent loop and the Monte-Carlo average, each
against an independent computation (tests/layerwise/test_closed_forms.py checks them against the closed forms)."""

import math

import numpy as np
import pytest
import torch

from fibook.layerwise import simulation as sim


def test_haar_matrices_are_orthogonal_and_uniformly_oriented():
    """Orthogonal to rounding; and Haar: each entry has mean 0 and mean square 1/n (QR alone, without the signs of
    diag(R), gives a first column whose first entry always has the same sign)."""
    draws, n = 4000, 3
    q = sim.haar(draws, n, torch.Generator().manual_seed(0))
    eye = torch.eye(n, dtype=torch.float64).expand(draws, n, n)
    assert torch.max(torch.abs(q.transpose(-1, -2) @ q - eye)) < 1e-13
    entries = q.reshape(draws, -1).numpy()
    assert np.max(np.abs(entries.mean(axis=0))) < 4.5 * math.sqrt(1 / n / draws)
    assert np.max(np.abs((entries**2).mean(axis=0) - 1 / n)) < 4.5 * math.sqrt(2 / n**2 / draws)
    dets = torch.linalg.det(q).numpy()
    assert np.allclose(np.abs(dets), 1) and abs(np.mean(dets > 0) - 0.5) < 4.5 * 0.5 / math.sqrt(draws)


@pytest.mark.parametrize(("depth", "trained"), [(2, 2), (3, 2), (4, 3), (6, 5)])
def test_a_sampled_problem_has_the_shapes_and_output_scale_of_its_depth(depth, trained):
    h, draws = 5, 3
    setup = sim.sample_setup(depth, h, draws, "gaussian", "gaussian", seed=1)
    assert sim.trained_layers(depth) == len(setup.weights) == trained
    assert all(w.shape == (draws, h, h) and w.dtype == torch.float64 for w in setup.weights)
    if depth == 2:
        assert setup.a is None and setup.beta.shape == (draws, h, h) and setup.c == h
    else:
        assert setup.a.shape == setup.beta.shape == (draws, h, 1) and setup.c == pytest.approx(math.sqrt(h))
    assert setup.sigma.shape == (draws, h, h) and torch.allclose(setup.sigma, setup.sigma.transpose(-1, -2))
    assert torch.linalg.eigvalsh(setup.sigma).min() > -1e-12  # X^T X / n
    again, other = sim.sample_setup(depth, h, draws, "gaussian", "gaussian", seed=1), \
        sim.sample_setup(depth, h, draws, "gaussian", "gaussian", seed=2)
    assert torch.equal(again.beta, setup.beta) and not torch.equal(other.beta, setup.beta)
    orthogonal = sim.sample_setup(depth, h, draws, seed=1)
    assert orthogonal.sigma is None  # Sigma = I
    if depth == 2:  # beta = Haar / sqrt(h): beta beta^T = I / h
        gram = orthogonal.beta @ orthogonal.beta.transpose(-1, -2)
        assert torch.allclose(gram, torch.eye(h, dtype=torch.float64).expand(draws, h, h) / h, atol=1e-14)
    else:  # unit beta and a
        ones = torch.ones(draws, dtype=torch.float64)
        assert torch.allclose(torch.linalg.vector_norm(orthogonal.beta, dim=(-2, -1)), ones)
        assert torch.allclose(torch.linalg.vector_norm(orthogonal.a, dim=(-2, -1)), ones)


@pytest.mark.parametrize("depth", [2, 3])
def test_the_signal_variance_of_gaussian_data_is_the_mean_square_of_a_label(depth):
    """A label entry x^T beta with x ~ N(0, I_h) has variance ||beta column||^2: averaged over draws and outputs,
    1/h at depth 2 and 1 deeper."""
    h, draws = 8, 4000
    setup = sim.sample_setup(depth, h, draws, "gaussian", "gaussian", seed=3)
    outputs = setup.beta.shape[-1]
    per_draw = (setup.beta**2).sum(dim=(-2, -1)).numpy() / outputs
    assert per_draw.mean() == pytest.approx(sim.signal_variance(depth, h), rel=4.5 * per_draw.std() /
                                            per_draw.mean() / math.sqrt(draws))


def test_the_end_to_end_map_and_the_losses_are_the_explicit_matrix_products():
    h = 4
    setup = sim.sample_setup(4, h, 2, "gaussian", "gaussian", seed=5, noise=0.2)
    w1, w2, w3 = setup.weights
    m = w1 @ w2 @ w3 @ setup.a / math.sqrt(h)
    assert torch.allclose(sim.output_map(setup, setup.weights), m, rtol=1e-14, atol=0)
    e = m - setup.beta
    assert torch.allclose(sim.population_loss(setup, setup.weights), (e**2).sum(dim=(-2, -1)), rtol=1e-14)
    train = 0.5 * (e.transpose(-1, -2) @ setup.sigma @ e).squeeze((-2, -1)) - (e * setup.noise_xt).sum(dim=(-2, -1)) \
        + 0.5 * setup.noise_sq
    assert torch.allclose(sim.train_loss(setup, setup.weights), train, rtol=1e-13)
    two = sim.sample_setup(2, h, 2, seed=5)  # depth 2, orthogonal data: a = I, Sigma = I
    assert torch.allclose(sim.output_map(two, two.weights), two.weights[0] @ two.weights[1] / h, rtol=1e-14)
    assert torch.allclose(sim.train_loss(two, two.weights), 0.5 * sim.population_loss(two, two.weights), rtol=1e-14)


@pytest.mark.parametrize(("depth", "data", "noise"), [(2, "orthogonal", 0.0), (2, "gaussian", 0.3),
                                                      (3, "gaussian", 0.0), (5, "gaussian", 0.3)])
def test_the_gradient_is_autograd_of_the_training_loss_and_the_surrogate_keeps_only_its_a_part(depth, data, noise):
    setup = sim.sample_setup(depth, 6, 2, "gaussian", data, seed=7, noise=noise)
    weights = [w.clone().requires_grad_(True) for w in setup.weights]
    reference = torch.autograd.grad(sim.train_loss(setup, weights).sum(), weights)
    grads = sim.gradient(setup, setup.weights)
    for g, r in zip(grads, reference, strict=True):
        assert torch.allclose(g, r, rtol=1e-12, atol=1e-15)
    a_parts, b_parts = sim.gradient_parts(setup, setup.weights)
    for g, s, a, b in zip(grads, sim.gradient(setup, setup.weights, surrogate=True), a_parts, b_parts, strict=True):
        assert torch.equal(s, -a) and torch.allclose(g, b - a, rtol=0, atol=0)


def test_descent_records_the_loss_before_and_after_every_step_and_each_layers_rate():
    setup = sim.sample_setup(3, 5, 2, seed=9)
    rates = sim.layer_rates(3, 0.5, 2.0)
    assert rates == [0.5, 2.0] and sim.layer_rates(5, 0.5, 2.0) == [0.5, 2.0, 2.0, 2.0]

    def schedule(weights, grads, t):  # per layer, growing with the step
        return [r * (t + 1) for r in rates]

    def grad(w):
        return sim.gradient(setup, w)

    def loss(w):
        return sim.population_loss(setup, w)

    losses, used, final = sim.descend(setup.weights, grad, loss, schedule, 3)
    weights, expected = list(setup.weights), [loss(setup.weights)]
    for t in range(3):
        weights = [w - r * (t + 1) * g for w, r, g in zip(weights, rates, grad(weights), strict=True)]
        expected.append(loss(weights))
    assert torch.allclose(losses, torch.stack(expected), rtol=1e-14) and losses.shape == (4, 2)
    assert used.shape == (3, 2, 2) and torch.equal(used[:, :, 0], used[:, :, 1])
    assert used[:, :, 0].tolist() == [[0.5, 2.0], [1.0, 4.0], [1.5, 6.0]]
    assert all(torch.allclose(a, b, rtol=1e-14) for a, b in zip(final, weights, strict=True))
    none, no_rates, same = sim.descend(setup.weights, grad, loss, schedule, 0)
    assert none.shape == (1, 2) and no_rates.shape == (0, 2, 2) and same == list(setup.weights)


def test_monte_carlo_averages_the_per_draw_losses_with_their_standard_error():
    mc = sim.simulate(2, 6, 1.5, 3.0, steps=2, draws=5, seed=1)
    assert mc.losses.shape == (5, 3)
    assert mc.mean == pytest.approx(mc.losses.mean(axis=0), rel=1e-14)
    assert mc.sem == pytest.approx(mc.losses.std(axis=0, ddof=1) / math.sqrt(5), rel=1e-12)
    # one chunk of five draws, its seed seed * 100003: the surrogate GD of those problems, repeated here
    setup = sim.sample_setup(2, 6, 5, seed=100_003)
    losses, _, _ = sim.descend(setup.weights, lambda w: sim.gradient(setup, w, surrogate=True),
                               lambda w: sim.population_loss(setup, w), lambda w, g, t: [1.5, 3.0], 2)
    assert mc.losses == pytest.approx(losses.T.numpy(), rel=1e-14)
    literal = sim.simulate(2, 6, 1.5, 3.0, steps=2, draws=5, seed=1, surrogate=False)
    assert literal.losses[:, 0] == pytest.approx(mc.losses[:, 0]) and not np.allclose(literal.losses, mc.losses)
    alone = sim.simulate(2, 6, 1.5, 3.0, steps=1, draws=1)
    assert np.isnan(alone.sem).all() and alone.mean == pytest.approx(alone.losses[0])


def test_relu_gradients_match_finite_differences():
    setup = sim.sample_relu_setup(6, draws=1, seed=0, n_test=10)
    grads = sim.autograd_gradient(lambda w: sim.relu_losses(setup, w, test=False))(setup.weights)
    w1, w2 = setup.weights
    bump = torch.zeros_like(w2)
    bump[0, 2, 3] = 1e-6
    up = sim.relu_losses(setup, (w1, w2 + bump), test=False)
    down = sim.relu_losses(setup, (w1, w2 - bump), test=False)
    assert ((up - down) / 2e-6).item() == pytest.approx(grads[1][0, 2, 3].item(), rel=1e-6)


def test_the_relu_net_is_the_sqrt2_scaled_relu_map_and_its_losses_against_the_linear_target():
    setup = sim.sample_relu_setup(5, draws=2, seed=1, n_test=7)
    w1, w2 = setup.weights
    assert w1.shape == w2.shape == (2, 5, 5) and setup.x.shape == (2, 10, 5) and setup.x_test.shape == (2, 7, 5)
    x = setup.x_test
    by_hand = np.sqrt(2) * np.maximum(x.numpy() @ w1.numpy(), 0) @ w2.numpy() @ setup.a.numpy() / np.sqrt(5)
    assert np.allclose(sim.relu_output(setup, setup.weights, x).numpy(), by_hand, rtol=1e-12)
    err = by_hand - x.numpy() @ setup.beta.numpy()
    assert np.allclose(sim.relu_losses(setup, setup.weights, test=True).numpy(), (err**2).mean(axis=(1, 2)))
    train_err = sim.relu_output(setup, setup.weights, setup.x) - setup.x @ setup.beta
    assert torch.allclose(sim.relu_losses(setup, setup.weights, test=False), 0.5 * (train_err**2).mean(dim=(1, 2)))
