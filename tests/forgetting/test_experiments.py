"""The named experiments: stable and distinct run ids, fused runs as runs of their own, every experiment's grids
at every preset, and the designs of the clock arms (the clocks they span, their equal-clock pairs and controls)."""

import pytest

from fibook.forgetting import experiments
from fibook.forgetting.experiments import run_id, runs
from fibook.forgetting.train import TrainConfig, train_population
from fibook.presets import PRESET_NAMES, get_preset

pytestmark = pytest.mark.slow


def test_run_ids_are_stable_and_distinct():
    configs = runs("optimizers", "book")
    ids = [run_id(c) for c in configs]
    assert len(set(ids)) == len(ids) == 6 * 5
    assert run_id(TrainConfig(lr=0.1)) == run_id(TrainConfig(lr=0.1)) != run_id(TrainConfig(lr=0.2))


def test_seed_noise_runs_every_noise_seed_and_shares_seed_0_with_the_headline_sweep():
    f, g = get_preset("book").forgetting, experiments.grids("book")
    configs = runs("seed_noise", "book")
    assert sorted({(c.seed, c.sigma_w) for c in configs}) == sorted(
        (seed, s) for seed in g.noise_seeds for s in g.quick_sigma_w)
    headline = {run_id(c) for c in runs("sgd_remembers", "book")}
    shared = {c.sigma_w for c in configs if run_id(c) in headline}
    assert shared == set(g.quick_sigma_w) & set(f.sigma_w)  # seed 0 is reused, not rerun
    assert all(c.seed == 0 for c in configs if run_id(c) in headline)


def test_fused_runs_are_runs_of_their_own():
    """fp32 sums of a fused network run in another order, so its numbers differ: it must not be stored under
    (or counted as) the unfused run's id."""
    plain, fused = runs("sgd_remembers", "book"), runs("sgd_remembers", "book", fused=True)
    assert all(f.fused and not p.fused for p, f in zip(plain, fused, strict=True))
    assert not {run_id(c) for c in plain} & {run_id(c) for c in fused}
    with pytest.raises(ValueError, match="may differ only in sigma_w, seed; these differ: fused"):
        train_population([plain[0], fused[1]], "cpu")


def test_every_experiment_has_its_grids_at_every_scale(monkeypatch):
    for preset in PRESET_NAMES:
        g = experiments.grids(preset)
        for name in experiments.EXPERIMENTS:
            configs = runs(name, preset)
            assert configs and len({run_id(c) for c in configs}) == len(configs), (name, preset)
        assert {c.lr for c in runs("sgd_remembers", preset)} == {g.sgd_lr}
        assert {c.epochs for c in runs("long_training", preset)} == set(g.long_epochs)
        assert {c.sigma_w for c in runs("depth", preset)} == set(g.quick_sigma_w)
    monkeypatch.delitem(experiments.GRIDS, "gpu")
    with pytest.raises(ValueError, match="preset 'gpu' has no Part I grids; add an entry to GRIDS"):
        runs("optimizers", "gpu")


@pytest.mark.parametrize("preset", ["book", "gpu"])
def test_adaptive_clock_spans_its_clock_with_an_equal_clock_pair_and_a_decay_that_acts(preset):
    configs = experiments.arm_configs("adaptive_clock", preset)
    by_optimizer = {}
    for c in configs:
        by_optimizer.setdefault(c.optimizer, []).append(c)
    assert set(by_optimizer) == {"adam", "adamw", "muon"}
    adam = [round(experiments.planned_clocks(c)[1]["T_adapt"], 9) for c in by_optimizer["adam"]]
    assert max(adam) / min(adam) >= 10**1.5  # at least 1.5 decades of T_adapt
    assert len(set(adam)) < len(adam)  # two arms reach one clock by different rates and lengths
    for c in by_optimizer["adamw"]:  # the decoupled decay shrinks by lambda lr per step, 1e-5 ... 1e-3
        assert 1e-5 <= c.lr * c.weight_decay <= 1e-3 and experiments.planned_clocks(c)[1]["T_L2"] > 0
    muon = sorted(experiments.planned_clocks(c)[1]["T_adapt"] for c in by_optimizer["muon"])
    assert len(muon) == 2 and muon[0] < muon[1]
    optimizers = {run_id(c) for c in runs("optimizers", preset) if c.optimizer in ("adam", "muon")}
    reused = {run_id(c) for c in runs("adaptive_clock", preset)} & optimizers
    assert {c.optimizer for c in runs("adaptive_clock", preset) if run_id(c) in reused} == {"adam", "muon"}


