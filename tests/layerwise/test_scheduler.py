"""The layer-balancing schedules (fibook's reconstructions and the baselines): the properties their definitions
promise, divergence, tuning and the paired design of the comparison."""

import warnings

import numpy as np
import pytest
import torch

from fibook.layerwise import scheduler as lb
from fibook.layerwise import simulation as sim

GAUSS4 = lb.Setting("linear", 4, "gaussian", 8.0)


def _gaussian_problem(depth=4, h=24):
    setup = sim.sample_setup(depth, h, 3, "gaussian", "gaussian", seed=1)
    return setup.weights, sim.gradient(setup, setup.weights)


def test_rub_rates_sum_to_the_budget_and_give_equal_relative_updates():
    weights, grads = _gaussian_problem()
    rates = lb.rub_rates(weights, grads, 7.5)
    assert torch.allclose(sum(rates), torch.full((3,), 7.5, dtype=torch.float64), rtol=0, atol=1e-12)
    rel = torch.stack([r * torch.linalg.matrix_norm(g) / torch.linalg.matrix_norm(w)
                       for r, w, g in zip(rates, weights, grads, strict=True)])
    assert torch.max(torch.abs(rel - rel[0])) < 1e-12
    assert torch.max(torch.abs(rates[0] - rates[1])) > 1e-3  # not uniform here


def test_rub_rates_are_invariant_to_scaling_the_loss():
    weights, grads = _gaussian_problem()
    base = torch.stack(lb.rub_rates(weights, grads, 3.0))
    for c in (1e-6, 0.3, 250.0):
        scaled = torch.stack(lb.rub_rates(weights, [c * g for g in grads], 3.0))
        assert torch.max(torch.abs(scaled - base) / base) < 1e-12


@pytest.mark.parametrize("depth", [2, 4])
def test_norm_balance_equalizes_the_post_step_norms_relative_to_a_reference(depth):
    weights, grads = _gaussian_problem(depth)
    budget = 40.0 if depth == 2 else 6.0
    ref = [(w * w).sum((-2, -1)) * f for w, f in zip(weights, (1.0, 1.0005, 0.9995), strict=False)]
    rates = lb.norm_balance_rates(weights, grads, budget, ref)
    assert torch.allclose(sum(rates), torch.full((3,), budget, dtype=torch.float64), rtol=0, atol=1e-10)
    q = torch.stack([((w - r.view(-1, 1, 1) * g) ** 2).sum((-2, -1)) / n
                     for w, g, r, n in zip(weights, grads, rates, ref, strict=True)])
    assert torch.max(torch.abs(q / q.mean(0) - 1)) < 1e-7
    assert torch.max(torch.abs(rates[0] - budget / len(weights))) > 1e-3  # the reference moves them off uniform


def test_norm_balance_of_two_layers_matches_a_brute_force_search():
    weights, grads = _gaussian_problem(2)
    ref = [(w * w).sum((-2, -1)) for w in weights]
    budget = 60.0
    eta1 = np.linspace(0.25 * budget, 0.75 * budget, 500_001)  # the balanced split near uniform
    for d in range(3):
        q = [((w[d] * w[d]).sum().item() - 2 * e * (w[d] * g[d]).sum().item() + e**2 * (g[d] * g[d]).sum().item())
             / r[d].item() for w, g, r, e in zip(weights, grads, ref, (eta1, budget - eta1), strict=True)]
        best = eta1[np.argmin(np.abs(q[0] - q[1]))]
        assert lb.norm_balance_rates(weights, grads, budget, ref)[0][d].item() == pytest.approx(best, abs=2e-4)


@pytest.mark.parametrize("schedule", ["rub", "norm_balance", "cross_norm"])
@pytest.mark.parametrize("budget", [0.5 * 64**1.5, 2 * 64**1.5])
def test_orthogonal_two_layer_net_keeps_equal_rates_for_16_steps(schedule, budget):
    setting = lb.Setting("linear", 2, "orthogonal", budget)
    run = lb.run_schedule(schedule, budget, 16, setting, 64, draws=2, seed=3)
    uni = lb.run_schedule("uniform", budget, 16, setting, 64, draws=2, seed=3)
    assert np.max(np.abs(run.rates[:, 0] / run.rates[:, 1] - 1)) < 1e-6
    assert np.max(np.abs(run.mean - uni.mean)) < 1e-6


