"""Part I experiments as data: each figure of the forgetting chapters is a named grid of training runs.

An experiment is a list of *arms* (optimizer, learning rate, weight decay, batch size, architecture, epochs)
crossed with a sigma_w grid and the preset's seeds. The sizes (data, width, epochs, main sigma_w grid, seeds)
come from :mod:`fibook.presets`, the grids and rates of each experiment from :data:`GRIDS` here, so one name and
one preset define the runs exactly; each run's id is a hash of its full config.

==================  ==========================================================================================
``sgd_remembers``   low-learning-rate SGD at b = 128 across the main sigma_w grid (test accuracy, interpolation,
                    weight norms, repair gap)
``optimizers``      SGD, momentum SGD, Adam, AdamW, Muon and SGD + L2 on the main grid
``long_training``   low-learning-rate SGD trained for each of the preset's ``long_epochs``
``l2_lr``           SGD over learning rate x L2 strength (the spread heatmap)
``batch_size``      low-learning-rate SGD at every batch size, the learning rate held fixed
``depth``           low-learning-rate SGD on ResNet-9 and deeper CIFAR ResNets
``seed_noise``      low-learning-rate SGD over the preset's ``noise_seeds`` (how much of a spread is seed noise)
``adaptive_clock``  Adam, AdamW and Muon at (lr, epochs) pairs spanning T_adapt = sum eta (do adaptive methods
                    forget on their own clock?)
``l2_clock``        SGD + L2 at (lambda, epochs) pairs spanning T_L2 = lambda sum eta at one learning rate, with
                    lambda = 0 controls at each length (does L2 forget on its clock, apart from the rate?)
``seeds``           the headline arms (SGD, Adam, AdamW, Muon, SGD + L2), the clock arms at their longest clock,
                    the L2-control verdict's SGD + L2 arm and the adaptive equal-clock pair over the preset's
                    ``noise_seeds`` on the quick grid: the error bars of the spreads
``clock_ladder``    Adam at one T_adapt = sum eta reached by rates spanning a decade (eta x epochs fixed), over the
                    ``noise_seeds``: does the clock or the rate do the forgetting?
``tsgd_pair``       low-learning-rate SGD at two (batch, epochs) of equal T_SGD = sum eta^2 / b and sum eta apart by
                    2x, over the ``noise_seeds``: does T_SGD or plain sum eta order the spreads?
==================  ==========================================================================================
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

import torch

from fibook.forgetting.config import FUSABLE, TrainConfig
from fibook.forgetting.devices import resolve_device, resolve_precision
from fibook.forgetting.metrics import forgetting_clocks
from fibook.forgetting.schedules import SCHEDULES
from fibook.forgetting.splits import train_split_size
from fibook.presets import ForgettingPreset, Preset, get_preset

CIFAR_RESNET_WIDTH = 16  # He et al.'s first-stage width; ResNet-9's width comes from the preset
ADAM_LR = 1e-3
ADAMW_WEIGHT_DECAY = 1e-2
MUON_LR = 0.02


@dataclass(frozen=True)
class Grids:
    """Part I's grids and rates at one preset (the sizes they run at are the preset's, :mod:`fibook.presets`).

    Learning rates that the paper sets for 300 CIFAR-10 epochs are replaced at the smaller presets by rates that
    reach similar forgetting clocks in fewer steps: ``sgd_lr`` is the "low-learning-rate SGD" rate of every
    experiment, ``l2`` the (lr, weight decay) of the SGD + L2 arm of ``optimizers`` (the paper's
    eta = lambda = 1e-2 give T_L2 = 9.36 over 93,600 steps). ``quick_sigma_w`` is the sigma_w grid of the costlier
    sweeps (``long_training``, ``l2_lr``, ``batch_size``, ``depth``, ``seed_noise``; the others run the preset's
    main grid). Per experiment: ``long_epochs`` the training lengths of ``long_training``, ``lr_grid`` x
    ``wd_grid`` the heatmap of ``l2_lr``, ``batch_sizes`` those of ``batch_size``, ``depths`` the architectures of
    ``depth``, ``noise_seeds`` the seeds of ``seed_noise`` (how much of a spread is seed-to-seed variation),
    ``adaptive_clock`` the (optimizer, lr, epochs, weight decay) arms of ``adaptive_clock``: Adam at T_adapt =
    lr x steps over at least 1.5 decades, with two pairs that reach the same T_adapt by different rates and
    lengths, AdamW with a decoupled decay that acts (lambda lr per step near 1e-4...1e-3) over the same span, and
    Muon at two clocks; ``l2_clock`` the (lr, weight decay, epochs) arms of ``l2_clock``: SGD + L2 at one rate,
    T_L2 = lambda lr x steps from about 0.1 to at least 4 with a per-step shrink lambda lr of 1e-4...1e-3, a
    lambda = 0 control at every length and an equal-T_L2 pair reached by different lambda and length;
    ``clock_ladder`` the (lr, epochs) rungs of Adam at one T_adapt; ``tsgd_pair`` the two (batch size, epochs)
    of equal T_SGD (4x the epochs at 2x the batch: 2x the steps and 2x sum eta); ``fixed_clock_precision`` the
    precision of those two experiments where it is not the preset's (None keeps the preset's).
    """

    sgd_lr: float
    l2: tuple[float, float]
    quick_sigma_w: tuple[float, ...]
    long_epochs: tuple[int, ...]
    lr_grid: tuple[float, ...]
    wd_grid: tuple[float, ...]
    batch_sizes: tuple[int, ...]
    depths: tuple[str, ...]
    noise_seeds: tuple[int, ...]
    adaptive_clock: tuple[tuple[str, float, int, float], ...]
    l2_clock: tuple[tuple[float, float, int], ...]
    clock_ladder: tuple[tuple[float, int], ...]
    tsgd_pair: tuple[tuple[int, int], ...]
    fixed_clock_precision: str | None = None


SIGMA_W_QUICK = (0.1, 0.5, 2.5)
# The paper's settings (Das et al. 2026; eta = 1e-3 at b = 128 reproduces its quoted T_SGD values).
_PAPER_GRIDS = Grids(sgd_lr=1e-3, l2=(1e-2, 1e-2), quick_sigma_w=SIGMA_W_QUICK, long_epochs=(300, 5000),
                     lr_grid=(1e-3, 3e-3, 1e-2, 3e-2), wd_grid=(0.0, 1e-4, 1e-3, 1e-2),
                     batch_sizes=(16, 32, 64, 128, 256), depths=("resnet9", "resnet56", "resnet110"),
                     noise_seeds=(0, 1, 2),
                     # T_adapt over 312 steps an epoch: Adam 2.8, 9.4, 28, 31, 94 (twice: the paper's Adam, and
                     # half its rate for twice as long); AdamW at the paper's decay 1e-2, T_L2 0.31 and 0.94; Muon
                     # 187 and the paper's 1,872
                     adaptive_clock=(("adam", 3e-5, 300, 0.0), ("adam", 1e-4, 300, 0.0), ("adam", 3e-4, 300, 0.0),
                                     ("adam", 1e-3, 100, 0.0), ("adam", 1e-3, 300, 0.0), ("adam", 5e-4, 600, 0.0),
                                     ("adamw", 1e-3, 100, 1e-2), ("adamw", 1e-3, 300, 1e-2),
                                     ("muon", 2e-3, 300, 0.0), ("muon", 2e-2, 300, 0.0)),
                     # eta = 1e-2 (the paper's L2 arm): T_L2 0.94, 4.7, 9.36 (twice: the paper's lambda = 1e-2 for
                     # 300 epochs, and 2e-2 for 150); lambda = 0 controls at 30, 150 and 300 epochs
                     l2_clock=((1e-2, 0.0, 30), (1e-2, 1e-2, 30), (1e-2, 0.0, 150), (1e-2, 1e-2, 150),
                               (1e-2, 2e-2, 150), (1e-2, 0.0, 300), (1e-2, 1e-2, 300)),
                     # the paper's Adam (T_adapt 93.6) and the same clock at 1/2, 1/4 and 1/10 of its rate
                     clock_ladder=((1e-3, 300), (5e-4, 600), (2.5e-4, 1200), (1e-4, 3000)),
                     tsgd_pair=((64, 300), (128, 1200)))
GRIDS: dict[str, Grids] = {
    "smoke": Grids(sgd_lr=0.05, l2=(0.1, 0.05), quick_sigma_w=(0.1, 2.5), long_epochs=(1, 2), lr_grid=(0.05,),
                   wd_grid=(0.0, 0.05), batch_sizes=(64, 128), depths=("resnet9", "resnet8"), noise_seeds=(0, 1),
                   adaptive_clock=(("adam", 1e-3, 1, 0.0), ("adam", 5e-4, 2, 0.0), ("adam", 1e-3, 2, 0.0),
                                   ("adamw", 1e-3, 2, 0.03), ("muon", 5e-3, 1, 0.0)),
                   l2_clock=((0.05, 0.0, 1), (0.05, 0.05, 1), (0.05, 0.0, 2), (0.05, 0.025, 2)),
                   clock_ladder=((1e-3, 1), (5e-4, 2)), tsgd_pair=((64, 1), (128, 4))),
    # 40 epochs x 39 steps = 1,560 steps; eta = 1e-2 gives T_SGD = 1.2e-3 (paper: 7.3e-4), and
    # (eta, lambda) = (0.1, 0.06) gives T_L2 = 9.36 as in the paper's L2 arm.
    "book": Grids(sgd_lr=1e-2, l2=(0.1, 0.06), quick_sigma_w=SIGMA_W_QUICK, long_epochs=(40, 120),
                  lr_grid=(1e-2, 1e-1), wd_grid=(0.0, 1e-2, 6e-2), batch_sizes=(16, 32, 64, 128, 256),
                  depths=("resnet9", "resnet20", "resnet32"), noise_seeds=(0, 1, 2),
                  # T_adapt over 39 steps an epoch: Adam 0.78, 1.56 (the optimizers chapter's Adam), 4.68, 15.6
                  # (twice: lr 1e-2 for 40 epochs and 5e-3 for 80), 31.2; AdamW at lambda = 0.03 (shrink lambda lr
                  # 3e-4 a step at lr 1e-2) 1.56, 15.6, 31.2 with T_L2 0.047, 0.47, 0.94; Muon 7.8 and 31.2 (the
                  # optimizers chapter's)
                  adaptive_clock=(("adam", 5e-4, 40, 0.0), ("adam", 1e-3, 40, 0.0), ("adam", 3e-3, 40, 0.0),
                                  ("adam", 1e-2, 40, 0.0), ("adam", 5e-3, 80, 0.0), ("adam", 1e-2, 80, 0.0),
                                  ("adamw", 1e-2, 40, 0.03), ("muon", 5e-3, 40, 0.0), ("muon", MUON_LR, 40, 0.0),
                                  ("adamw", 1e-2, 80, 0.03), ("adamw", 1e-3, 40, 0.03)),
                  # eta = 1e-2 (the book's low-learning-rate SGD): T_L2 0.156, 0.94 (twice: lambda 0.06 for 40
                  # epochs and 0.02 for 120), 2.8, 4.68 (shrink 1e-3 a step); lambda = 0 controls at 40 and 120
                  l2_clock=((1e-2, 0.0, 40), (1e-2, 1e-2, 40), (1e-2, 6e-2, 40), (1e-2, 0.0, 120),
                            (1e-2, 0.1, 120), (1e-2, 6e-2, 120), (1e-2, 2e-2, 120)),
                  # T_adapt = 15.6 (adaptive_clock's equal-clock pair) at rates 1e-2 ... 1e-3
                  clock_ladder=((1e-2, 40), (5e-3, 80), (2.5e-3, 160), (1e-3, 400)),
                  # T_SGD = 4.9e-3: b = 64 for 40 epochs (3,120 steps) and b = 128 for 160 (6,240 steps)
                  tsgd_pair=((64, 40), (128, 160)),
                  # fp32, the reference precision: these runs were trained on CPUs without bf16 units, where bf16
                  # is an order of magnitude slower (benchmarks/README.md); the bf16 runs of the rungs that
                  # adaptive_clock and batch_size hold are a paired precision check
                  fixed_clock_precision="fp32"),
    "gpu": _PAPER_GRIDS,
    "paper": _PAPER_GRIDS,
}


def grids(preset: str | Preset) -> Grids:
    """Part I's grids and rates at ``preset``; a preset without them says where to add them."""
    name = get_preset(preset).name
    if name not in GRIDS:
        raise ValueError(f"preset {name!r} has no Part I grids; add an entry to GRIDS in {__name__}")
    return GRIDS[name]


