"""fibook's layer-balancing scheduler (RUB): the properties its definition promises."""

import numpy as np
import pytest
import torch

from fibook.layerwise import scheduler as lb
from fibook.layerwise import simulation as sim


def _gaussian_problem(depth=4, h=24):
    setup = sim.sample_setup(depth, h, 3, "gaussian", "gaussian", seed=1)
    return setup.weights, sim.gradient(setup, setup.weights)


def test_rates_sum_to_the_budget_and_give_equal_relative_updates():
    weights, grads = _gaussian_problem()
    rates = lb.rub_rates(weights, grads, 7.5)
    assert torch.allclose(sum(rates), torch.full((3,), 7.5, dtype=torch.float64), rtol=0, atol=1e-12)
    rel = torch.stack([r * torch.linalg.matrix_norm(g) / torch.linalg.matrix_norm(w)
                       for r, w, g in zip(rates, weights, grads, strict=True)])
    assert torch.max(torch.abs(rel - rel[0])) < 1e-12
    assert torch.max(torch.abs(rates[0] - rates[1])) > 1e-3  # not uniform here


def test_rates_are_invariant_to_scaling_the_loss():
    weights, grads = _gaussian_problem()
    base = torch.stack(lb.rub_rates(weights, grads, 3.0))
    for c in (1e-6, 0.3, 250.0):
        scaled = torch.stack(lb.rub_rates(weights, [c * g for g in grads], 3.0))
        assert torch.max(torch.abs(scaled - base) / base) < 1e-12


@pytest.mark.parametrize("budget", [0.5 * 64**1.5, 2 * 64**1.5])
def test_orthogonal_two_layer_net_keeps_equal_rates_for_16_steps(budget):
    rub = lb.run_schedule("rub", budget, 16, "linear", 2, 64, draws=2, seed=3)
    uni = lb.run_schedule("uniform", budget, 16, "linear", 2, 64, draws=2, seed=3)
    assert np.max(np.abs(rub.rates[:, 0] / rub.rates[:, 1] - 1)) < 1e-13
    assert np.max(np.abs(rub.mean - uni.mean)) < 1e-10


@pytest.mark.parametrize("depth,budget", [(2, 0.5 * 64**1.5), (3, 8.0), (4, 8.0), (8, 8.0)])
def test_orthogonal_nets_start_at_equal_rates(depth, budget):
    rub = lb.run_schedule("rub", budget, 1, "linear", depth, 64, draws=2, seed=3)
    k = sim.trained_layers(depth)
    assert np.max(np.abs(rub.rates[0] * k / budget - 1)) < 1e-14


def test_uniform_schedule_and_bad_arguments():
    weights, grads = _gaussian_problem(depth=8)
    assert lb.uniform_rates(weights, grads, 7.0) == [1.0] * 7
    with pytest.raises(ValueError, match=r"schedule must be one of \('uniform', 'rub'\)"):
        lb.run_schedule("adam", 1.0, 2)
    with pytest.raises(ValueError, match="the ReLU net has depth 3"):
        lb.run_schedule("rub", 1.0, 2, model="relu", depth=4)
    with pytest.raises(ValueError, match="budget must be >= 0"):
        lb.rub_rates(weights, grads, -1.0)


def test_relu_gradients_match_finite_differences():
    setup = lb.sample_relu_setup(6, draws=1, seed=0, n_test=10)
    grads = lb._autograd(lambda w: lb.relu_losses(setup, w, test=False))(setup.weights)
    w1, w2 = setup.weights
    bump = torch.zeros_like(w2)
    bump[0, 2, 3] = 1e-6
    up = lb.relu_losses(setup, (w1, w2 + bump), test=False)
    down = lb.relu_losses(setup, (w1, w2 - bump), test=False)
    assert ((up - down) / 2e-6).item() == pytest.approx(grads[1][0, 2, 3].item(), rel=1e-6)


def test_every_comparison_setting_runs_under_both_schedules():
    h = 16
    settings = lb.comparison_settings(h)
    assert {depth for _, depth, _, _ in settings} == {2, 3, 4, 8} and ("relu", 3, "gaussian", h**0.5) in settings
    for model, depth, kind, budget in settings:
        for schedule in lb.SCHEDULES:
            run = lb.run_schedule(schedule, budget, 2, model, depth, h, 1, kind, kind, seed=0)
            assert run.mean.shape == (3,) and np.all(np.isfinite(run.mean[:1]))
