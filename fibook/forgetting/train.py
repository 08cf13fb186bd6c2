"""Training one Part I run: a BatchNorm ResNet at one sigma_w, recording every quantity of the forgetting paper
(every record a Part I chapter plots was trained here; chapter "Data and protocol" describes the protocol).

``train(config)`` returns a :class:`RunResult` whose history holds, for epochs 0 (the initialization) to E:
train loss/accuracy (eval mode, no augmentation), validation and test loss/accuracy, the Frobenius norm of every
Conv2d/Linear weight and their total, the distance ||W_t - W_0||_F and cosine to the initialization per layer
and in total (:func:`fibook.forgetting.models.member_init_geometry`), and the cumulative clocks sum eta,
sum eta^2 / b and lambda sum eta over the optimizer steps taken; its summary is the :class:`Summary` of
:mod:`fibook.forgetting.evaluation`, which also scores every epoch (epoch 0 on BatchNorm statistics estimated on
the training split; the training run itself is untouched by this).

A run's state as it trains and its result are :mod:`fibook.forgetting.run_state`'s; a run that diverges is recorded
as ``diverged``, never raised.

Given a ``progress`` file, training saves its state there as it goes and resumes from it when stopped part way,
with the numbers it would have had uninterrupted (:mod:`fibook.forgetting.progress`).
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from fibook.forgetting import fused, metrics
from fibook.forgetting.batches import Batches
from fibook.forgetting.config import FUSABLE, TrainConfig
from fibook.forgetting.data import load_dataset
from fibook.forgetting.devices import device_settings, forward_logits, resolve_device, resolve_precision
from fibook.forgetting.evaluation import EVAL_BATCH, evaluate, recalibrated_copy
from fibook.forgetting.models import (
    build_model,
    init_sigma_w_,
    member_init_geometry,
    member_weight_norms,
    weight_layers,
    weight_snapshot,
)
from fibook.forgetting.optimizers import make_optimizer
from fibook.forgetting.progress import Progress
from fibook.forgetting.run_state import RunResult, RunState
from fibook.forgetting.schedules import SCHEDULES
from fibook.forgetting.splits import DatasetSplits


@functools.lru_cache(maxsize=2)
def dataset(name: str) -> DatasetSplits:
    """Dataset ``name`` (:func:`fibook.forgetting.data.load_dataset`), loaded once per process."""
    return load_dataset(name)




def check_population(configs: list[TrainConfig]) -> None:
    """Runs trained in one loop must differ in sigma_w and seed only."""
    if not configs:
        raise ValueError("a population needs at least one config")
    first = configs[0].to_dict()
    for c in configs[1:]:
        differ = sorted(k for k, v in c.to_dict().items() if v != first[k] and k not in FUSABLE)
        if differ:
            raise ValueError(f"configs of one population may differ only in {', '.join(FUSABLE)}; "
                             f"these differ: {', '.join(differ)}")


@dataclass
class _Block:
    """Networks stepped together: ``net`` maps (B, k C, H, W) to (B, k, classes) for members ``members``."""

    net: torch.nn.Module
    inner: torch.nn.Module  # the network whose weight layers carry the members' weights
    opt: object
    members: list[int]
    index: torch.Tensor  # the members as an index on the device, made once (a list index is copied every use)
    base_lrs: list[float]


def build_blocks(configs: list[TrainConfig], fuse: bool, channels: int, classes: int, dev: torch.device,
                 bf16: bool) -> list[_Block]:
    """The networks of a population on ``dev`` with their optimizers: one block of all runs (``fuse``) or one
    block per run, for images of ``channels`` channels and ``classes`` classes."""
    models = []
    for c in configs:
        model = build_model(c.arch, c.width, channels, classes)
        models.append(init_sigma_w_(model, c.sigma_w, seed=c.seed))
    groups = [list(range(len(configs)))] if fuse else [[i] for i in range(len(configs))]
    c = configs[0]
    blocks = []
    for members in groups:
        inner = fused.fuse([models[i] for i in members]) if fuse else models[members[0]]
        net = inner if fuse else fused.Single(inner)
        net.to(dev, torch.float64 if c.precision == "fp64" else torch.float32)
        if bf16:
            net.to(memory_format=torch.channels_last)
        opt = make_optimizer(c.optimizer, inner, c.lr, c.weight_decay, population=len(members), **c.options)
        blocks.append(_Block(net, inner, opt, members, torch.tensor(members, device=dev),
                             [g["lr"] for g in opt.param_groups]))
    return blocks


def train_step(block: _Block, xb: torch.Tensor, yb: torch.Tensor, bf16: bool) -> torch.Tensor:
    """One optimizer step of ``block`` on its members' batches ``xb`` (B, k C, H, W) and labels ``yb`` (B, k);
    returns the members' mean losses (k,), detached, without waiting for the device."""
    logits = forward_logits(block.net, xb, bf16)
    losses = F.cross_entropy(logits.permute(0, 2, 1), yb, reduction="none").mean(0)
    block.opt.zero_grad(set_to_none=True)
    losses.sum().backward()
    block.opt.step()
    return losses.detach()