def _scale_seeds(f: ForgettingPreset, g: Grids) -> tuple[int, ...]:
    return f.seeds


@dataclass(frozen=True)
class Experiment:
    """A named grid: ``arms(f, g)`` lists config overrides, ``sigmas(f, g)`` the sigma_w grid, ``seeds(f, g)``
    the seeds (the preset's ``seeds`` unless the experiment is about seeds), from the preset's sizes ``f`` and
    Part I's grids ``g`` at that preset. ``arm_major``: its runs are ordered arm by arm, fewest epochs first
    (:func:`runs`), for an experiment whose arms differ several-fold in cost."""

    name: str
    description: str
    arms: Callable[[ForgettingPreset, Grids], list[dict]]
    sigmas: Callable[[ForgettingPreset, Grids], tuple[float, ...]]
    seeds: Callable[[ForgettingPreset, Grids], tuple[int, ...]] = _scale_seeds
    arm_major: bool = False


def _main_grid(f: ForgettingPreset, g: Grids) -> tuple[float, ...]:
    return f.sigma_w


def _quick_grid(f: ForgettingPreset, g: Grids) -> tuple[float, ...]:
    return g.quick_sigma_w


def _sgd(g: Grids, **kw) -> dict:
    return {"optimizer": "sgd", "lr": g.sgd_lr, **kw}


