"""Part I clock collapse: every arm on its mechanism's clock, and the pairs and extremes the verdicts read.

Every arm of Part I's experiments on the quick sigma_w grid, seeds pooled
(:func:`fibook.forgetting.loading.pooled_arms`), becomes a :class:`ClockPoint`: its mechanism (:func:`mechanism`),
its clock (:mod:`fibook.forgetting.clocks`) at the selected checkpoints (median and range over its runs) and over
the whole run, and its spread with error bar (:mod:`fibook.forgetting.noise`). An arm counts in its clock's trend
when its mechanism is one the clock is defined for (:data:`CLOCK_MECHANISMS`) and every selected predictor
interpolates. The collapse test compares arms of one mechanism that reach the same clock by different routes,

    T_SGD = sum eta^2 / b,   T_L2 = lambda sum eta,   T_adapt = sum eta,

differing only in the settings the clock is made of (:data:`CLOCK_FACTORS`, :func:`equal_clock_pairs`): equal
clock, equal spread? Beside it: the adaptive arms run to the largest clock (:func:`longest_clock_arms`), the
low-learning-rate SGD baseline (:func:`baseline_arm`) and spread against the direction kept
(:func:`spread_and_direction`).

Serves "Forgetting clocks" (``clocks``: the collapse and the equal-clock pairs) and "Optimizers" (``optimizers``:
the clocks of its arms, the direction they keep, the longest-clock arms and the SGD baseline).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fibook.forgetting.arms import Arm, arm_of, direction_kept
from fibook.forgetting.clocks import sgd_with_l2
from fibook.forgetting.config import TrainConfig
from fibook.forgetting.experiments import grids
from fibook.forgetting.loading import pooled_arms
from fibook.forgetting.noise import NoiseFloor, SpreadEstimate, spread_estimate
from fibook.forgetting.optimizers import get_optimizer
from fibook.presets import get_preset


def mechanism(config: TrainConfig) -> str:
    """``SGD``, ``momentum SGD``, ``SGD + L2``, ``Adam``, ``AdamW`` or ``Muon``: an arm's group in the collapse."""
    return "SGD + L2" if sgd_with_l2(config) else get_optimizer(config.optimizer).label


# The mechanisms whose arms count in each clock's trend: momentum SGD counts on T_SGD at its effective step
# (:func:`~fibook.forgetting.clocks.forgetting_clock`); Muon counts on T_adapt by the book's reading of "adaptive
# preconditioning".
CLOCK_MECHANISMS = {"T_SGD": ("SGD", "momentum SGD"), "T_L2": ("SGD + L2",), "T_adapt": ("Adam", "AdamW", "Muon")}
# Before 2026-12-05 the book drew momentum SGD on T_SGD at its raw eta and did not count it (the reading the clocks
# chapter still shows beside the one above).
RAW_CLOCK_MECHANISMS = CLOCK_MECHANISMS | {"T_SGD": ("SGD",)}


@dataclass(frozen=True)
class ClockPoint:
    """One arm on its mechanism's clock: the clock at its selected checkpoints (median, and the range over its
    runs), the whole run's clock, and its spread with error bar. ``included``: the arm counts in the clock's
    trend, as its mechanism is one the clock is defined for (:data:`CLOCK_MECHANISMS`) and the condition
    holds (every selected predictor interpolates); ``left_out`` says why not."""

    experiment: str
    arm: Arm
    clock: str
    value: float
    low: float
    high: float
    run_value: float
    spread: SpreadEstimate
    momentum: str = "effective"

    @property
    def mechanism(self) -> str:
        return mechanism(self.arm.config)

    @property
    def left_out(self) -> str | None:
        """None for an arm that counts in its clock's trend, else why it does not."""
        counted = CLOCK_MECHANISMS if self.momentum == "effective" else RAW_CLOCK_MECHANISMS
        if self.mechanism not in counted[self.clock]:
            return f"{self.mechanism}: not a mechanism {self.clock} is defined for"
        return None if self.arm.interpolates_at_selection else "selected predictor does not interpolate"

    @property
    def included(self) -> bool:
        return self.left_out is None