@pytest.mark.parametrize("preset", ["book", "gpu"])
def test_l2_clock_spans_its_clock_with_controls_at_every_length_and_a_small_shrink(preset):
    configs = experiments.arm_configs("l2_clock", preset)
    assert {c.optimizer for c in configs} == {"sgd"} and len({c.lr for c in configs}) == 1  # one learning rate
    t_l2 = {(c.weight_decay, c.epochs): experiments.planned_clocks(c)[1]["T_L2"] for c in configs}
    decayed = [t for (wd, _), t in t_l2.items() if wd > 0]
    assert min(decayed) <= 1.0 and max(decayed) >= 4.0  # from below 1 to at least 4
    assert all(1e-4 <= c.lr * c.weight_decay <= 1e-3 for c in configs if c.weight_decay)
    assert {e for _, e in t_l2} == {e for wd, e in t_l2 if wd == 0}  # a lambda = 0 control at every length
    rounded = [round(t, 9) for t in decayed]
    assert len(set(rounded)) < len(rounded)  # one T_L2 reached by two (lambda, length) pairs


@pytest.mark.parametrize("preset", ["book", "gpu"])
def test_seeds_repeats_the_headline_and_longest_clock_arms_over_the_noise_seeds(preset):
    g = experiments.grids(preset)
    configs = runs("seeds", preset)
    assert {c.seed for c in configs} == set(g.noise_seeds) and {c.sigma_w for c in configs} == set(g.quick_sigma_w)
    assert {c.optimizer for c in configs} == {"sgd", "adam", "adamw", "muon"}  # momentum SGD is not a headline arm
    longest_adam = max(experiments.planned_clocks(c)[1]["T_adapt"] for c in runs("adaptive_clock", preset)
                       if c.optimizer == "adam")
    assert max(experiments.planned_clocks(c)[1]["T_adapt"] for c in configs if c.optimizer == "adam") == longest_adam
    longest_l2 = max(experiments.planned_clocks(c)[1]["T_L2"] for c in runs("l2_clock", preset))
    assert max(experiments.planned_clocks(c)[1]["T_L2"] for c in configs if c.optimizer == "sgd") == \
        pytest.approx(max(longest_l2, experiments.planned_clocks(runs("optimizers", preset)[-1])[1]["T_L2"]))


@pytest.mark.parametrize("preset", ["smoke", "book", "gpu"])
def test_clock_ladder_holds_t_adapt_fixed_while_the_rate_spans_a_decade_over_the_noise_seeds(preset):
    g = experiments.grids(preset)
    configs = runs("clock_ladder", preset)
    assert {c.optimizer for c in configs} == {"adam"} and {c.seed for c in configs} == set(g.noise_seeds)
    assert {c.sigma_w for c in configs} == set(g.quick_sigma_w)
    clocks = {(c.lr, c.epochs): experiments.planned_clocks(c)[1]["T_adapt"] for c in configs}
    assert len(clocks) == len(g.clock_ladder) >= 2
    assert max(clocks.values()) == pytest.approx(min(clocks.values()), rel=1e-9)  # one clock
    if preset != "smoke":
        assert max(lr for lr, _ in clocks) / min(lr for lr, _ in clocks) == pytest.approx(10)  # a decade of rates
    expected = g.fixed_clock_precision or runs("adaptive_clock", preset)[0].precision
    assert {c.precision for c in configs} == {expected}


@pytest.mark.parametrize("preset", ["smoke", "book", "gpu"])
def test_tsgd_pair_has_equal_t_sgd_with_twice_the_steps_and_twice_sum_eta(preset):
    configs = experiments.arm_configs("tsgd_pair", preset)
    assert len(configs) == 2 and {c.optimizer for c in configs} == {"sgd"} and len({c.lr for c in configs}) == 1
    (small_steps, small), (big_steps, big) = sorted(experiments.planned_clocks(c) for c in configs)
    # equal up to the partial batch each epoch drops (45,000 images: 703 steps at b = 64, 2 x 351 at b = 128)
    assert big["T_SGD"] == pytest.approx(small["T_SGD"], rel=5e-3)
    assert big_steps == pytest.approx(2 * small_steps, rel=5e-3)
    assert big["T_adapt"] == pytest.approx(2 * small["T_adapt"], rel=5e-3)
