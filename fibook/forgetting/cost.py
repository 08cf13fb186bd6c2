"""What a Part I sweep costs: FLOPs counted from the models themselves, images from the presets (the
introduction's cost table and the rerun table of every Part I chapter), and what reproducing a preset on a given
device has left to do, with hours from a throughput measured there (:func:`reproduce_plan`).

A run costs its training steps (forward + backward) and its evaluation passes: at epoch 0 and after every epoch
the trainer (:mod:`fibook.forgetting.train`) evaluates the model, forward only, on the train, validation and test
splits, and at epoch 0 it also re-estimates BatchNorm statistics with one forward pass over the training split.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from fibook.forgetting.config import TrainConfig
from fibook.forgetting.devices import device_settings, forward_logits, resolve_device
from fibook.forgetting.experiments import EXPERIMENTS, run_id, runs
from fibook.forgetting.models import build_model
from fibook.forgetting.splits import split_sizes
from fibook.forgetting.sweep import plan
from fibook.forgetting.train import build_blocks, train_step
from fibook.presets import get_preset

IMAGE_SHAPES = {"fashion_mnist": (1, 28), "cifar10": (3, 32)}
YARDSTICK_TFLOPS = 100.0  # sustained training FLOP/s (x 1e12) that turns FLOPs into hours: a yardstick, not measured
# Throughput calibration: the runs' usual batch on a GPU, a small one on a CPU (where the time per image barely
# depends on the batch), and the (warm-up, timed) steps of each kind
CALIBRATION_BATCH = {"cuda": 128, "cpu": 8}
CALIBRATION_STEPS = {"cuda": (3, 10), "cpu": (1, 2)}
CALIBRATION_REPEATS = 3  # timed blocks; other processes only ever slow a block down, so the fastest one is kept


def _count_flops(arch: str, width: int, dataset: str, backward: bool) -> float:
    channels, size = IMAGE_SHAPES[dataset]
    model = build_model(arch, width, channels)
    x, y = torch.randn(2, channels, size, size), torch.zeros(2, dtype=torch.long)
    with FlopCounterMode(display=False) as counter:
        if backward:
            F.cross_entropy(model(x), y).backward()
        else:
            with torch.no_grad():
                model.eval()(x)
    return counter.get_total_flops() / 2


@functools.lru_cache(maxsize=32)
def training_flops_per_image(arch: str, width: int, dataset: str) -> float:
    """FLOPs of one forward + backward pass per image, counted by torch's FLOP counter (matrix products and
    convolutions; element-wise work is not counted)."""
    return _count_flops(arch, width, dataset, backward=True)


@functools.lru_cache(maxsize=32)
def forward_flops_per_image(arch: str, width: int, dataset: str) -> float:
    """FLOPs of one forward pass per image (an evaluation pass), counted as in :func:`training_flops_per_image`."""
    return _count_flops(arch, width, dataset, backward=False)


def run_images(config: TrainConfig) -> tuple[int, int]:
    """(training images, evaluation images) of a run that trains all its epochs E. Training steps see
    E * floor(N_train / b) * b images (forward + backward); evaluation passes, forward only, see
    (E + 1) (N_train + N_val + N_test) + N_train (the splits at epoch 0 and after every epoch, and the BatchNorm
    re-estimation at epoch 0). A size None is the whole split (:func:`fibook.forgetting.splits.split_sizes`)."""
    whole = split_sizes(config.dataset)
    n_train, n_val, n_test = (n if n is not None else w
                              for n, w in zip((config.n_train, config.n_val, config.n_test), whole, strict=True))
    train = config.epochs * (n_train // config.batch_size) * config.batch_size
    return train, (config.epochs + 1) * (n_train + n_val + n_test) + n_train


def run_flops(config: TrainConfig) -> tuple[float, float]:
    """(training FLOPs, evaluation FLOPs) of a run: :func:`run_images` times the FLOPs per image."""
    train, evaluation = run_images(config)
    key = (config.arch, config.width, config.dataset)
    return train * training_flops_per_image(*key), evaluation * forward_flops_per_image(*key)


def sweep_cost(preset: str) -> list[dict]:
    """Per experiment at ``preset``: the runs it adds (a run shared with an earlier experiment is counted there
    only, as the sweep engine reuses it), their training and evaluation images, and their FLOPs: ``train_flops``,
    ``eval_flops`` and the total ``flops``."""
    rows, seen = [], set()
    for name in EXPERIMENTS:
        configs = [c for c in runs(name, get_preset(preset)) if run_id(c) not in seen]
        seen.update(run_id(c) for c in configs)
        images = [run_images(c) for c in configs]
        flops = [run_flops(c) for c in configs]
        train_flops, eval_flops = sum(f[0] for f in flops), sum(f[1] for f in flops)
        rows.append({"experiment": name, "runs": len(configs), "images": sum(i[0] for i in images),
                     "eval_images": sum(i[1] for i in images), "train_flops": train_flops,
                     "eval_flops": eval_flops, "flops": train_flops + eval_flops})
    return rows


def hours_at(flops: float, tflops: float = YARDSTICK_TFLOPS) -> float:
    """Hours to do ``flops`` at ``tflops`` x 10^12 FLOP/s sustained: flops / (tflops * 1e12) / 3600."""
    if tflops <= 0:
        raise ValueError(f"tflops must be positive, got {tflops}")
    return flops / (tflops * 1e12) / 3600


def rerun_rows(experiments: list[str], presets: tuple[str, ...] = ("gpu", "paper"),
               tflops: float = YARDSTICK_TFLOPS) -> list[dict]:
    """A chapter's rerun cost: for each of its ``experiments`` at each of ``presets``, the runs it adds (runs shared
    with an earlier experiment are counted there, as in :func:`sweep_cost`), their PFLOP (training and
    evaluation), and the hours at ``tflops`` sustained."""
    unknown = [e for e in experiments if e not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"unknown experiment(s) {unknown}; choose from: {', '.join(EXPERIMENTS)}")
    rows = []
    for preset in presets:
        for r in sweep_cost(preset):
            if r["experiment"] in experiments:
                rows.append({"experiment": r["experiment"], "preset": preset, "runs": r["runs"],
                             "PFLOP (training + evaluation)": f"{r['flops'] / 1e15:,.1f}",
                             f"hours at {tflops:g} TFLOP/s": f"{hours_at(r['flops'], tflops):.3g}"})
    return rows


@dataclass(frozen=True)
class Throughput:
    """Seconds per image measured on one device: of a training step (forward, backward, SGD update) and of an
    evaluation pass (eval mode, forward only)."""

    train_seconds: float
    eval_seconds: float


@functools.cache
def calibrate(arch: str, width: int, dataset: str, precision: str, device: str) -> Throughput:
    """The :class:`Throughput` of one model (``arch``, ``width``, ``dataset``'s image shape) at ``precision``
    (``fp32``, ``bf16`` or ``fp64``) on ``device``, under the trainer's own step and settings
    (:func:`fibook.forgetting.train.train_step`, :func:`~fibook.forgetting.devices.device_settings`), on random
    images: after the warm-up steps, the mean over the timed steps of :data:`CALIBRATION_STEPS`, at batch
    :data:`CALIBRATION_BATCH`, in the fastest of :data:`CALIBRATION_REPEATS` blocks (timeit's rule: a busy machine
    only adds time). Measured once per process (a few seconds on a CPU)."""
    if precision not in ("fp32", "bf16", "fp64"):
        raise ValueError(f"calibrate needs a concrete precision (fp32, bf16 or fp64), got {precision!r}")
    dev = resolve_device(device)
    kind = "cuda" if dev.type == "cuda" else "cpu"
    batch, (warm_up, timed) = CALIBRATION_BATCH[kind], CALIBRATION_STEPS[kind]
    channels, size = IMAGE_SHAPES[dataset]
    config = TrainConfig(dataset=dataset, arch=arch, width=width, precision=precision, batch_size=batch)
    bf16 = precision == "bf16"
    gen = torch.Generator().manual_seed(0)
    dtype = torch.float64 if precision == "fp64" else torch.float32
    x = torch.randn(batch, channels, size, size, generator=gen, dtype=dtype).to(dev)
    y = torch.randint(0, 10, (batch, 1), generator=gen).to(dev)

    def seconds_per_image(step) -> float:
        for _ in range(warm_up):
            step()
        blocks = []
        for _ in range(CALIBRATION_REPEATS):
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            start = time.perf_counter()
            for _ in range(timed):
                step()
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            blocks.append(time.perf_counter() - start)
        return min(blocks) / (timed * batch)

    with device_settings(dev):
        (block,) = build_blocks([config], False, channels, 10, dev, bf16)
        block.net.train()
        train = seconds_per_image(lambda: train_step(block, x, y, bf16))
        block.net.eval()
        with torch.no_grad():
            evaluation = seconds_per_image(lambda: forward_logits(block.net, x, bf16))
    return Throughput(train, evaluation)


def reproduce_plan(preset: str, device: str = "auto", fuse: bool = False) -> list[dict]:
    """What reproducing every Part I experiment of ``preset`` on ``device`` has left to do, one row per experiment:
    ``missing``, the runs a sweep there would train (:func:`.sweep.plan`: not in the experiment's results
    file, nor reusable from another experiment's; a run missing from several experiments is counted at the first,
    which trains it), their ``precision``, training ``images`` and ``eval_images``, ``flops`` (training and
    evaluation), and ``hours``: the images times the seconds per image measured on ``device``
    (:func:`calibrate`, once per architecture, width, dataset and precision) for one run at a time."""
    dev = str(resolve_device(device))
    rows, seen = [], set()
    for name in EXPERIMENTS:
        missing = [c for c in plan(name, preset, fuse, device).pending if run_id(c) not in seen]
        seen.update(run_id(c) for c in missing)
        images = [run_images(c) for c in missing]
        seconds = 0.0
        for c, (train, evaluation) in zip(missing, images, strict=True):
            speed = calibrate(c.arch, c.width, c.dataset, c.precision, dev)
            seconds += train * speed.train_seconds + evaluation * speed.eval_seconds
        rows.append({"experiment": name, "missing": len(missing),
                     "precision": ", ".join(sorted({c.precision for c in missing})),
                     "images": sum(i[0] for i in images), "eval_images": sum(i[1] for i in images),
                     "flops": math.fsum(sum(run_flops(c)) for c in missing), "hours": seconds / 3600})
    return rows