def _optimizer_arms(f: ForgettingPreset, g: Grids) -> list[dict]:
    l2_lr, l2_wd = g.l2
    return [
        _sgd(g),
        {"optimizer": "msgd", "lr": g.sgd_lr},
        {"optimizer": "adam", "lr": ADAM_LR},
        {"optimizer": "adamw", "lr": ADAM_LR, "weight_decay": ADAMW_WEIGHT_DECAY},
        {"optimizer": "muon", "lr": MUON_LR, "options": {"adam_lr": ADAM_LR}},
        {"optimizer": "sgd", "lr": l2_lr, "weight_decay": l2_wd},
    ]


def _adaptive_arm(optimizer: str, lr: float, epochs: int, weight_decay: float) -> dict:
    arm = {"optimizer": optimizer, "lr": lr, "epochs": epochs, "weight_decay": weight_decay}
    return arm | {"options": {"adam_lr": ADAM_LR}} if optimizer == "muon" else arm


def l2_control_arm(g: Grids) -> tuple[float, float, int]:
    """The (lr, lambda, epochs) of ``l2_clock`` that the L2-control verdict reads against its lambda = 0 control:
    the strongest lambda of the first (lr, epochs) that holds a lambda = 0 control (smallest lr, then fewest
    epochs; :func:`fibook.forgetting.claims.time_lr_l2_batch.l2_rows` orders its rows so)."""
    controlled = sorted({(lr, e) for lr, wd, e in g.l2_clock if wd == 0})
    with_l2 = [(lr, e) for lr, e in controlled if any(a[1] > 0 and (a[0], a[2]) == (lr, e) for a in g.l2_clock)]
    if not with_l2:
        raise ValueError("l2_clock holds no lambda > 0 arm beside a lambda = 0 control of the same rate and length")
    lr, e = with_l2[0]
    return lr, max(a[1] for a in g.l2_clock if (a[0], a[2]) == (lr, e)), e


