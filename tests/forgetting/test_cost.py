"""Sweep costs: FLOP counts against the published per-image figures, the evaluation passes counted against the
trainer's own forward passes, shared runs counted once, and the reproduction plan's hours from a measured speed."""

import dataclasses
import math

import pytest
import torch
from synthetic import random_splits, rec

from fibook.forgetting import cost, results, run_state, train
from fibook.forgetting.cluster import make_record
from fibook.forgetting.config import TrainConfig
from fibook.forgetting.cost import (
    Throughput,
    calibrate,
    forward_flops_per_image,
    hours_at,
    reproduce_plan,
    rerun_rows,
    run_flops,
    run_images,
    sweep_cost,
    training_flops_per_image,
)
from fibook.forgetting.experiments import EXPERIMENTS, run_id, runs
from fibook.forgetting.train import train_population


def test_flops_per_image_match_the_known_figures():
    # ResNet-9 at 32x32: about 2.27 GFLOP per image for forward + backward; ResNet-56 about 0.75
    assert training_flops_per_image("resnet9", 64, "cifar10") / 1e9 == pytest.approx(2.27, rel=0.01)
    assert training_flops_per_image("resnet56", 16, "cifar10") / 1e9 == pytest.approx(0.752, rel=0.01)
    # a backward pass costs twice its forward pass (the gradients of the inputs and of the weights)
    for arch, width in (("resnet9", 64), ("resnet110", 16)):
        assert forward_flops_per_image(arch, width, "cifar10") == pytest.approx(
            training_flops_per_image(arch, width, "cifar10") / 3, rel=0.01)


def test_the_evaluation_images_are_the_trainers_forward_passes(monkeypatch):
    """Count the images the trainer passes forward with and without gradients in a real (tiny) run."""
    monkeypatch.setattr(train, "dataset", lambda name: random_splits(n=30, classes=10))
    config = TrainConfig(dataset="cifar10", width=2, epochs=2, batch_size=8, n_train=20, n_val=12, n_test=10,
                         precision="fp32")
    counted = {True: 0, False: 0}
    real_build = train.build_blocks

    def counting_blocks(*args, **kwargs):
        blocks = real_build(*args, **kwargs)
        for b in blocks:
            b.net.register_forward_pre_hook(
                lambda module, inputs: counted.__setitem__(torch.is_grad_enabled(),
                                                           counted[torch.is_grad_enabled()] + len(inputs[0])))
        return blocks

    monkeypatch.setattr(train, "build_blocks", counting_blocks)
    assert train_population([config], "cpu")[0].status == "ok"
    # the epoch-0 BatchNorm re-estimation runs on a copy of the network, which carries the hook along
    assert (counted[True], counted[False]) == run_images(config) == (2 * 16, 3 * (20 + 12 + 10) + 20)
    assert run_flops(config) == (32 * training_flops_per_image("resnet9", 2, "cifar10"),
                                 146 * forward_flops_per_image("resnet9", 2, "cifar10"))
    whole = dataclasses.replace(config, n_train=None, n_val=None, n_test=None, batch_size=128)
    assert run_images(whole) == (2 * (40_000 // 128) * 128, 3 * 60_000 + 40_000)


def test_sweep_cost_counts_each_run_once_with_its_evaluation():
    rows = sweep_cost("book")
    unique = {run_id(c) for name in EXPERIMENTS for c in runs(name, "book")}
    assert sum(r["runs"] for r in rows) == len(unique)
    first = rows[0]
    configs = runs(first["experiment"], "book")
    assert first["images"] == sum(c.epochs * (c.n_train // c.batch_size) * c.batch_size for c in configs)
    assert first["eval_images"] == sum((c.epochs + 1) * (c.n_train + c.n_val + c.n_test) + c.n_train
                                       for c in configs)
    for r in rows:
        assert r["flops"] == r["train_flops"] + r["eval_flops"]
    # at the paper's sizes the evaluation adds about half the training FLOPs
    gpu = sweep_cost("gpu")
    assert sum(r["eval_flops"] for r in gpu) / sum(r["train_flops"] for r in gpu) == pytest.approx(0.5, abs=0.01)


def test_rerun_rows_convert_flops_to_hours_at_the_yardstick():
    assert hours_at(3.6e17, tflops=100) == pytest.approx(1.0)
    rows = rerun_rows(["depth"], presets=("book",), tflops=50)
    (c,) = [r for r in sweep_cost("book") if r["experiment"] == "depth"]
    assert rows == [{"experiment": "depth", "preset": "book", "runs": c["runs"],
                     "PFLOP (training + evaluation)": f"{c['flops'] / 1e15:,.1f}",
                     "hours at 50 TFLOP/s": f"{c['flops'] / 50e12 / 3600:.3g}"}]
    with pytest.raises(ValueError, match="unknown experiment"):
        rerun_rows(["resnet"])
    with pytest.raises(ValueError, match="tflops must be positive"):
        hours_at(1.0, tflops=0)


def test_calibration_measures_seconds_per_image_once():
    speed = calibrate("resnet8", 2, "fashion_mnist", "fp32", "cpu")
    assert 0 < speed.eval_seconds < speed.train_seconds < 1 and math.isfinite(speed.train_seconds)
    assert calibrate("resnet8", 2, "fashion_mnist", "fp32", "cpu") is speed  # measured once per process
    with pytest.raises(ValueError, match="needs a concrete precision"):
        calibrate("resnet8", 2, "fashion_mnist", "auto", "cpu")


def test_the_reproduction_plan_prices_what_is_missing_at_the_measured_speed(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    asked = set()

    def speed(arch, width, dataset, precision, device):
        asked.add((arch, width, dataset, precision, device))
        return Throughput(train_seconds=1e-3 * width, eval_seconds=2e-4 * width)

    monkeypatch.setattr(cost, "calibrate", speed)
    rows = reproduce_plan("smoke", "cpu")
    unique = {run_id(c): c for name in EXPERIMENTS for c in runs(name, "smoke", device="cpu")}
    assert [r["experiment"] for r in rows] == list(EXPERIMENTS)
    assert sum(r["missing"] for r in rows) == len(unique)
    assert {r["precision"] for r in rows if r["missing"]} == {"fp32"}
    seconds = sum(run_images(c)[0] * 1e-3 * c.width + run_images(c)[1] * 2e-4 * c.width for c in unique.values())
    assert sum(r["hours"] for r in rows) == pytest.approx(seconds / 3600, rel=1e-12)
    assert sum(r["flops"] for r in rows) == pytest.approx(sum(sum(run_flops(c)) for c in unique.values()))
    assert {a[0] for a in asked} == {c.arch for c in unique.values()} and {a[4] for a in asked} == {"cpu"}
    # a recorded run is no longer missing, in its experiment nor in another that shares it
    first = runs("sgd_remembers", "smoke", device="cpu")[0]
    record = make_record(_finished(first), "sgd_remembers", "smoke", {})
    results.append_record(results.results_path("sgd_remembers", "smoke"), record)
    after = reproduce_plan("smoke", "cpu")
    assert sum(r["missing"] for r in after) == len(unique) - 1
    assert after[0]["missing"] == rows[0]["missing"] - 1


def _finished(config):
    """A finished run of ``config`` (its summary and history made up: the store only checks their form)."""
    r = rec(config.sigma_w, config.seed, 0.5, 1, 1.0)
    return run_state.RunResult(config=config, status="ok", history=r.history, layer_names=[], summary=r.summary,
                           wall_seconds=1.0, device="cpu")