@pytest.mark.parametrize("depth,budget", [(2, 0.5 * 64**1.5), (3, 8.0), (4, 8.0), (8, 8.0)])
def test_orthogonal_nets_start_rub_at_equal_rates(depth, budget):
    run = lb.run_schedule("rub", budget, 1, lb.Setting("linear", depth, "orthogonal", budget), 64, draws=2, seed=3)
    k = sim.trained_layers(depth)
    assert np.max(np.abs(run.rates[0] * k / budget - 1)) < 1e-14


def test_cross_norm_rates_give_each_layer_the_budget_share_of_the_other_layers_norm():
    """eta_{W_i} = 2 ||W_j||_F / (||W_1||_F + ||W_2||_F) lr with S = 2 lr (the secondary summary's rule), checked
    entry by entry against numpy norms of each draw."""
    weights, grads = _gaussian_problem(depth=2, h=10)
    weights = [weights[0] * 1.5, weights[1]]  # unequal norms: the smaller layer gets the larger rate
    lr = 3.0
    rates = lb.cross_norm_rates(weights, grads, 2 * lr)
    for d in range(3):
        n1, n2 = (np.linalg.norm(w[d].numpy()) for w in weights)
        assert rates[0][d].item() == pytest.approx(2 * n2 / (n1 + n2) * lr, rel=1e-14)
        assert rates[1][d].item() == pytest.approx(2 * n1 / (n1 + n2) * lr, rel=1e-14)
        assert rates[0][d] < rates[1][d] and (rates[0][d] + rates[1][d]).item() == pytest.approx(2 * lr, rel=1e-14)
    deep, deep_grads = _gaussian_problem(depth=4)
    with pytest.raises(ValueError, match="two trained layers, got 3"):
        lb.cross_norm_rates(deep, deep_grads, 1.0)
    assert [lb.applies("cross_norm", s) for s in lb.comparison_settings(16)] == [True] * 5 + [False, False, True]
    assert all(lb.applies(s, GAUSS4) for s in lb.SCHEDULES if s not in lb.TWO_LAYER_ONLY)


def test_fixed_and_uniform_rates_and_bad_arguments():
    weights, grads = _gaussian_problem(depth=8)
    assert lb.uniform_rates(weights, grads, 7.0) == [1.0] * 7
    assert lb.fixed_rates(weights, grads, 8.0, 0.25) == [2.0] + [1.0] * 6
    with pytest.raises(ValueError, match=r"split .* must lie in \[0, 1\], got 1.5"):
        lb.fixed_rates(weights, grads, 8.0, 1.5)
    with pytest.raises(ValueError, match=r"schedule must be one of \('uniform', 'fixed', 'norm_balance', 'rub', "
                                         r"'cross_norm'\)"):
        lb.run_schedule("adam", 1.0, 2, GAUSS4)
    with pytest.raises(ValueError, match="a split is given for the 'fixed' schedule and only for it"):
        lb.run_schedule("fixed", 1.0, 2, GAUSS4)
    with pytest.raises(ValueError, match="the ReLU net has depth 3"):
        lb.run_schedule("rub", 1.0, 2, lb.Setting("relu", 4, "gaussian", 1.0))
    with pytest.raises(ValueError, match="budget must be >= 0"):
        lb.rub_rates(weights, grads, -1.0)


def test_a_draw_diverges_just_above_the_factor_times_its_initial_training_loss():
    f = lb.DIVERGENCE_FACTOR
    train = np.array([[1.0, 2.0, 1.0, 1.0], [0.5, 2 * f * (1 - 1e-9), 2 * f * (1 + 1e-9), np.nan]])
    assert lb.diverged_draws(train).tolist() == [False, False, True, True]