def equal_clock_adaptive_arms(g: Grids) -> list[tuple[str, float, int, float]]:
    """The ``adaptive_clock`` arms that have an equal-T_adapt partner: the same method and decay, the same
    lr x epochs (to 9 significant digits) at another rate (the pairs that
    :func:`fibook.forgetting.collapse.equal_clock_pairs` finds among them), in ``adaptive_clock``'s order."""
    def clock(a):
        return a[0], a[3], f"{a[1] * a[2]:.9g}"

    return [a for a in g.adaptive_clock if any(clock(b) == clock(a) and b[1] != a[1] for b in g.adaptive_clock)]


def _seed_arms(f: ForgettingPreset, g: Grids) -> list[dict]:
    """The optimizer comparison without momentum SGD, per method of the two clock experiments its arm of the
    longest clock (Adam, AdamW, Muon on T_adapt; SGD + L2 on T_L2), the SGD + L2 arm of the L2-control verdict
    (:func:`l2_control_arm`; its lambda = 0 control is ``seed_noise``'s SGD where the lengths agree), and the
    adaptive arms of an equal-clock pair (:func:`equal_clock_adaptive_arms`), so that pair is judged on its own
    seeds at its own precision."""
    headline = [a for a in _optimizer_arms(f, g) if a["optimizer"] != "msgd"]
    longest = {}
    for a in g.adaptive_clock:
        if a[0] not in longest or a[1] * a[2] > longest[a[0]][1] * longest[a[0]][2]:
            longest[a[0]] = a
    l2 = [max((a for a in g.l2_clock if a[1] > 0), key=lambda a: a[1] * a[2]), l2_control_arm(g)]
    arms = headline + [_adaptive_arm(*a) for a in longest.values()] + [
        {"optimizer": "sgd", "lr": lr, "weight_decay": wd, "epochs": epochs} for lr, wd, epochs in l2] + [
        _adaptive_arm(*a) for a in equal_clock_adaptive_arms(g)]
    full = [TrainConfig(**(base_config(f) | arm)).to_dict() for arm in arms]  # an arm met twice is run once
    return [arm for i, arm in enumerate(arms) if full[i] not in full[:i]]