def train_population(configs: list[TrainConfig], device: str | torch.device | None = "auto",
                     progress: str | os.PathLike | None = None) -> list[RunResult]:
    """Train runs that differ only in sigma_w and seed in one loop, one network each (``fused=False``: the
    reference) or all as one fused network (``fused=True``, :mod:`fibook.forgetting.fused`); return their results
    in order, each with its config at the precision it ran at (``auto`` resolved by :func:`resolve_precision`).

    Each run keeps its own data order (its seed), BatchNorm statistics, optimizer state, history and status;
    a diverged run stops being recorded while the others go on. Training runs under :func:`device_settings`:
    on the CPU on one thread, whatever the caller's thread count.

    ``progress``, a file path, saves the population's state there as it trains and resumes from it when it holds
    these runs part-trained (:mod:`fibook.forgetting.progress`: the same numbers as uninterrupted); the file is
    removed when they finish.
    """
    check_population(configs)
    dev = resolve_device(device)
    configs = [replace(c, precision=resolve_precision(c.precision, dev)) for c in configs]
    with device_settings(dev):
        return _train_population(configs, dev, Progress(progress, configs))


def population_batches(configs: list[TrainConfig], ds: DatasetSplits,
                       dev: torch.device) -> tuple[list[Batches], dict[str, Batches]]:
    """Each run's training batches (its batch size, augmentation and seed) and the evaluation batches of the
    train, val and test splits, all on ``dev``; the runs' batches share the evaluation's copy of the training
    split, so a population of any size holds it once."""
    c = configs[0]
    stats = dict(mean=ds.mean, std=ds.std, device=dev,
                 dtype=torch.float64 if c.precision == "fp64" else torch.float32)
    evals = {name: Batches(split, EVAL_BATCH, shuffle=False, drop_last=False, **stats)
             for name, split in (("train", ds.train), ("val", ds.val), ("test", ds.test))}
    train_batches = [evals["train"].sharing(c.batch_size, shuffle=True, augment=c.augment, drop_last=True,
                                            seed=r.seed) for r in configs]
    return train_batches, evals


