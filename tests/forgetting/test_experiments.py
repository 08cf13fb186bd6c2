"""Part I experiments as data (fibook.forgetting.experiments): the runs a name and a preset define, stable and
distinct run ids, fused runs as runs of their own, every experiment's grids at every preset, the designs of the clock
arms (the clocks they span, their equal-clock pairs and controls), the precision ``auto`` resolves to, and the
committed book runs' ids."""

import dataclasses
import hashlib
import json

import pytest
import torch

from fibook.forgetting import devices, experiments, results
from fibook.forgetting.config import TrainConfig
from fibook.forgetting.devices import auto_precision
from fibook.forgetting.experiments import EXPERIMENTS, arm_configs, get_experiment, grids, run_id, runs, sigma_grid
from fibook.forgetting.train import train_population
from fibook.paths import PROJECT_ROOT
from fibook.presets import PRESET_NAMES, get_preset


@pytest.mark.slow
def test_run_ids_are_stable_and_distinct():
    configs = runs("optimizers", "book")
    ids = [run_id(c) for c in configs]
    assert len(set(ids)) == len(ids) == 6 * 5
    assert run_id(TrainConfig(lr=0.1)) == run_id(TrainConfig(lr=0.1)) != run_id(TrainConfig(lr=0.2))


@pytest.mark.slow
def test_seed_noise_runs_every_noise_seed_and_shares_seed_0_with_the_headline_sweep():
    f, g = get_preset("book").forgetting, experiments.grids("book")
    configs = runs("seed_noise", "book")
    assert sorted({(c.seed, c.sigma_w) for c in configs}) == sorted(
        (seed, s) for seed in g.noise_seeds for s in g.quick_sigma_w)
    headline = {run_id(c) for c in runs("sgd_remembers", "book")}
    shared = {c.sigma_w for c in configs if run_id(c) in headline}
    assert shared == set(g.quick_sigma_w) & set(f.sigma_w)  # seed 0 is reused, not rerun
    assert all(c.seed == 0 for c in configs if run_id(c) in headline)


@pytest.mark.slow
def test_fused_runs_are_runs_of_their_own():
    """fp32 sums of a fused network run in another order, so its numbers differ: it must not be stored under
    (or counted as) the unfused run's id."""
    plain, fused = runs("sgd_remembers", "book"), runs("sgd_remembers", "book", fused=True)
    assert all(f.fused and not p.fused for p, f in zip(plain, fused, strict=True))
    assert not {run_id(c) for c in plain} & {run_id(c) for c in fused}
    with pytest.raises(ValueError, match="may differ only in sigma_w, seed; these differ: fused"):
        train_population([plain[0], fused[1]], "cpu")


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_the_l2_control_arm_is_the_strongest_lambda_of_the_first_controlled_rate_and_length():
    g = dataclasses.replace(experiments.grids("book"), l2_clock=(
        (0.1, 0.0, 40), (0.01, 0.0, 120), (0.01, 0.02, 120), (0.01, 0.0, 40), (0.01, 0.06, 40), (0.01, 0.01, 40),
        (0.05, 0.1, 10)))  # 0.1 x 40 has no lambda > 0 arm; 0.05 x 10 has no control
    assert experiments.l2_control_arm(g) == (0.01, 0.06, 40)
    with pytest.raises(ValueError, match="no lambda > 0 arm beside a lambda = 0 control"):
        experiments.l2_control_arm(dataclasses.replace(g, l2_clock=((0.1, 0.0, 40), (0.05, 0.1, 10))))


def test_equal_clock_adaptive_arms_are_the_arms_with_a_partner_at_another_rate():
    g = dataclasses.replace(experiments.grids("book"), adaptive_clock=(
        ("adam", 1e-2, 40, 0.0), ("adam", 1e-3, 40, 0.0), ("adam", 5e-3, 80, 0.0), ("adamw", 1e-2, 40, 0.03),
        ("adamw", 5e-3, 80, 0.0), ("muon", 2e-3, 20, 0.0), ("muon", 1e-3, 40, 0.0), ("adam", 1e-2, 80, 0.0)))
    # AdamW differs in its decay (not part of T_adapt): no pair; Adam 1e-2 x 80 has the clock of no other arm
    assert experiments.equal_clock_adaptive_arms(g) == [("adam", 1e-2, 40, 0.0), ("adam", 5e-3, 80, 0.0),
                                                         ("muon", 2e-3, 20, 0.0), ("muon", 1e-3, 40, 0.0)]


