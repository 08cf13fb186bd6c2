"""Part I experiments as data (fibook.forgetting.experiments): the runs a name and a preset define, their ids,
the precision ``auto`` resolves to, and the committed book runs' ids."""

import dataclasses
import hashlib
import json

import pytest
import torch

from fibook.forgetting import devices, results
from fibook.forgetting.devices import auto_precision
from fibook.forgetting.experiments import EXPERIMENTS, arm_configs, get_experiment, grids, run_id, runs, sigma_grid
from fibook.paths import PROJECT_ROOT
from fibook.presets import get_preset


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