def clock_point(experiment: str, arm: Arm, noise: NoiseFloor | None, momentum: str = "effective") -> ClockPoint:
    values = arm.selected_clocks(momentum)
    key, value = arm.clock(momentum)
    return ClockPoint(experiment, arm, key, value, min(values, default=math.nan), max(values, default=math.nan),
                      arm.run_clock(momentum)[1], spread_estimate(arm, noise), momentum)


def collapse_points(preset: str, selection: str, noise: NoiseFloor | None, arch: str = "resnet9",
                    momentum: str = "effective") -> list[ClockPoint]:
    """Every arm of :func:`~fibook.forgetting.loading.pooled_arms` as a :class:`ClockPoint` (momentum SGD's clock read
    by ``momentum``), ordered by clock, then by its value."""
    points = [clock_point(experiment, a, noise, momentum) for experiment, a in pooled_arms(preset, selection, arch)]
    return sorted(points, key=lambda p: (p.clock, p.value))


def spread_and_direction(points: Sequence[ClockPoint]) -> list[tuple[float, float]]:
    """(cos(W_t, W_0) at the largest sigma_w of the arm, :func:`~fibook.forgetting.arms.direction_kept`; spread mean) of
    every point whose selected predictors interpolate and whose runs at that sigma_w record the direction: whether an
    arm's spread goes with how much of the largest sigma_w's initial direction it keeps (fibook's question, not the
    paper's)."""
    out = []
    for p in points:
        kept = direction_kept(p.arm)
        if p.arm.interpolates_at_selection and max(p.arm.sigmas) in kept:
            out.append((kept[max(p.arm.sigmas)][0], p.spread.value))
    return out


# The settings each clock is made of: two arms reach the same clock "by different routes" when they differ only in
# these (T_SGD = sum eta^2 / b, T_L2 = lambda sum eta, T_adapt = sum eta; a length is a number of epochs).
CLOCK_FACTORS = {"T_SGD": ("lr", "batch_size", "epochs"), "T_L2": ("lr", "weight_decay", "epochs"),
                 "T_adapt": ("lr", "epochs")}


def equal_clock_pairs(points: Sequence[ClockPoint]) -> list[tuple[ClockPoint, ClockPoint]]:
    """Pairs of arms of one mechanism whose whole runs reach the same clock (to 9 significant digits) by a
    different route: they differ only in the settings the clock is made of (:data:`CLOCK_FACTORS`), so AdamW
    arms that differ in their decay, which is not part of T_adapt, are not a pair. The collapse test: equal
    clock, equal spread?"""
    def rest(p: ClockPoint) -> tuple:
        return tuple(kv for kv in arm_of(p.arm.config) if kv[0] not in CLOCK_FACTORS[p.clock])

    pairs = []
    for i, p in enumerate(points):
        for q in points[i + 1:]:
            if (p.mechanism == q.mechanism and p.clock == q.clock and f"{p.run_value:.9g}" == f"{q.run_value:.9g}"
                    and rest(p) == rest(q)):
                pairs.append((p, q))
    return pairs


def longest_clock_arms(points: Sequence[ClockPoint], mechanisms: Sequence[str] = ("Adam", "AdamW", "Muon")
                       ) -> list[Arm]:
    """Per mechanism, the arm whose whole run reached the largest clock among those whose selected predictors
    interpolate (the adaptive arms run longest, for the optimizers chapter)."""
    out = []
    for name in mechanisms:
        pts = [p for p in points if p.mechanism == name and p.included]
        if pts:
            out.append(max(pts, key=lambda p: p.run_value).arm)
    return out


def baseline_arm(points: Sequence[ClockPoint], preset: str) -> Arm | None:
    """Low-learning-rate SGD at the preset's rate, b = 128 and length, among ``points`` (its quick-grid arm)."""
    f, g = get_preset(preset).forgetting, grids(preset)
    for p in points:
        c = p.arm.config
        if (c.optimizer, c.lr, c.weight_decay, c.batch_size, c.epochs) == ("sgd", g.sgd_lr, 0.0, 128, f.epochs):
            return p.arm
    return None