@pytest.mark.parametrize("preset", ["smoke", "book", "gpu"])
def test_seeds_runs_each_adaptive_equal_clock_arm_over_the_noise_seeds_at_its_own_precision(preset):
    g = experiments.grids(preset)
    pair = experiments.equal_clock_adaptive_arms(g)
    assert len(pair) >= 2
    grid = {(s, sw) for s in g.noise_seeds for sw in g.quick_sigma_w}
    clock = {(c.optimizer, c.lr, c.epochs, c.weight_decay): c.precision for c in runs("adaptive_clock", preset)}
    for arm in pair:
        mine = [c for c in runs("seeds", preset) if (c.optimizer, c.lr, c.epochs, c.weight_decay) == arm]
        assert {(c.seed, c.sigma_w) for c in mine} == grid
        assert {c.precision for c in mine} == {clock[arm]}


@pytest.mark.parametrize("preset", ["smoke", "book", "gpu"])
def test_seeds_runs_the_l2_control_arm_and_its_control_over_the_noise_seeds(preset):
    g = experiments.grids(preset)
    lr, wd, epochs = experiments.l2_control_arm(g)
    grid = {(s, sw) for s in g.noise_seeds for sw in g.quick_sigma_w}
    arm = {(c.seed, c.sigma_w) for c in runs("seeds", preset)
           if (c.optimizer, c.lr, c.weight_decay, c.epochs) == ("sgd", lr, wd, epochs)}
    assert arm == grid
    if epochs == experiments.base_config(get_preset(preset).forgetting)["epochs"]:  # seed_noise's SGD is its control
        control = {(c.seed, c.sigma_w) for c in runs("seed_noise", preset) if c.lr == lr and c.weight_decay == 0}
        assert control == grid


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["smoke", "book", "gpu"])
def test_tsgd_pair_has_equal_t_sgd_with_twice_the_steps_and_twice_sum_eta(preset):
    configs = experiments.arm_configs("tsgd_pair", preset)
    assert len(configs) == 2 and {c.optimizer for c in configs} == {"sgd"} and len({c.lr for c in configs}) == 1
    (small_steps, small), (big_steps, big) = sorted(experiments.planned_clocks(c) for c in configs)
    # equal up to the partial batch each epoch drops (45,000 images: 703 steps at b = 64, 2 x 351 at b = 128)
    assert big["T_SGD"] == pytest.approx(small["T_SGD"], rel=5e-3)
    assert big_steps == pytest.approx(2 * small_steps, rel=5e-3)
    assert big["T_adapt"] == pytest.approx(2 * small["T_adapt"], rel=5e-3)


@pytest.mark.slow
def test_a_scales_auto_precision_is_resolved_for_the_device_and_shows_in_the_id(monkeypatch):
    cpu = runs("depth", "gpu", device="cpu")
    assert {c.precision for c in cpu} == {auto_precision("cpu")}
    monkeypatch.setattr(devices, "auto_precision", lambda device: "bf16" if torch.device(device).type == "cuda"
                        else "fp32")
    fp32, bf16 = runs("depth", "gpu", device="cpu"), runs("depth", "gpu", device="cuda")
    assert {c.precision for c in fp32} == {"fp32"} and {c.precision for c in bf16} == {"bf16"}
    assert not {run_id(c) for c in fp32} & {run_id(c) for c in bf16}
    assert [dataclasses.replace(c, precision="bf16") for c in fp32] == bf16
    # an explicit precision (book: bf16, smoke: fp32) is the same on every device, and so are the ids
    for preset in ("smoke", "book"):
        assert [run_id(c) for c in runs("optimizers", preset, device="cpu")] == \
            [run_id(c) for c in runs("optimizers", preset, device="cuda")]


UNDER_WAY = ("clock_ladder", "tsgd_pair")  # book sweeps still running: their files hold a part of their grids


@pytest.mark.slow
def test_the_committed_book_runs_are_exactly_the_experiments_book_grids():
    """Every results file of the book holds the runs its experiment's grid defines at the book preset, by id
    (the hash of the config): a change of the config fields, the grids or the precision rule would orphan them."""
    fixed_clock = grids("book").fixed_clock_precision
    for name in EXPERIMENTS:
        path = PROJECT_ROOT / "data" / "results" / name / "book.jsonl"
        stored = [json.loads(line)["id"] for line in path.read_text().splitlines()]
        configs = runs(name, "book", device="cpu")
        assert {c.precision for c in configs} == {fixed_clock if name in UNDER_WAY else "bf16"}
        ids = {run_id(c) for c in configs}
        assert set(stored) <= ids and (name in UNDER_WAY or ids == set(stored)), name
        assert {r.id for r in results.read_records(path)} == set(stored)  # and each id is its config's hash