def _depth_arm(f: ForgettingPreset, g: Grids, arch: str) -> dict:
    return _sgd(g, arch=arch, width=f.width if arch == "resnet9" else CIFAR_RESNET_WIDTH)


def _fixed_precision(g: Grids, arms: list[dict]) -> list[dict]:
    return arms if g.fixed_clock_precision is None else [a | {"precision": g.fixed_clock_precision} for a in arms]


def _noise_seeds(f: ForgettingPreset, g: Grids) -> tuple[int, ...]:
    return g.noise_seeds


EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (
    Experiment("sgd_remembers", "low-learning-rate SGD across sigma_w", lambda f, g: [_sgd(g)], _main_grid),
    Experiment("optimizers", "SGD, momentum SGD, Adam, AdamW, Muon, SGD + L2", _optimizer_arms, _main_grid),
    Experiment("long_training", "low-learning-rate SGD trained for longer",
               lambda f, g: [_sgd(g, epochs=e) for e in g.long_epochs], _quick_grid),
    Experiment("l2_lr", "SGD over learning rate x L2 strength",
               lambda f, g: [{"optimizer": "sgd", "lr": lr, "weight_decay": wd} for lr in g.lr_grid
                             for wd in g.wd_grid], _quick_grid),
    Experiment("batch_size", "low-learning-rate SGD at each batch size",
               lambda f, g: [_sgd(g, batch_size=b) for b in g.batch_sizes], _quick_grid),
    Experiment("depth", "ResNet-9 vs deeper CIFAR ResNets", lambda f, g: [_depth_arm(f, g, a) for a in g.depths],
               _quick_grid),
    Experiment("seed_noise", "low-learning-rate SGD over several seeds", lambda f, g: [_sgd(g)], _quick_grid,
               _noise_seeds),
    Experiment("adaptive_clock", "Adam, AdamW and Muon at (learning rate, epochs) pairs spanning T_adapt",
               lambda f, g: [_adaptive_arm(*a) for a in g.adaptive_clock], _quick_grid),
    Experiment("l2_clock", "SGD + L2 at (L2 strength, epochs) pairs spanning T_L2, with lambda = 0 controls",
               lambda f, g: [{"optimizer": "sgd", "lr": lr, "weight_decay": wd, "epochs": e}
                             for lr, wd, e in g.l2_clock], _quick_grid),
    Experiment("seeds", "the headline, longest-clock, L2-control and equal-clock arms over several seeds", _seed_arms,
               _quick_grid, _noise_seeds),
    Experiment("clock_ladder", "Adam at one T_adapt reached by rates spanning a decade",
               lambda f, g: _fixed_precision(g, [{"optimizer": "adam", "lr": lr, "epochs": e}
                                                 for lr, e in g.clock_ladder]), _quick_grid, _noise_seeds,
               arm_major=True),
    Experiment("tsgd_pair", "low-learning-rate SGD at two batch sizes of equal T_SGD",
               lambda f, g: _fixed_precision(g, [_sgd(g, batch_size=b, epochs=e) for b, e in g.tsgd_pair]),
               _quick_grid, _noise_seeds, arm_major=True),
)}


