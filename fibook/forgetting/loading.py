"""Part I arms loaded from the results files, and the tables of how much a verdict owes to the runs' readings.

An experiment's arms at a preset (:func:`load_arms`, a clear error when nothing has run there); those whose whole
sigma_w grid has finished for every seed, with how much of the experiment has run (:func:`finished_arms`: what a
verdict reads); those a figure of a sweep under way can already show (:func:`started_arms`); and every
experiment's arms on the quick sigma_w grid with their seeds pooled (:func:`pooled_arms`: the arms of the noise
floor, :mod:`fibook.forgetting.noise`, and of the clock collapse, :mod:`fibook.forgetting.collapse`). The table of
how the worst run of an arm kept its fit of the training set (:func:`stability_rows`; the tables of an arm's spread
under each reading are :mod:`fibook.forgetting.noise`'s, with error bars).

Serves ``sgd_remembers``, ``time_lr_l2_batch``, ``depth``, ``optimizers`` and ``clocks`` (its table of
stability).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from fibook.forgetting.arms import Arm, arm_of, arms, seed_matrix
from fibook.forgetting.experiments import EXPERIMENTS, grids, runs
from fibook.forgetting.records import Record
from fibook.forgetting.results import load
from fibook.presets import get_preset


def load_arms(experiment: str, preset: str, show: Sequence[str] = ("optimizer", "lr", "weight_decay"),
              selection: str = "best") -> list[Arm]:
    """The arms of an experiment's results file at ``preset`` (read by rule ``selection``); a clear error when
    nothing has been run there."""
    records = load(experiment, preset)
    if not records:
        raise RuntimeError(f"no results for '{experiment}' at preset '{preset}': set RERUN = True in the parameters "
                           f"cell, or run `python -m fibook sweep {experiment} --preset {preset}`")
    return arms(records, show, selection)


@dataclass
class Finished:
    """The complete arms of an experiment at a preset, and how much of it has run (a sweep may be under way)."""

    experiment: str
    preset: str
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
        return f"{self.experiment} at preset '{self.preset}': {self.progress}"


def finished_arms(experiment: str, preset: str, show: Sequence[str], selection: str = "best") -> Finished:
    """The arms of ``experiment`` at ``preset`` whose whole sigma_w grid has finished for every seed (read by
    rule ``selection``), and how much of the experiment has run."""
    exp, f, g = EXPERIMENTS[experiment], get_preset(preset).forgetting, grids(preset)
    grid, n_seeds = len(exp.sigmas(f, g)), len(exp.seeds(f, g))
    found = arms(load(experiment, preset), show, selection)
    done = [a for a in found if len(a.sigmas) == grid and len(a.records) == grid * n_seeds]
    total = len(runs(experiment, preset))
    return Finished(experiment, preset, done, sum(len(a.records) for a in found), total, total // (grid * n_seeds))


def started_arms(experiment: str, preset: str, show: Sequence[str], selection: str = "best") -> list[Arm]:
    """The arms of ``experiment`` at ``preset`` with at least one seed finished on the experiment's whole sigma_w grid
    (:func:`~fibook.forgetting.arms.seed_matrix`), read by rule ``selection``: what a figure of a sweep under way can
    already show (a verdict waits for :func:`finished_arms`)."""
    exp, f, g = EXPERIMENTS[experiment], get_preset(preset).forgetting, grids(preset)
    grid = list(exp.sigmas(f, g))
    return [a for a in arms(load(experiment, preset), show, selection)
            if a.sigmas == grid and seed_matrix(a)[0] and seed_matrix(a)[1] == grid]


def pooled_arms(preset: str, selection: str, arch: str = "resnet9") -> list[tuple[str, Arm]]:
    """Every arm of Part I's experiments on ``arch`` read by rule ``selection`` on the quick sigma_w grid that
    every experiment runs (so that every spread is over the same sigma_w), with the runs of all experiments pooled
    (an arm that ``seed_noise`` ran on three seeds has three), each with the first experiment that holds it. An arm
    counts with the seeds that cover the whole grid (a seed still running is left out until it does)."""
    grid = set(grids(preset).quick_sigma_w)
    pooled: dict[str, Record] = {}
    first: dict[tuple, str] = {}
    for name in EXPERIMENTS:
        for r in load(name, preset):
            if r.config.arch == arch and r.config.sigma_w in grid and r.status in ("ok", "diverged"):
                pooled.setdefault(r.id, r)
                first.setdefault(arm_of(r.config), name)
    covered: dict[tuple, set[float]] = defaultdict(set)
    for r in pooled.values():
        covered[arm_of(r.config), r.config.seed].add(r.config.sigma_w)
    complete = [r for r in pooled.values() if covered[arm_of(r.config), r.config.seed] == grid]
    return [(first[arm_of(a.config)], a)
            for a in arms(complete, ("optimizer", "lr", "weight_decay", "batch_size", "epochs"), selection)]


def own_seeds(found: Finished, show: Sequence[str], selection: str, arch: str = "resnet9") -> Finished:
    """``found`` with each arm read on every seed it has: where another experiment ran the same arm (same config
    but sigma_w and seed) on more seeds over the same sigma_w grid, the arm pooled over them (:func:`pooled_arms`),
    labelled by ``show`` and read by rule ``selection``, replaces it; the counts of ``found``'s own runs stay."""
    pool = {arm_of(a.config): a for _, a in pooled_arms(found.preset, selection, arch)}

    def seeds(a: Arm) -> int:
        return len({r.config.seed for r in a.records})

    def widest(a: Arm) -> Arm:
        p = pool.get(arm_of(a.config))
        if p is None or p.sigmas != a.sigmas or seeds(p) <= seeds(a):
            return a
        (b,) = arms(p.records, show, selection)
        return b

    return dataclasses.replace(found, arms=[widest(a) for a in found.arms])


def stability_rows(arm_list: Sequence[Arm]) -> list[dict]:
    """Per arm, the worst of its runs (:class:`~fibook.forgetting.checkpoints.Stability`): the smallest fraction of
    second-half epochs that fit the training set, the deepest train-accuracy drop after fitting, the largest train loss
    after it, and how many runs collapsed or diverged."""
    rows = []
    for a in arm_list:
        st = a.stability
        peaks = [x.peak_loss for x in st if not math.isnan(x.peak_loss)]
        rows.append({"arm": a.label, "runs": len(st),
                     "second-half epochs fitting (worst run)": f"{100 * min(x.fit_fraction for x in st):.0f} %",
                     "deepest drop after fitting (pp)": f"{max(x.drop_pp for x in st):.1f}",
                     "largest train loss after fitting": f"{max(peaks):.3g}" if peaks else "—",
                     "collapsed / diverged runs": f"{sum(x.collapsed for x in st)} / {sum(x.diverged for x in st)}"})
    return rows