def test_a_preset_runs_every_arm_at_every_sigma_w_seed_by_seed_with_the_presets_sizes():
    f, g = get_preset("smoke").forgetting, grids("smoke")
    assert [(c.seed, c.sigma_w) for c in runs("seed_noise", "smoke")] == [(0, 0.1), (0, 2.5), (1, 0.1), (1, 2.5)]
    seeds = runs("seeds", "smoke")  # several arms over the noise seeds: every arm at seed 0 before any at seed 1
    assert [c.seed for c in seeds] == sorted(c.seed for c in seeds) and {c.seed for c in seeds} == {0, 1}
    first = [dataclasses.replace(c, seed=1) for c in seeds if c.seed == 0]
    assert first == [c for c in seeds if c.seed == 1]  # the same arms in the same order
    optimizers = runs("optimizers", "smoke")
    assert len(optimizers) == len(f.seeds) * 6 * len(f.sigma_w)
    assert [c.optimizer for c in optimizers[::len(f.sigma_w)]] == ["sgd", "msgd", "adam", "adamw", "muon", "sgd"]
    assert (optimizers[-1].lr, optimizers[-1].weight_decay) == g.l2  # the SGD + L2 arm
    for c in optimizers:
        assert (c.dataset, c.arch, c.width, c.epochs, c.batch_size, c.n_train, c.n_val, c.n_test, c.precision,
                c.fused) == (f.data.dataset, "resnet9", f.width, f.epochs, 128, f.data.n_train, f.data.n_val,
                             f.data.n_test, f.precision, False)


@pytest.mark.parametrize("name", ["clock_ladder", "tsgd_pair"])
@pytest.mark.parametrize("preset", ["book", "paper"])
def test_an_arm_major_experiment_finishes_whole_arms_cheapest_first(name, preset):
    f, g = get_preset(preset).forgetting, grids(preset)
    configs = runs(name, preset)
    seeds, sigmas = get_experiment(name).seeds(f, g), get_experiment(name).sigmas(f, g)
    per_arm = len(seeds) * len(sigmas)
    arms = [configs[i:i + per_arm] for i in range(0, len(configs), per_arm)]
    assert [c.epochs for c in configs] == sorted(c.epochs for c in configs)  # fewest epochs first
    for arm in arms:  # every seed and sigma_w of one arm before the next arm
        assert [(c.seed, c.sigma_w) for c in arm] == [(k, s) for k in seeds for s in sigmas]
        assert len({(c.lr, c.batch_size, c.epochs) for c in arm}) == 1
    seed_major = [TrainConfig(**{**c.to_dict(), "seed": k, "sigma_w": s}) for k in seeds for c in
                  (a[0] for a in arms) for s in sigmas]
    assert sorted(map(run_id, configs)) == sorted(map(run_id, seed_major))  # the same runs, in another order
    assert not get_experiment("seeds").arm_major


def test_the_workers_answer_for_auto_replaces_only_a_presets_auto_precision():
    assert get_preset("gpu").forgetting.precision == "auto" and get_preset("smoke").forgetting.precision == "fp32"
    for answer in ("bf16", "fp32"):
        assert {c.precision for c in runs("depth", "gpu", device="cpu", auto=answer)} == {answer}
        assert {c.precision for c in runs("depth", "smoke", device="cpu", auto=answer)} == {"fp32"}


def test_an_unknown_experiment_is_refused_with_the_names_there_are():
    with pytest.raises(ValueError, match="unknown experiment 'sgd'; choose one of: sgd_remembers, optimizers, "):
        runs("sgd", "smoke")
    assert all(get_experiment(name) is EXPERIMENTS[name] for name in EXPERIMENTS)


def test_an_arms_config_is_its_first_run_and_its_grid_the_experiments_sigma_w():
    f, g = get_preset("book").forgetting, grids("book")
    first = arm_configs("optimizers", "book")
    assert first == [c for c in runs("optimizers", "book") if (c.seed, c.sigma_w) == (f.seeds[0], f.sigma_w[0])]
    assert len(first) == 6
    assert arm_configs("seed_noise", "book") == runs("seed_noise", "book")[:1]  # other seeds: the same arm
    assert sigma_grid("optimizers", "book") == f.sigma_w and sigma_grid("depth", "book") == g.quick_sigma_w
    assert {c.sigma_w for c in runs("depth", "book")} == set(g.quick_sigma_w)


def test_a_runs_id_is_the_sha256_of_its_config_as_sorted_json_and_any_field_changes_it():
    c = runs("optimizers", "smoke")[0]
    blob = json.dumps(c.to_dict(), sort_keys=True, separators=(",", ":")).encode()
    assert run_id(c) == hashlib.sha256(blob).hexdigest()[:16]
    assert run_id(dataclasses.replace(c)) == run_id(c)
    changed = [dataclasses.replace(c, **{k: v}) for k, v in (("sigma_w", 0.2), ("seed", 1), ("precision", "bf16"),
                                                            ("fused", True), ("epochs", 3), ("lr", 0.051),
                                                            ("options", {"momentum": 0.5}))]
    assert len({run_id(x) for x in [c, *changed]}) == 1 + len(changed)