def get_experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose one of: {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]


def base_config(f: ForgettingPreset) -> dict:
    """The fields every run of a preset shares."""
    d = f.data
    return dict(dataset=d.dataset, arch="resnet9", width=f.width, epochs=f.epochs, batch_size=128,
                n_train=d.n_train, n_val=d.n_val, n_test=d.n_test, precision=f.precision)


def runs(name: str, preset: str | Preset, fused: bool = False,
         device: str | torch.device | None = "auto", auto: str | None = None) -> list[TrainConfig]:
    """Every run of experiment ``name`` at ``preset``: seeds x arms x sigma_w, seed-major, so a sweep stopped part
    way has trained every arm at its first seed before any arm at its second; arm-major for an experiment with
    ``arm_major`` (arms x seeds x sigma_w, the arm of fewest epochs first, ties in the experiment's order), so a
    sweep stopped part way has finished whole arms, the cheapest first, rather than one seed of its costliest
    (``fused``: the same runs trained as fused populations, which are runs of their own, see
    :mod:`fibook.forgetting.sweep`).

    A preset whose precision is ``auto`` gets the precision it runs at on ``device`` (``auto``: CUDA when present,
    else the CPU; :func:`fibook.forgetting.devices.auto_precision`), so a run's id says fp32 or bf16; an explicit
    precision is kept whatever the device. ``auto``, when given, is what ``auto`` stands for instead (the answer of
    the machines that train, when those are not this one: the workers of a cluster)."""
    exp, f, g = get_experiment(name), get_preset(preset).forgetting, grids(preset)
    precision = auto if auto is not None and f.precision == "auto" else \
        resolve_precision(f.precision, resolve_device(device))
    base = base_config(f) | {"fused": fused, "precision": precision}
    arms, seeds = exp.arms(f, g), exp.seeds(f, g)
    order = [(arm, seed) for arm in sorted(arms, key=lambda a: a.get("epochs", f.epochs)) for seed in seeds] \
        if exp.arm_major else [(arm, seed) for seed in seeds for arm in arms]
    return [TrainConfig(**{**base, **arm, "sigma_w": sigma, "seed": seed})
            for arm, seed in order for sigma in exp.sigmas(f, g)]


def sigma_grid(name: str, preset: str | Preset) -> tuple[float, ...]:
    """The sigma_w grid of experiment ``name`` at ``preset``."""
    return get_experiment(name).sigmas(get_preset(preset).forgetting, grids(preset))


def arm_configs(name: str, preset: str | Preset) -> list[TrainConfig]:
    """The first run of each arm of experiment ``name`` at ``preset`` (an arm: the runs that differ only in
    sigma_w and seed), in the experiment's order."""
    seen: dict[tuple, TrainConfig] = {}
    for c in runs(name, preset):
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
