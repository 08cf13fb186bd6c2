"""Sweep costs: FLOP counts against the published per-image figures, and shared runs counted once."""

import pytest

from fibook.cost import hours_at, rerun_rows, sweep_cost, training_flops_per_image
from fibook.forgetting.experiments import EXPERIMENTS, run_id, runs


def test_flops_per_image_match_the_known_figures():
    # ResNet-9 at 32x32: about 2.27 GFLOP per image for forward + backward; ResNet-56 about 0.75
    assert training_flops_per_image("resnet9", 64, "cifar10") / 1e9 == pytest.approx(2.27, rel=0.01)
    assert training_flops_per_image("resnet56", 16, "cifar10") / 1e9 == pytest.approx(0.752, rel=0.01)


def test_sweep_cost_counts_each_run_once():
    rows = sweep_cost("book")
    unique = {run_id(c) for name in EXPERIMENTS for c in runs(name, "book")}
    assert sum(r["runs"] for r in rows) == len(unique)
    first = rows[0]
    configs = runs(first["experiment"], "book")
    assert first["images"] == sum(c.epochs * (c.n_train // c.batch_size) * c.batch_size for c in configs)


def test_rerun_rows_convert_flops_to_hours_at_the_yardstick():
    assert hours_at(3.6e17, tflops=100) == pytest.approx(1.0)
    rows = rerun_rows(["depth"], scales=("book",), tflops=50)
    (cost,) = [r for r in sweep_cost("book") if r["experiment"] == "depth"]
    assert rows == [{"experiment": "depth", "scale": "book", "runs": cost["runs"],
                     "training PFLOP": f"{cost['flops'] / 1e15:,.1f}",
                     "hours at 50 TFLOP/s": f"{cost['flops'] / 50e12 / 3600:.3g}"}]
    with pytest.raises(ValueError, match="unknown experiment"):
        rerun_rows(["resnet"])
    with pytest.raises(ValueError, match="tflops must be positive"):
        hours_at(1.0, tflops=0)
