"""What a Part I sweep costs: training FLOPs counted from the models themselves, images from the scales (the
introduction's cost table and the rerun table of every Part I chapter)."""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from fibook.forgetting.experiments import EXPERIMENTS, run_id, runs
from fibook.forgetting.models import build_model
from fibook.scales import get_scale

IMAGE_SHAPES = {"fashion_mnist": (1, 28), "cifar10": (3, 32)}
YARDSTICK_TFLOPS = 100.0  # sustained training FLOP/s (x 1e12) that turns FLOPs into hours: a yardstick, not measured


@functools.lru_cache(maxsize=32)
def training_flops_per_image(arch: str, width: int, dataset: str) -> float:
    """FLOPs of one forward + backward pass per image, counted by torch's FLOP counter (matrix products and
    convolutions; element-wise work is not counted)."""
    channels, size = IMAGE_SHAPES[dataset]
    model = build_model(arch, width, channels)
    x, y = torch.randn(2, channels, size, size), torch.zeros(2, dtype=torch.long)
    with FlopCounterMode(display=False) as counter:
        F.cross_entropy(model(x), y).backward()
    return counter.get_total_flops() / 2


def sweep_cost(scale: str | None = None) -> list[dict]:
    """Per experiment at ``scale``: the runs it adds (a run shared with an earlier experiment is counted there
    only, as the sweep engine reuses it), their training images and training FLOPs (evaluation excluded)."""
    rows, seen = [], set()
    for name in EXPERIMENTS:
        configs = [c for c in runs(name, get_scale(scale)) if run_id(c) not in seen]
        seen.update(run_id(c) for c in configs)
        images = sum(c.epochs * (c.n_train // c.batch_size) * c.batch_size for c in configs)
        flops = sum(c.epochs * (c.n_train // c.batch_size) * c.batch_size
                    * training_flops_per_image(c.arch, c.width, c.dataset) for c in configs)
        rows.append({"experiment": name, "runs": len(configs), "images": images, "flops": flops})
    return rows


def hours_at(flops: float, tflops: float = YARDSTICK_TFLOPS) -> float:
    """Hours to do ``flops`` at ``tflops`` x 10^12 FLOP/s sustained: flops / (tflops * 1e12) / 3600."""
    if tflops <= 0:
        raise ValueError(f"tflops must be positive, got {tflops}")
    return flops / (tflops * 1e12) / 3600


def rerun_rows(experiments: list[str], scales: tuple[str, ...] = ("gpu", "paper"),
               tflops: float = YARDSTICK_TFLOPS) -> list[dict]:
    """A chapter's rerun cost: for each of its ``experiments`` at each of ``scales``, the runs it adds (runs shared
    with an earlier experiment are counted there, as in :func:`sweep_cost`), their training PFLOP, and the hours
    at ``tflops`` sustained."""
    unknown = [e for e in experiments if e not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"unknown experiment(s) {unknown}; choose from: {', '.join(EXPERIMENTS)}")
    rows = []
    for scale in scales:
        for r in sweep_cost(scale):
            if r["experiment"] in experiments:
                rows.append({"experiment": r["experiment"], "scale": scale, "runs": r["runs"],
                             "training PFLOP": f"{r['flops'] / 1e15:,.1f}",
                             f"hours at {tflops:g} TFLOP/s": f"{hours_at(r['flops'], tflops):.3g}"})
    return rows
