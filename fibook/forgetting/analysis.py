"""Part I analysis: from the records of a results file to the quantities the chapters show.

Runs are grouped into *arms* (everything but sigma_w and seed); within an arm, seed-means are taken per sigma_w
(Das et al. 2026): Acc(sigma) = mean over seeds of the selected test accuracy, and

    Spread = max_sigma Acc(sigma) - min_sigma Acc(sigma)   (pp),

Spread^interp the same over the sigma_w whose every seed interpolated, and the radial memory R = slope of
log ||W_E|| against log sigma_w over seed-mean final norms.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fibook.forgetting import metrics
from fibook.forgetting.experiments import EXPERIMENTS, grids, runs
from fibook.forgetting.optimizers import get_optimizer
from fibook.forgetting.train import TrainConfig
from fibook.results import Record, load
from fibook.scales import get_scale

ARM_FIELDS = ("dataset", "arch", "width", "optimizer", "lr", "weight_decay", "batch_size", "epochs", "n_train",
              "precision", "augment", "schedule", "fused")


def arm_of(config: TrainConfig) -> tuple:
    """The fields that define an arm: all but sigma_w and seed."""
    return tuple((k, repr(getattr(config, k))) for k in ARM_FIELDS)


def config_part(config: TrainConfig, key: str) -> str | None:
    """One part of an arm's label or of a claim's setting, e.g. ``η = 0.01``, ``b = 128``, ``40 epochs``,
    ``ResNet-9 w16``; None where the part says nothing (no weight decay; the optimizer, named by the label)."""
    if key == "optimizer":
        return None
    if key == "lr":
        return f"η = {config.lr:g}"
    if key == "weight_decay":
        return f"λ = {config.weight_decay:g}" if config.weight_decay else None
    if key == "batch_size":
        return f"b = {config.batch_size}"
    if key == "epochs":
        return f"{config.epochs} epochs"
    if key == "arch":
        return f"ResNet-{config.arch.removeprefix('resnet')} w{config.width}"
    raise ValueError(f"unknown part {key!r}; allowed: optimizer, lr, weight_decay, batch_size, epochs, arch")


def sgd_with_l2(config: TrainConfig) -> bool:
    """SGD with weight decay: the "SGD + L2" arm, told apart from plain SGD in labels and claims."""
    return config.optimizer == "sgd" and bool(config.weight_decay)


def arm_label(config: TrainConfig, show: Sequence[str] = ("optimizer", "lr", "weight_decay")) -> str:
    """A readable name, e.g. ``SGD + L2 (η = 0.1, λ = 0.06)`` or ``Adam (η = 0.001)``; runs trained as fused
    populations say ``[fused]``."""
    name = get_optimizer(config.optimizer).label
    if sgd_with_l2(config):
        name += " + L2"
    if config.fused:
        name += " [fused]"
    parts = [p for p in (config_part(config, k) for k in show) if p]
    return f"{name} ({', '.join(parts)})" if parts else name


def setting(config: TrainConfig, scale: str, show: Sequence[str] = ("arch", "epochs")) -> str:
    """Where a number was measured, for a claims table: ``book: fashion_mnist, ResNet-9 w16, 40 epochs``;
    ``show`` picks the parts after the dataset (see :func:`config_part`)."""
    parts = [p for p in (config_part(config, k) for k in show) if p]
    return ", ".join([f"{scale}: {config.dataset}", *parts])


def heavy_ball_momentum(config: TrainConfig) -> float:
    """The momentum mu of an SGD-type run (its option, else its optimizer's default; 0 for plain SGD)."""
    spec = get_optimizer(config.optimizer)
    return (config.options or {}).get("momentum", spec.defaults["momentum"]) if spec.clock == "T_SGD" \
        else 0.0


def effective_lr(config: TrainConfig) -> float:
    """eta / (1 - mu): with heavy-ball momentum mu a small constant step eta moves the weights like plain SGD
    at this step."""
    return config.lr / (1 - heavy_ball_momentum(config))


def forgetting_clock(record: Record) -> tuple[str, float]:
    """The clock that governs a run's forgetting mechanism: T_L2 for runs with weight decay, else its
    optimizer's clock (:data:`fibook.forgetting.optimizers.OPTIMIZERS`). An SGD-type run with momentum mu is measured at
    its effective step eta / (1 - mu) (:func:`effective_lr`), so its T_SGD is the recorded (raw-eta) value
    times 1 / (1 - mu)^2."""
    config, clocks = record.config, record.summary.clocks
    key = "T_L2" if config.weight_decay else get_optimizer(config.optimizer).clock
    if key == "T_SGD":
        return key, clocks[key] / (1 - heavy_ball_momentum(config)) ** 2
    return key, clocks[key]


@dataclass
class Arm:
    """One arm's runs, seed-averaged per sigma_w."""

    label: str
    config: TrainConfig  # of its first run
    sigmas: list[float]
    acc: list[float]  # seed-mean selected test accuracy per sigma (fraction)
    final_acc: list[float]  # seed-mean test accuracy at the last epoch per sigma (fraction)
    acc_min: list[float]
    acc_max: list[float]
    interpolated: list[bool]  # every seed reached train accuracy >= 99.5 %
    tau: list[float]  # seed-mean tau_interp (nan where some seed never interpolated)
    init_norm: list[float]
    final_norm: list[float]
    diverged: list[bool]  # some seed diverged
    records: list[Record]

    @property
    def spread_pp(self) -> float:
        ok = {s: a for s, a, d in zip(self.sigmas, self.acc, self.diverged, strict=True) if not d}
        return metrics.spread_pp(ok) if len(ok) >= 2 else math.nan

    @property
    def final_spread_pp(self) -> float:
        """The spread of the last epoch's test accuracy (the predictor that training longer changes)."""
        ok = {s: a for s, a, d in zip(self.sigmas, self.final_acc, self.diverged, strict=True) if not d}
        return metrics.spread_pp(ok) if len(ok) >= 2 else math.nan

    @property
    def spread_interp_pp(self) -> float:
        ok = {s: a for s, a, i in zip(self.sigmas, self.acc, self.interpolated, strict=True) if i}
        return metrics.spread_pp(ok) if len(ok) >= 2 else math.nan

    @property
    def radial_memory(self) -> float:
        pairs = [(s, n) for s, n, d in zip(self.sigmas, self.final_norm, self.diverged, strict=True) if not d]
        return metrics.radial_memory_slope(*zip(*pairs, strict=True)) if len(pairs) >= 2 else math.nan

    def clock(self) -> tuple[str, float]:
        return forgetting_clock(self.records[0])


def arms(records: list[Record], show: Sequence[str] = ("optimizer", "lr", "weight_decay")) -> list[Arm]:
    """Group finished (ok or diverged) records into arms, in order of first appearance, sigma_w ascending."""
    groups: dict[tuple, list[Record]] = defaultdict(list)
    for r in records:
        if r.status in ("ok", "diverged"):
            groups[arm_of(r.config)].append(r)
    out = []
    for rs in groups.values():
        by_sigma: dict[float, list[Record]] = defaultdict(list)
        for r in rs:
            by_sigma[r.config.sigma_w].append(r)
        sigmas = sorted(by_sigma)
        cols = defaultdict(list)
        for s in sigmas:
            seeds = by_sigma[s]
            accs = [r.summary.selected_test_acc or 0.0 for r in seeds]
            taus = [r.summary.tau_interp for r in seeds]
            cols["acc"].append(float(np.mean(accs)))
            cols["final_acc"].append(float(np.mean([r.summary.final_test_acc or 0.0 for r in seeds])))
            cols["acc_min"].append(min(accs))
            cols["acc_max"].append(max(accs))
            cols["interpolated"].append(all(t is not None for t in taus))
            cols["tau"].append(float(np.mean(taus)) if all(t is not None for t in taus) else math.nan)
            cols["init_norm"].append(float(np.mean([r.summary.init_weight_norm for r in seeds])))
            cols["final_norm"].append(float(np.mean([r.summary.final_weight_norm for r in seeds])))
            cols["diverged"].append(any(r.status == "diverged" for r in seeds))
        out.append(Arm(label=arm_label(rs[0].config, show), config=rs[0].config, sigmas=sigmas,
                       records=rs, **cols))
    return out


def summary_rows(arm_list: list[Arm]) -> list[dict]:
    """One display row per arm: spread (selected epoch, and last epoch), spread over interpolating sigma_w,
    radial memory, clock."""
    def pp(value: float) -> str:
        return "—" if math.isnan(value) else f"{value:.1f}"

    rows = []
    for a in arm_list:
        clock, value = a.clock()
        rows.append({
            "arm": a.label,
            "spread (pp)": pp(a.spread_pp),
            "spread, interpolating σ_w only (pp)": pp(a.spread_interp_pp),
            "spread at the last epoch (pp)": pp(a.final_spread_pp),
            "σ_w that interpolate": f"{sum(a.interpolated)} of {len(a.sigmas)}",
            "radial memory R": f"{a.radial_memory:.2f}",
            "clock": f"{clock} = {value:.3g}" + (" (effective η/(1−μ))" if a.config.optimizer == "msgd" else ""),
        })
    return rows


def seed_spreads(arm: Arm) -> dict[int, float]:
    """Per seed, the spread (pp) of that seed's selected test accuracy over the arm's sigma_w: how much the
    spread itself varies from seed to seed. Seeds that lack a sigma_w of the arm, or diverged at one, are left out."""
    by_seed: dict[int, dict[float, float]] = defaultdict(dict)
    for r in arm.records:
        if r.status == "ok":
            by_seed[r.config.seed][r.config.sigma_w] = r.summary.selected_test_acc or 0.0
    return {seed: metrics.spread_pp(accs) for seed, accs in sorted(by_seed.items()) if len(accs) == len(arm.sigmas)}


def seed_std_pp(arm: Arm) -> dict[float, float]:
    """Per sigma_w, the sample standard deviation (ddof = 1, pp) of the selected test accuracy over seeds."""
    out = {}
    for s in arm.sigmas:
        accs = [r.summary.selected_test_acc or 0.0 for r in arm.records
                if r.config.sigma_w == s and r.status == "ok"]
        out[s] = 100 * float(np.std(accs, ddof=1)) if len(accs) >= 2 else math.nan
    return out


def norm_ratio_curves(arm: Arm) -> dict[float, np.ndarray]:
    """Per sigma_w (first seed): ||W(t)|| / ||W(0)|| over the recorded epochs."""
    curves = {}
    for r in arm.records:
        s = r.config.sigma_w
        if s not in curves:
            norms = np.asarray(r.history["weight_norm"], dtype=float)
            curves[s] = norms / norms[0]
    return dict(sorted(curves.items()))


def radial_memory_by_epoch(arm: Arm) -> np.ndarray:
    """R(t): the radial-memory slope recomputed at every epoch all sigma_w have recorded (R(0) = 1 exactly
    under common random numbers)."""
    hist = {}
    for r in arm.records:
        hist.setdefault(r.config.sigma_w, r.history["weight_norm"])
    sigmas = sorted(hist)
    epochs = min(len(h) for h in hist.values())
    return np.array([metrics.radial_memory_slope(sigmas, [hist[s][t] for s in sigmas]) for t in range(epochs)])


def load_arms(experiment: str, scale: str, show: Sequence[str] = ("optimizer", "lr", "weight_decay")) -> list[Arm]:
    """The arms of an experiment's results file at ``scale``; a clear error when nothing has been run there."""
    records = load(experiment, scale)
    if not records:
        raise RuntimeError(f"no results for '{experiment}' at scale '{scale}': set RERUN = True in the parameters "
                           f"cell, or run `python -m fibook sweep {experiment} --scale {scale}`")
    return arms(records, show)


@dataclass
class Finished:
    """The complete arms of an experiment at a scale, and how much of it has run (a sweep may be under way)."""

    experiment: str
    scale: str
    arms: list[Arm]  # those whose whole sigma_w grid has finished for every seed
    finished_runs: int
    total_runs: int
    total_arms: int

    @property
    def progress(self) -> str:
        """``3 of 4 runs finished, 1 of 2 arms complete``."""
        return (f"{self.finished_runs} of {self.total_runs} runs finished, {len(self.arms)} of {self.total_arms} "
                "arms complete")

    @property
    def line(self) -> str:
        return f"{self.experiment} at scale '{self.scale}': {self.progress}"


def finished_arms(experiment: str, scale: str, show: Sequence[str]) -> Finished:
    """The arms of ``experiment`` at ``scale`` whose whole sigma_w grid has finished for every seed, and how
    much of the experiment has run."""
    exp, f, g = EXPERIMENTS[experiment], get_scale(scale).forgetting, grids(scale)
    grid, n_seeds = len(exp.sigmas(f, g)), len(exp.seeds(f, g))
    found = arms(load(experiment, scale), show)
    done = [a for a in found if len(a.sigmas) == grid and len(a.records) == grid * n_seeds]
    total = len(runs(experiment, scale))
    return Finished(experiment, scale, done, sum(len(a.records) for a in found), total, total // (grid * n_seeds))
