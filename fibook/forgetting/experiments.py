"""Part I experiments as data: each figure of the forgetting chapters is a named grid of training runs.

An experiment is a list of *arms* (optimizer, learning rate, weight decay, batch size, architecture, epochs)
crossed with a sigma_w grid and the scale's seeds. Every size comes from :mod:`fibook.scales`, so one name and
one scale define the runs exactly; each run's id is a hash of its full config.

=================  ===========================================================================================
``sgd_remembers``  low-learning-rate SGD at b = 128 across the main sigma_w grid (test accuracy, interpolation,
                   weight norms, repair gap)
``optimizers``     SGD, momentum SGD, Adam, AdamW, Muon and SGD + L2 on the main grid
``long_training``  low-learning-rate SGD trained for each of the scale's ``long_epochs``
``l2_lr``          SGD over learning rate x L2 strength (the spread heatmap)
``batch_size``     low-learning-rate SGD at every batch size, the learning rate held fixed
``depth``          low-learning-rate SGD on ResNet-9 and deeper CIFAR ResNets
``seed_noise``     low-learning-rate SGD over the scale's ``noise_seeds`` (how much of a spread is seed noise)
=================  ===========================================================================================
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

from fibook.data import train_split_size
from fibook.forgetting.metrics import forgetting_clocks
from fibook.forgetting.train import FUSABLE, SCHEDULES, TrainConfig
from fibook.scales import ForgettingScale, Scale, get_scale

CIFAR_RESNET_WIDTH = 16  # He et al.'s first-stage width; ResNet-9's width comes from the scale
ADAM_LR = 1e-3
ADAMW_WEIGHT_DECAY = 1e-2
MUON_LR = 0.02


def _scale_seeds(f: ForgettingScale) -> tuple[int, ...]:
    return f.seeds


@dataclass(frozen=True)
class Experiment:
    """A named grid: ``arms(scale)`` lists config overrides, ``sigmas(scale)`` the sigma_w grid, ``seeds(scale)``
    the seeds (the scale's ``seeds`` unless the experiment is about seeds)."""

    name: str
    description: str
    arms: Callable[[ForgettingScale], list[dict]]
    sigmas: Callable[[ForgettingScale], tuple[float, ...]]
    seeds: Callable[[ForgettingScale], tuple[int, ...]] = _scale_seeds


def _main_grid(f: ForgettingScale) -> tuple[float, ...]:
    return f.sigma_w


def _quick_grid(f: ForgettingScale) -> tuple[float, ...]:
    return f.quick_sigma_w


def _sgd(f: ForgettingScale, **kw) -> dict:
    return {"optimizer": "sgd", "lr": f.sgd_lr, **kw}


def _optimizer_arms(f: ForgettingScale) -> list[dict]:
    l2_lr, l2_wd = f.l2
    return [
        _sgd(f),
        {"optimizer": "msgd", "lr": f.sgd_lr},
        {"optimizer": "adam", "lr": ADAM_LR},
        {"optimizer": "adamw", "lr": ADAM_LR, "weight_decay": ADAMW_WEIGHT_DECAY},
        {"optimizer": "muon", "lr": MUON_LR, "options": {"adam_lr": ADAM_LR}},
        {"optimizer": "sgd", "lr": l2_lr, "weight_decay": l2_wd},
    ]


def _depth_arm(f: ForgettingScale, arch: str) -> dict:
    return _sgd(f, arch=arch, width=f.width if arch == "resnet9" else CIFAR_RESNET_WIDTH)


EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (
    Experiment("sgd_remembers", "low-learning-rate SGD across sigma_w", lambda f: [_sgd(f)], _main_grid),
    Experiment("optimizers", "SGD, momentum SGD, Adam, AdamW, Muon, SGD + L2", _optimizer_arms, _main_grid),
    Experiment("long_training", "low-learning-rate SGD trained for longer",
               lambda f: [_sgd(f, epochs=e) for e in f.long_epochs], _quick_grid),
    Experiment("l2_lr", "SGD over learning rate x L2 strength",
               lambda f: [{"optimizer": "sgd", "lr": lr, "weight_decay": wd} for lr in f.lr_grid for wd in f.wd_grid],
               _quick_grid),
    Experiment("batch_size", "low-learning-rate SGD at each batch size",
               lambda f: [_sgd(f, batch_size=b) for b in f.batch_sizes], _quick_grid),
    Experiment("depth", "ResNet-9 vs deeper CIFAR ResNets", lambda f: [_depth_arm(f, a) for a in f.depths],
               _quick_grid),
    Experiment("seed_noise", "low-learning-rate SGD over several seeds", lambda f: [_sgd(f)], _quick_grid,
               lambda f: f.noise_seeds),
)}


def get_experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose one of: {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]


def base_config(f: ForgettingScale) -> dict:
    """The fields every run of a scale shares."""
    d = f.data
    return dict(dataset=d.dataset, arch="resnet9", width=f.width, epochs=f.epochs, batch_size=128,
                n_train=d.n_train, n_val=d.n_val, n_test=d.n_test, precision=f.precision)


def runs(name: str, scale: str | Scale | None = None, fused: bool = False) -> list[TrainConfig]:
    """Every run of experiment ``name`` at ``scale``: arms x sigma_w x seeds, in a stable order (``fused``: the
    same runs trained as fused populations, which are runs of their own, see :mod:`fibook.sweep`)."""
    exp, f = get_experiment(name), get_scale(scale).forgetting
    base = base_config(f) | {"fused": fused}
    return [TrainConfig(**{**base, **arm, "sigma_w": sigma, "seed": seed})
            for arm in exp.arms(f) for seed in exp.seeds(f) for sigma in exp.sigmas(f)]


def arm_configs(name: str, scale: str | Scale | None = None) -> list[TrainConfig]:
    """The first run of each arm of experiment ``name`` at ``scale`` (an arm: the runs that differ only in
    sigma_w and seed), in the experiment's order."""
    seen: dict[tuple, TrainConfig] = {}
    for c in runs(name, scale):
        seen.setdefault(tuple((k, repr(v)) for k, v in c.to_dict().items() if k not in FUSABLE), c)
    return list(seen.values())


def planned_clocks(config: TrainConfig) -> tuple[int, dict[str, float]]:
    """The optimizer steps a run will take, ``epochs * floor(n_train / b)`` (the last partial batch of an epoch
    is dropped; ``n_train`` None means the whole training split), and its clocks over them
    (:func:`fibook.forgetting.metrics.forgetting_clocks` on its schedule's step sizes)."""
    n = config.n_train if config.n_train is not None else train_split_size(config.dataset)
    steps = config.epochs * (n // config.batch_size)
    lrs = [config.lr * SCHEDULES[config.schedule](k, steps) for k in range(steps)]
    return steps, forgetting_clocks(lrs, config.batch_size, config.weight_decay)


def run_id(config: TrainConfig) -> str:
    """A stable id: the first 16 hex digits of the SHA-256 of the config as sorted JSON."""
    blob = json.dumps(config.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
