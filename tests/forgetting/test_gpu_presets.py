"""The ``gpu`` and ``paper`` presets, checked on a CPU before any of their runs reaches a GPU: every run config of
every experiment builds with a unique id that does not depend on the process, its cost is finite, a missing
CIFAR-10 stops a sweep with the command that fetches it, and every distinct (architecture, width, optimizer,
precision, fused) combination trains two steps on random 32x32x3 images through the real trainer."""

import dataclasses
import json
import math
import os
import subprocess
import sys

import pytest
import torch
from synthetic import random_splits

from fibook.__main__ import main
from fibook.forgetting import cluster, devices, results, sweep, train
from fibook.forgetting.cost import run_flops, sweep_cost
from fibook.forgetting.data import DatasetNotFoundError
from fibook.forgetting.experiments import EXPERIMENTS, run_id, runs
from fibook.forgetting.train import train_population
from fibook.paths import PROJECT_ROOT

pytestmark = pytest.mark.slow

PRESETS = ("gpu", "paper")
PRECISIONS = {"cpu": "fp32", "cuda": "bf16"}  # what auto stands for on this test's CPU stand-in and on a GPU
FETCH = "python -m fibook data --cifar10 --download"
# Muon orthogonalizes in bf16 by design: about 30 s a step at width 64 on a CPU without native bf16, where the
# two-step check runs the same iteration in fp32 (same shapes, same code but for the cast)
NS_DTYPE = "bfloat16" if devices.auto_precision("cpu") == "bf16" else "float32"


@pytest.fixture
def auto_by_device(monkeypatch):
    """``auto`` as on a CPU without native bf16 and on a GPU with it, whatever this machine has."""
    monkeypatch.setattr(devices, "auto_precision", lambda device: PRECISIONS[torch.device(device).type])


def preset_configs(preset, device, fused):
    return {name: runs(name, preset, fused=fused, device=device) for name in EXPERIMENTS}


def ids_of_every_preset():
    """Every preset run's id, per (preset, device, fused, experiment), as built in this process."""
    return {f"{preset} {device} {fused} {name}": [run_id(c) for c in configs]
            for preset in PRESETS for device in PRECISIONS for fused in (False, True)
            for name, configs in preset_configs(preset, device, fused).items()}


@pytest.mark.usefixtures("auto_by_device")
def test_every_preset_run_builds_with_a_unique_stable_id_and_a_finite_cost():
    ids = ids_of_every_preset()
    for key, experiment_ids in ids.items():
        assert experiment_ids and len(set(experiment_ids)) == len(experiment_ids), key
    for preset in PRESETS:
        for device, precision in PRECISIONS.items():
            for fused in (False, True):
                for configs in preset_configs(preset, device, fused).values():
                    assert {(c.precision, c.fused, c.dataset) for c in configs} == {(precision, fused, "cifar10")}
                    assert all(math.isfinite(f) and f > 0 for c in configs for f in run_flops(c))
        rows = sweep_cost(preset)  # an experiment whose runs all belong to earlier ones adds none
        assert sum(r["runs"] for r in rows) > 0
        for r in rows:
            assert all(math.isfinite(r[k]) and (r[k] > 0) == (r["runs"] > 0) for k in ("flops", "eval_flops")), r
    # within a preset, the fused runs and the runs of each device are runs of their own (the gpu and paper presets
    # share their seed-0 runs: a run's id is its config's, and the preset is not part of a config)
    for preset in PRESETS:
        variants = [set().union(*(v for k, v in ids.items() if k.startswith(f"{preset} {device} {fused} ")))
                    for device in PRECISIONS for fused in (False, True)]
        assert all(not a & b for k, a in enumerate(variants) for b in variants[k + 1:]), preset
    # the same ids in another process, with another hash seed
    script = ("import json, torch; from fibook.forgetting import devices; import test_gpu_presets as t; "
              "devices.auto_precision = lambda d: t.PRECISIONS[torch.device(d).type]; "
              "print(json.dumps(t.ids_of_every_preset()))")
    env = os.environ | {"PYTHONHASHSEED": "12345", "PYTHONPATH": os.pathsep.join(
        [str(PROJECT_ROOT), str(PROJECT_ROOT / "tests"), str(PROJECT_ROOT / "tests" / "forgetting"),
         os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == ids


def test_a_missing_cifar10_stops_a_sweep_before_any_run_and_names_the_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FIBOOK_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(cluster, "train_population", lambda *a, **k: pytest.fail("trained without its data"))
    with pytest.raises(DatasetNotFoundError, match=FETCH):
        sweep.run_sweep("depth", "gpu", device="cpu", progress=False)
    assert results.read_records(results.results_path("depth", "gpu")) == []
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "depth", "--preset", "gpu", "--device", "cpu", "--quiet"])
    assert stop.value.code == 2 and FETCH in capsys.readouterr().err
    # status needs no data
    assert sweep.status("depth", "gpu", device="cpu")["remaining"] == len(runs("depth", "gpu", device="cpu"))


def training_combinations():
    """One config per distinct (arch, width, optimizer, precision, fused) of the presets, the first met, with the
    largest and smallest sigma_w of its experiment's grid."""
    combos = {}
    for preset in PRESETS:
        for device in PRECISIONS:
            for fused in (False, True):
                for configs in preset_configs(preset, device, fused).values():
                    for c in configs:
                        key = (c.arch, c.width, c.optimizer, c.precision, c.fused)
                        combos.setdefault(key, [c, c])
                        low, high = combos[key]
                        combos[key] = [min(low, c, key=lambda r: r.sigma_w), max(high, c, key=lambda r: r.sigma_w)]
    return combos


@pytest.mark.usefixtures("auto_by_device")
def test_every_preset_combination_trains_two_steps_on_the_cpu(monkeypatch):
    """Batch 1 of 32x32x3 images, 2 classes, 2 images per split: two optimizer steps and two evaluations, fused
    populations of the grid's smallest and largest sigma_w, unfused runs at the largest (Muon's iteration in
    :data:`NS_DTYPE`)."""
    monkeypatch.setattr(train, "dataset", lambda name: random_splits(classes=2, n=2))
    combos = training_combinations()
    assert {k[:3] for k in combos} == {("resnet9", 64, o) for o in ("sgd", "msgd", "adam", "adamw", "muon")} | {
        ("resnet56", 16, "sgd"), ("resnet110", 16, "sgd")}
    assert len(combos) == 7 * 2 * 2
    for (arch, width, optimizer, precision, fused), (low, high) in combos.items():
        population = [low, high] if fused else [high]
        options = population[0].options | ({"ns_dtype": NS_DTYPE} if optimizer == "muon" else {})
        small = [dataclasses.replace(c, n_train=2, n_val=2, n_test=2, batch_size=1, epochs=1, options=options)
                 for c in population]
        for r in train_population(small, "cpu"):
            label = f"{arch} w{width} {optimizer} {precision} fused={fused} sigma_w={r.config.sigma_w}"
            assert r.status == "ok" and r.config.precision == precision and r.config.options == options, label
            assert r.summary.steps == 2 and r.history["epoch"] == [0, 1], label
            assert all(math.isfinite(v) for k in ("train_loss", "val_loss", "test_loss", "weight_norm")
                       for v in r.history[k]), label
            assert r.history["init_distance"][1] > 0, label