def record_epoch(epoch: int, runs: list[RunState], blocks: list[_Block], inits: list[list[torch.Tensor]],
                 evals: dict[str, Batches], lrs: list[float], bf16: bool) -> None:
    """Evaluate every block and append ``epoch`` to the history of each of its runs still live; ``inits`` are the
    blocks' weights at initialization (:func:`fibook.forgetting.models.weight_snapshot`), ``lrs`` the learning
    rates of the steps taken so far. Epoch 0 is evaluated on :func:`recalibrated_copy` of each network."""
    c = runs[0].config
    clocks = metrics.forgetting_clocks(lrs, c.batch_size, c.weight_decay)
    for b, init in zip(blocks, inits, strict=True):
        k = len(b.members)
        net = b.net if epoch > 0 else recalibrated_copy(b.net, k, evals["train"], bf16)
        results = {name: evaluate(net, k, batches, bf16) for name, batches in evals.items()}
        geometry = member_init_geometry(b.inner, init, k)
        for j, (i, norms) in enumerate(zip(b.members, member_weight_norms(b.inner, k), strict=True)):
            if runs[i].live:
                runs[i].record(epoch, {name: scores[j] for name, scores in results.items()}, norms, geometry[j],
                               len(lrs), clocks)


def train_epoch(epoch: int, runs: list[RunState], blocks: list[_Block], train_batches: list[Batches],
                lrs: list[float], total_steps: int, bf16: bool) -> list[float]:
    """One epoch of every block that holds a live run, each run on its own batches; the learning rate of each
    step (the schedule's over ``total_steps``) is appended to ``lrs``. Returns each run's mean training loss."""
    c = runs[0].config
    loss_sums = torch.zeros(len(runs), device=blocks[0].index.device)  # on the population's device
    live = [b for b in blocks if any(runs[i].live for i in b.members)]
    for b in live:
        b.net.train()
    for step_batches in zip(*(tb.epoch(epoch) for tb in train_batches), strict=True):
        mult = SCHEDULES[c.schedule](len(lrs), total_steps)
        for b in live:
            for group, base in zip(b.opt.param_groups, b.base_lrs, strict=True):
                group["lr"] = base * mult
            xb = torch.cat([step_batches[i][0] for i in b.members], dim=1)
            yb = torch.stack([step_batches[i][1] for i in b.members], dim=1)
            loss_sums[b.index] += train_step(b, xb, yb, bf16)
        lrs.append(c.lr * mult)
    return (loss_sums / len(train_batches[0])).tolist()


def _train_population(configs: list[TrainConfig], dev: torch.device, progress: Progress) -> list[RunResult]:
    start = time.perf_counter()
    c = configs[0]
    bf16 = c.precision == "bf16"
    ds = dataset(c.dataset).subset(c.n_train, c.n_val, c.n_test)
    blocks = build_blocks(configs, c.fused, ds.image_shape[0], len(ds.classes), dev, bf16)
    train_batches, evals = population_batches(configs, ds, dev)
    total_steps = c.epochs * len(train_batches[0])
    runs = [RunState(r) for r in configs]
    lrs: list[float] = []
    inits = [weight_snapshot(b.inner) for b in blocks]
    layer_names = [name for name, _ in weight_layers(blocks[0].inner)]
    first, before = progress.restore(dev, blocks, inits, runs, lrs) or (0, 0.0)
    if first == 0:
        record_epoch(0, runs, blocks, inits, evals, lrs, bf16)
        for run in runs:
            run.set_loss_limit(len(ds.classes))
    for epoch in range(first + 1, c.epochs + 1):
        mean_losses = train_epoch(epoch, runs, blocks, train_batches, lrs, total_steps, bf16)
        for run, mean_loss in zip(runs, mean_losses, strict=True):
            run.check_divergence(epoch, mean_loss, len(lrs))
        if not any(run.live for run in runs):
            break
        record_epoch(epoch, runs, blocks, inits, evals, lrs, bf16)
        progress.save(epoch, blocks, inits, runs, lrs, before + time.perf_counter() - start)
    wall = before + time.perf_counter() - start
    progress.finish()
    return [run.result(lrs, layer_names, wall / len(configs), str(dev), progress.earlier) for run in runs]


def train(config: TrainConfig, device: str | torch.device | None = "auto") -> RunResult:
    """Train one run and record its history (see the module docstring). Same config and seed, same numbers
    (on the CPU bit for bit)."""
    return train_population([config], device)[0]