def test_a_run_whose_every_draw_diverged_summarises_to_nan_without_a_warning():
    setting = lb.Setting("linear", 3, "gaussian", 1e4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = lb.run_schedule("uniform", setting.budget, 4, setting, 16, 2)
        assert run.diverged.all()
        assert np.isnan(run.mean).all() and np.isnan(run.train_mean).all() and np.isnan(run.sem).all()
        assert np.isnan(run.rates).all()
        assert run.final_text() == run.final_text(train=True) == "every draw diverged"
    assert run.rates.shape == lb.run_schedule("uniform", 1.0, 4, setting, 16, 2).rates.shape
    one = lb.ScheduleRun("uniform", 1.0, None, np.ones((3, 2)), np.ones((3, 2)), np.ones((2, 2)),
                         np.array([False, True]))
    assert one.mean.tolist() == [1.0] * 3 and one.sem.tolist() == [0.0] * 3
    assert one.final_text() == "1.0000 (one draw)" and one.final_text(train=True) == "1.0000"
    two = lb.ScheduleRun("uniform", 1.0, None, np.array([[1.0, 1.0], [0.2, 0.4]]), np.ones((2, 2)), np.ones((1, 2)),
                         np.array([False, False]))
    assert two.final_text() == "0.3000 ± 0.1000"


def test_tuning_takes_the_lowest_non_diverging_candidate_on_its_own_problems():
    setting = lb.Setting("linear", 3, "gaussian", 4.0)
    tuned = lb.tune("uniform", setting, 16, 6, 2)
    finals = {}
    for factor in lb.BUDGET_FACTORS:
        run = lb.run_schedule("uniform", setting.budget * factor, 6, setting, 16, 2, lb.TUNE_SEED)
        finals[factor] = np.inf if run.diverged.any() else run.test[-1].mean()
    assert tuned.diverged == sum(np.isinf(v) for v in finals.values()) > 0  # the top of the grid diverges
    assert tuned.budget == setting.budget * min(finals, key=finals.get) and tuned.loss == min(finals.values())
    assert tuned.tried == len(lb.BUDGET_FACTORS)
    assert lb.tune("fixed", setting, 16, 6, 2).tried == len(lb.BUDGET_FACTORS) * len(lb.SPLITS)
    with pytest.raises(RuntimeError, match="uniform diverged at every budget in linear depth 3, gaussian"):
        lb.tune("uniform", lb.Setting("linear", 3, "gaussian", 1e4), 16, 6, 2)


def test_grid_edges_name_the_tuned_choices_at_an_end_of_their_grid():
    setting = lb.Setting("linear", 3, "gaussian", 4.0)

    def tuned(factor, split=None):
        return lb.ScheduleRun("fixed", 4.0 * factor, split, np.ones((1, 1)), np.ones((1, 1)), np.ones((0, 2)),
                              np.zeros(1, bool))

    assert lb.grid_edges(tuned(1.0, 0.5), setting) == []
    assert lb.grid_edges(tuned(lb.BUDGET_FACTORS[0], 0.9), setting) == ["budget", "split"]
    assert lb.grid_edges(tuned(lb.BUDGET_FACTORS[-1]), setting) == ["budget"]
    assert lb.grid_edges(tuned(lb.BUDGET_FACTORS[-2], 0.1), setting) == ["split"]


def test_every_schedule_is_evaluated_on_the_same_fresh_problems_in_every_setting():
    h = 16
    settings = lb.comparison_settings(h)
    assert {s.depth for s in settings} == {2, 3, 4, 8} and {s.model for s in settings} == {"linear", "relu"}
    assert any(s.snr for s in settings) and {s.kind for s in settings} == {"orthogonal", "gaussian"}
    for setting in settings:
        runs = lb.compare(setting, h, 2, draws=3, tune_draws=2)
        assert list(runs) == [s for s in lb.SCHEDULES if lb.applies(s, setting)]
        first = runs["uniform"]
        for run in runs.values():
            assert run.test.shape == run.train.shape == (3, 3) and np.array_equal(run.test[0], first.test[0])
            assert run.budget / setting.budget in lb.BUDGET_FACTORS
        tuning = lb.run_schedule("uniform", setting.budget, 0, setting, h, 3, lb.TUNE_SEED)
        assert not np.array_equal(tuning.test[0], first.test[0])  # tuned apart from the evaluation problems
