"""Part I analysis: from the records of a results file to the quantities the chapters show.

Runs are grouped into *arms* (everything but sigma_w and seed). Each run is read at the checkpoint a stated
selection rule picks (:data:`SELECTIONS`: the paper's best validation loss over the run, or the same over the
run's second half); within an arm, seed-means are taken per sigma_w (Das et al. 2026): Acc(sigma) = mean over
seeds of the selected test accuracy, and

    Spread = max_sigma Acc(sigma) - min_sigma Acc(sigma)   (pp),

Spread^interp the same over the sigma_w whose every seed interpolated, and the radial memory R = slope of
log ||W_E|| against log sigma_w over seed-mean final norms. Clocks are read at the selected checkpoints (the
ones whose accuracy is plotted), and "interpolates" means the selected checkpoint itself fits the training set.

That spread of seed-means is the only spread of several seeds the book reports; its error bar is a bootstrap over
seeds (:func:`spread_estimate`), and the difference of two arms' spreads is bootstrapped over the seeds both ran,
paired (:func:`spread_difference`). The spread of one seed's accuracies (:func:`seed_spreads`) serves one purpose:
how much a one-seed arm's spread varies, the error bar it borrows (:class:`NoiseFloor`). A run that fits the
training set and later falls out of it (:func:`fibook.forgetting.metrics.collapsed`) makes its arm *unstable*,
labelled so in every table, and an unstable arm borrows only from unstable arms.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fibook import stats
from fibook.forgetting import metrics
from fibook.forgetting.experiments import EXPERIMENTS, grids, runs
from fibook.forgetting.optimizers import CLOCKS, get_optimizer
from fibook.forgetting.results import Record, load
from fibook.forgetting.train import TrainConfig
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
        return f"{config.epochs} epoch{'s' * (config.epochs != 1)}"
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


def clock_key(config: TrainConfig) -> str:
    """The clock that governs a run's forgetting mechanism: T_L2 for SGD with (coupled) L2, else its optimizer's
    clock (:data:`fibook.forgetting.optimizers.OPTIMIZERS`; AdamW's decoupled decay advances T_L2 too, reported
    beside its T_adapt)."""
    return "T_L2" if sgd_with_l2(config) else get_optimizer(config.optimizer).clock


MOMENTUM_READINGS = {
    "effective": "momentum SGD's T_SGD over its effective step eta / (1 - mu): sum (eta / (1 - mu))^2 / b",
    "raw": "momentum SGD's T_SGD over its raw eta, as plain SGD's (the book's reading before 2026-12-05)",
}


def forgetting_clock(config: TrainConfig, clocks: dict[str, float], momentum: str = "effective"
                     ) -> tuple[str, float]:
    """The mechanism's clock (:func:`clock_key`) read from ``clocks`` (a run's, or a checkpoint's, summed over the
    raw step sizes). A momentum-SGD run's T_SGD is read by ``momentum`` (:data:`MOMENTUM_READINGS`): ``effective``
    divides it by (1 - mu)^2. The argument for it: with a small constant step, heavy-ball momentum moves the
    weights as plain SGD at eta / (1 - mu) does (the velocity settles at the gradient / (1 - mu)), and its
    gradient noise enters with the same factor, so the noise it accumulates, sum eta^2 / b in plain SGD, is
    sum (eta / (1 - mu))^2 / b. The paper does not say how momentum enters T_SGD; ``raw`` is shown beside it."""
    if momentum not in MOMENTUM_READINGS:
        raise ValueError(f"unknown momentum reading {momentum!r}; choose one of: {', '.join(MOMENTUM_READINGS)}")
    key = clock_key(config)
    mu = heavy_ball_momentum(config) if key == "T_SGD" and momentum == "effective" else 0.0
    return key, clocks[key] / (1 - mu) ** 2


SELECTIONS = {
    "best": "the lowest validation loss over every epoch 1..E (the paper's validation-selected predictor)",
    "late": "the lowest validation loss over the run's second half, E/2 < t <= E",
    "last": "the last epoch E (the last one recorded for a run that diverged)",
}
LAST_EPOCHS = 5  # the last-epochs reading: the mean test accuracy over a run's last 5 recorded epochs


@dataclass(frozen=True)
class Checkpoint:
    """The checkpoint of one run that a selection rule picks: its epoch, test and (eval-mode) train accuracy,
    and the clocks accumulated up to it."""

    epoch: int
    test_acc: float
    train_acc: float
    clocks: dict[str, float]

    @property
    def interpolates(self) -> bool:
        """The selected predictor itself fits the training set (train accuracy >= 99.5 %)."""
        return self.train_acc >= metrics.INTERPOLATION_THRESHOLD


def checkpoint(record: Record, selection: str = "best") -> Checkpoint | None:
    """The checkpoint of ``record`` that rule ``selection`` (:data:`SELECTIONS`) picks: ``best`` is the run's own
    validation-selected epoch (:func:`fibook.forgetting.metrics.selected_epoch` over 1..E), ``late`` the same
    over the second half (:func:`fibook.forgetting.metrics.late_window_start`). None when no epoch qualifies (a
    run that diverged before the window)."""
    if selection not in SELECTIONS:
        raise ValueError(f"unknown selection {selection!r}; choose one of: {', '.join(SELECTIONS)}")
    h = record.history
    if selection == "best":
        t = record.summary.selected_epoch
    elif selection == "last":
        t = len(h["test_acc"]) - 1 or None
    else:
        t = metrics.selected_epoch(h["val_loss"], metrics.late_window_start(record.config.epochs))
    if t is None:
        return None
    return Checkpoint(t, float(h["test_acc"][t]), float(h["train_acc"][t]), {k: float(h[k][t]) for k in CLOCKS})


@dataclass(frozen=True)
class Stability:
    """How one run kept its fit of the training set (:mod:`fibook.forgetting.metrics`): the fraction of the second
    half's epochs that fit it, the deepest train-accuracy drop after tau_interp (pp), the largest train loss after
    it, and whether it collapsed (fell below ``COLLAPSE_TRAIN_ACC`` after fitting) or diverged."""

    fit_fraction: float
    drop_pp: float
    peak_loss: float
    collapsed: bool
    diverged: bool

    @property
    def unstable(self) -> bool:
        return self.collapsed or self.diverged


def stability(record: Record) -> Stability:
    """The :class:`Stability` of one run from its history."""
    h, tau = record.history, record.summary.tau_interp
    return Stability(metrics.fit_fraction(h["train_acc"]), metrics.deepest_drop_pp(h["train_acc"], tau),
                     metrics.peak_loss_after(h["train_loss"], tau), metrics.collapsed(h["train_acc"], tau),
                     record.status == "diverged")


def last_epochs_acc(record: Record, epochs: int = LAST_EPOCHS) -> float:
    """The mean test accuracy over the run's last ``epochs`` recorded epochs (fewer when it has fewer)."""
    accs = record.history["test_acc"][1:]
    return float(np.mean(accs[-epochs:])) if accs else 0.0


UNSTABLE = " [unstable]"  # the mark every table's label of an unstable arm carries


@dataclass
class Arm:
    """One arm's runs, seed-averaged per sigma_w, each run read at the checkpoint of rule ``selection``."""

    label: str
    config: TrainConfig  # of its first run
    selection: str
    sigmas: list[float]
    acc: list[float]  # seed-mean selected test accuracy per sigma (fraction)
    final_acc: list[float]  # seed-mean test accuracy at the last epoch per sigma (fraction)
    acc_min: list[float]
    acc_max: list[float]
    interpolated: list[bool]  # every seed reached train accuracy >= 99.5 % at some epoch
    selected_interpolated: list[bool]  # every seed's selected checkpoint has train accuracy >= 99.5 %
    tau: list[float]  # seed-mean tau_interp (nan where some seed never interpolated)
    init_norm: list[float]
    final_norm: list[float]
    diverged: list[bool]  # some seed diverged
    records: list[Record]
    checkpoints: list[Checkpoint | None]  # of each record, by rule ``selection``
    stability: list[Stability]  # of each record
    last_acc: list[float]  # seed-mean test accuracy over the last LAST_EPOCHS epochs per sigma (fraction)

    @property
    def unstable(self) -> bool:
        """Some run of the arm collapsed after fitting the training set, or diverged (:class:`Stability`)."""
        return any(s.unstable for s in self.stability)

    @property
    def last_epochs_spread_pp(self) -> float:
        """The spread of the mean test accuracy over the last ``LAST_EPOCHS`` epochs (seed-means)."""
        ok = {s: a for s, a, d in zip(self.sigmas, self.last_acc, self.diverged, strict=True) if not d}
        return metrics.spread_pp(ok) if len(ok) >= 2 else math.nan

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
        """Spread^interp: over the sigma_w whose every seed's selected checkpoint fits the training set."""
        ok = {s: a for s, a, i in zip(self.sigmas, self.acc, self.selected_interpolated, strict=True) if i}
        return metrics.spread_pp(ok) if len(ok) >= 2 else math.nan

    @property
    def radial_memory(self) -> float:
        pairs = [(s, n) for s, n, d in zip(self.sigmas, self.final_norm, self.diverged, strict=True) if not d]
        return metrics.radial_memory_slope(*zip(*pairs, strict=True)) if len(pairs) >= 2 else math.nan

    def radial_memory_estimate(self) -> stats.Estimate:
        """R with its standard error: the least-squares slope of log seed-mean final norm on log sigma_w
        (:func:`fibook.stats.slope`, on k - 2 degrees of freedom for k sigma_w that did not diverge; no error bar
        for k = 2, nan R for fewer)."""
        pairs = [(s, n) for s, n, d in zip(self.sigmas, self.final_norm, self.diverged, strict=True) if not d]
        if len(pairs) < 2:
            return stats.Estimate(math.nan, math.nan, math.nan)
        x, y = zip(*pairs, strict=True)
        return stats.slope(np.log(x), np.log(y))

    @property
    def interpolates_at_selection(self) -> bool:
        """The condition (the book's reading of the paper's headline runs, which all fit the training set): at every
        sigma_w, every seed's selected predictor fits the training set."""
        return all(self.selected_interpolated)

    def selected_clocks(self, momentum: str = "effective") -> list[float]:
        """The mechanism's clock at each run's selected checkpoint (momentum SGD's read by ``momentum``,
        :func:`forgetting_clock`)."""
        return [forgetting_clock(self.config, c.clocks, momentum)[1] for c in self.checkpoints if c is not None]

    def clock(self, momentum: str = "effective") -> tuple[str, float]:
        """The mechanism's clock at the selected checkpoints (the median over the arm's runs): the clock of the
        predictors whose accuracy the spread is made of."""
        values = self.selected_clocks(momentum)
        return clock_key(self.config), float(np.median(values)) if values else math.nan

    def run_clock(self, momentum: str = "effective") -> tuple[str, float]:
        """The mechanism's clock over the whole run (every step taken)."""
        return forgetting_clock(self.config, self.records[0].summary.clocks, momentum)

    def selected_epochs(self) -> list[int | None]:
        return [None if c is None else c.epoch for c in self.checkpoints]

    def epoch_range(self) -> str:
        """The selected epochs, ``21–29`` (``—`` when none)."""
        epochs = [e for e in self.selected_epochs() if e is not None]
        return "—" if not epochs else f"{min(epochs)}" if min(epochs) == max(epochs) else \
            f"{min(epochs)}–{max(epochs)}"


def arms(records: list[Record], show: Sequence[str] = ("optimizer", "lr", "weight_decay"),
         selection: str = "best") -> list[Arm]:
    """Group finished (ok or diverged) records into arms, in order of first appearance, sigma_w ascending, each
    run read at the checkpoint of rule ``selection`` (:data:`SELECTIONS`)."""
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
            points = [checkpoint(r, selection) for r in seeds]
            cols["checkpoints"].extend(points)
            cols["records"].extend(seeds)
            accs = [0.0 if c is None else c.test_acc for c in points]
            taus = [r.summary.tau_interp for r in seeds]
            cols["acc"].append(float(np.mean(accs)))
            cols["final_acc"].append(float(np.mean([r.summary.final_test_acc or 0.0 for r in seeds])))
            cols["acc_min"].append(min(accs))
            cols["acc_max"].append(max(accs))
            cols["interpolated"].append(all(t is not None for t in taus))
            cols["selected_interpolated"].append(all(c is not None and c.interpolates for c in points))
            cols["tau"].append(float(np.mean(taus)) if all(t is not None for t in taus) else math.nan)
            cols["init_norm"].append(float(np.mean([r.summary.init_weight_norm for r in seeds])))
            cols["final_norm"].append(float(np.mean([r.summary.final_weight_norm for r in seeds])))
            cols["diverged"].append(any(r.status == "diverged" for r in seeds))
            cols["stability"].extend(stability(r) for r in seeds)
            cols["last_acc"].append(float(np.mean([last_epochs_acc(r) for r in seeds])))
        unstable = any(s.unstable for s in cols["stability"])
        out.append(Arm(label=arm_label(rs[0].config, show) + UNSTABLE * unstable, config=rs[0].config,
                       selection=selection, sigmas=sigmas, **cols))
    return out


def summary_rows(arm_list: list[Arm]) -> list[dict]:
    """One display row per arm: spread (selected checkpoint, and last epoch), spread over the sigma_w whose
    selected checkpoint interpolates, how many interpolate there (and at some epoch), the selected epochs, radial
    memory, and the clock at the selected checkpoints with the whole run's beside it."""
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
            "σ_w interpolating at the selected checkpoint (at some epoch)":
                f"{sum(a.selected_interpolated)} of {len(a.sigmas)} ({sum(a.interpolated)})",
            "selected epochs": f"{a.epoch_range()} of {a.config.epochs}",
            "radial memory R": f"{a.radial_memory:.2f}",
            "clock at the selected checkpoints (whole run)": f"{clock} = {value:.3g} ({a.run_clock()[1]:.3g})"
                     + (f" (at the effective step η/(1−μ) = {effective_lr(a.config):g}; at the raw η "
                        f"{a.clock('raw')[1]:.3g})" if heavy_ball_momentum(a.config) else ""),
        })
    return rows


def seed_spreads(arm: Arm) -> dict[int, float]:
    """Per seed, the spread (pp) of that seed's selected test accuracy over the arm's sigma_w: how much the
    spread itself varies from seed to seed. Seeds that lack a sigma_w of the arm, or diverged at one, are left out."""
    by_seed: dict[int, dict[float, float]] = defaultdict(dict)
    for r, c in zip(arm.records, arm.checkpoints, strict=True):
        if r.status == "ok" and c is not None:
            by_seed[r.config.seed][r.config.sigma_w] = c.test_acc
    return {seed: metrics.spread_pp(accs) for seed, accs in sorted(by_seed.items()) if len(accs) == len(arm.sigmas)}


def seed_std_pp(arm: Arm) -> dict[float, float]:
    """Per sigma_w, the sample standard deviation (ddof = 1, pp) of the selected test accuracy over seeds."""
    out = {}
    for s in arm.sigmas:
        accs = [c.test_acc for r, c in zip(arm.records, arm.checkpoints, strict=True)
                if r.config.sigma_w == s and r.status == "ok" and c is not None]
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


def direction_kept(arm: Arm) -> dict[float, tuple[float, int]]:
    """Per sigma_w, the cosine between the weights at each run's selected checkpoint and at initialization,

        cos(W_t, W_0) = <W_t, W_0>_F / (||W_t||_F ||W_0||_F),

    over all weight layers flattened into one vector (``init_cosine`` of the run's history,
    :func:`fibook.forgetting.models.member_init_geometry`), averaged over the seeds whose history records it,
    with their count. Runs trained before the geometry was recorded have none; a sigma_w none of whose runs has
    it is left out. Radial memory (:attr:`Arm.radial_memory`) reads the norm; this reads the direction, all that
    a convolution followed by BatchNorm passes on (the final Linear layer, not normalized, is in the vector too):
    1 keeps the direction of W_0, 0 forgets it."""
    found: dict[float, list[float]] = defaultdict(list)
    for r, c in zip(arm.records, arm.checkpoints, strict=True):
        cosines = (r.history or {}).get("init_cosine")
        if c is not None and cosines:
            found[r.config.sigma_w].append(float(cosines[c.epoch]))
    return {s: (float(np.mean(v)), len(v)) for s, v in sorted(found.items())}


def radial_memory_by_epoch(arm: Arm) -> np.ndarray:
    """R(t): the radial-memory slope recomputed at every epoch all sigma_w have recorded (R(0) = 1 exactly
    under common random numbers)."""
    hist = {}
    for r in arm.records:
        hist.setdefault(r.config.sigma_w, r.history["weight_norm"])
    sigmas = sorted(hist)
    epochs = min(len(h) for h in hist.values())
    return np.array([metrics.radial_memory_slope(sigmas, [hist[s][t] for s in sigmas]) for t in range(epochs)])


def load_arms(experiment: str, scale: str, show: Sequence[str] = ("optimizer", "lr", "weight_decay"),
              selection: str = "best") -> list[Arm]:
    """The arms of an experiment's results file at ``scale`` (read by rule ``selection``); a clear error when
    nothing has been run there."""
    records = load(experiment, scale)
    if not records:
        raise RuntimeError(f"no results for '{experiment}' at scale '{scale}': set RERUN = True in the parameters "
                           f"cell, or run `python -m fibook sweep {experiment} --scale {scale}`")
    return arms(records, show, selection)


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


def finished_arms(experiment: str, scale: str, show: Sequence[str], selection: str = "best") -> Finished:
    """The arms of ``experiment`` at ``scale`` whose whole sigma_w grid has finished for every seed (read by
    rule ``selection``), and how much of the experiment has run."""
    exp, f, g = EXPERIMENTS[experiment], get_scale(scale).forgetting, grids(scale)
    grid, n_seeds = len(exp.sigmas(f, g)), len(exp.seeds(f, g))
    found = arms(load(experiment, scale), show, selection)
    done = [a for a in found if len(a.sigmas) == grid and len(a.records) == grid * n_seeds]
    total = len(runs(experiment, scale))
    return Finished(experiment, scale, done, sum(len(a.records) for a in found), total, total // (grid * n_seeds))


def seed_matrix(arm: Arm) -> tuple[list[int], list[float], np.ndarray]:
    """The seeds with a finished run (ok, with a selected checkpoint) at every sigma_w where no seed diverged,
    those sigma_w, and their selected test accuracies in pp as a (seeds x sigma_w) array: the data of the
    spread of seed-means and of its bootstrap."""
    sigmas = [s for s, d in zip(arm.sigmas, arm.diverged, strict=True) if not d]
    acc: dict[int, dict[float, float]] = defaultdict(dict)
    for r, c in zip(arm.records, arm.checkpoints, strict=True):
        if r.status == "ok" and c is not None and r.config.sigma_w in sigmas:
            acc[r.config.seed][r.config.sigma_w] = 100 * c.test_acc
    seeds = sorted(seed for seed, row in acc.items() if len(row) == len(sigmas))
    return seeds, sigmas, np.array([[acc[seed][s] for s in sigmas] for seed in seeds]).reshape(len(seeds), len(sigmas))


def spread_of_means(matrix: np.ndarray) -> float:
    """The spread (pp) of the column means of a (seeds x sigma_w) accuracy array in pp: max - min over sigma_w
    of the seed-mean accuracy, Das et al.'s Spread; nan with fewer than two sigma_w or no seed."""
    if matrix.shape[0] == 0 or matrix.shape[1] < 2:
        return math.nan
    means = matrix.mean(axis=0)
    return float(means.max() - means.min())


def started_arms(experiment: str, scale: str, show: Sequence[str], selection: str = "best") -> list[Arm]:
    """The arms of ``experiment`` at ``scale`` with at least one seed finished on the experiment's whole sigma_w
    grid (:func:`seed_matrix`), read by rule ``selection``: what a figure of a sweep under way can already show
    (a verdict waits for :func:`finished_arms`)."""
    exp, f, g = EXPERIMENTS[experiment], get_scale(scale).forgetting, grids(scale)
    grid = list(exp.sigmas(f, g))
    return [a for a in arms(load(experiment, scale), show, selection)
            if a.sigmas == grid and seed_matrix(a)[0] and seed_matrix(a)[1] == grid]


@dataclass(frozen=True)
class NoiseFloor:
    """How large a spread is by chance at one scale, from the ``seed_noise`` experiment (one arm, several seeds)
    and the size of the test set.

    A one-seed accuracy Acc(sigma) is taken to carry noise of standard deviation s = sqrt(s_seed^2 + s_test^2):
    s_seed the pooled per-sigma_w standard deviation over seeds (run-to-run variation: init and data order, on the
    one test set), s_test = 100 sqrt(p (1 - p) / n_test) the binomial error of drawing a test set of n_test images.
    A spread over k sigma_w that do not matter at all is then d_k s on average
    (:func:`fibook.forgetting.metrics.expected_range`): the floor. It treats the test-set term as independent
    across sigma_w, which overstates it (every sigma_w is scored on the same images), so the floor is an upper
    bound; ``seed_floor_pp`` is the part that run-to-run variation alone gives, d_k s_seed.

    ``spread_std_pp`` is the standard deviation over seeds of a one-seed spread, the error bar an arm run on one
    seed borrows: pooled (:func:`pooled_spread_std`) over the arms of the scale with two or more seeds on the quick
    grid whose selected predictors interpolate and that are stable (no run collapsed or diverged), on
    ``spread_df`` degrees of freedom from ``spread_arms`` arms; ``unstable_*`` the same over the unstable ones,
    which is what an unstable arm borrows (nan where there is none)."""

    seed_std_pp: float
    spread_std_pp: float
    n_test: int
    seeds: int
    spread_arms: int = 1
    spread_df: float = math.inf
    unstable_spread_std_pp: float = math.nan
    unstable_spread_arms: int = 0
    unstable_spread_df: float = math.nan

    def accuracy_noise_pp(self, accuracy: float) -> float:
        return math.hypot(self.seed_std_pp, metrics.binomial_se_pp(accuracy, self.n_test))

    def floor_pp(self, k: int, accuracy: float) -> float:
        """The expected spread of k sigma_w values with no effect at a typical accuracy ``accuracy`` (an upper
        bound: the test-set term counted as independent across sigma_w)."""
        return metrics.expected_range(k) * self.accuracy_noise_pp(accuracy)

    def seed_floor_pp(self, k: int) -> float:
        """The expected spread of k sigma_w values with no effect from run-to-run variation alone, d_k s_seed."""
        return metrics.expected_range(k) * self.seed_std_pp

    def borrowed(self, unstable: bool) -> tuple[float, float, int]:
        """The (std, degrees of freedom, arms pooled) of a one-seed spread for a stable or an unstable arm."""
        if unstable:
            return self.unstable_spread_std_pp, self.unstable_spread_df, self.unstable_spread_arms
        return self.spread_std_pp, self.spread_df, self.spread_arms


def noise_floor(scale: str, selection: str = "best") -> NoiseFloor | None:
    """The :class:`NoiseFloor` of ``scale``: the per-sigma_w seed std from its ``seed_noise`` arm read by rule
    ``selection``, the std of a one-seed spread pooled over every multi-seed arm whose selected predictors
    interpolate, stable and unstable apart (:func:`pooled_spread_std`); None until the ``seed_noise`` arm has
    finished."""
    done = finished_arms("seed_noise", scale, ("lr",), selection)
    if not done.arms:
        return None
    (arm,) = done.arms
    variances = [v**2 for v in seed_std_pp(arm).values()]
    fitting = [a for _, a in pooled_arms(scale, selection) if a.interpolates_at_selection]
    std, arms_used, df = pooled_spread_std([a for a in fitting if not a.unstable])
    u_std, u_arms, u_df = pooled_spread_std([a for a in fitting if a.unstable])
    return NoiseFloor(seed_std_pp=math.sqrt(float(np.mean(variances))), spread_std_pp=std,
                      n_test=arm.config.n_test or 0, seeds=len(seed_spreads(arm)), spread_arms=arms_used,
                      spread_df=df, unstable_spread_std_pp=u_std, unstable_spread_arms=u_arms,
                      unstable_spread_df=u_df)


def pooled_spread_std(arm_list: Sequence[Arm]) -> tuple[float, int, float]:
    """The pooled standard deviation of a one-seed spread, sqrt(sum_i (n_i - 1) s_i^2 / sum_i (n_i - 1)) with
    s_i the sample std (ddof = 1) of the n_i per-seed spreads of arm i (:func:`seed_spreads`), over the arms
    with n_i >= 2; how many arms that is, and its degrees of freedom sum_i (n_i - 1). (nan, 0, nan) when no arm
    has two seeds."""
    dof = total = 0.0
    used = 0
    for a in arm_list:
        per_seed = list(seed_spreads(a).values())
        if len(per_seed) >= 2:
            dof += len(per_seed) - 1
            total += (len(per_seed) - 1) * float(np.var(per_seed, ddof=1))
            used += 1
    return (math.sqrt(total / dof), used, dof) if used else (math.nan, 0, math.nan)


@dataclass(frozen=True)
class SpreadEstimate(stats.Estimate):
    """An arm's spread of seed-means (pp) with its standard error: over two or more seeds, the standard deviation
    of the spread over the seed bootstrap (:func:`fibook.stats.bootstrap`, exact) on seeds - 1 degrees of freedom,
    with the bootstrap's percentile interval ``low``..``high``; an arm with one seed borrows the std of a one-seed
    spread of the scale's :class:`NoiseFloor` (``borrowed``; from arms of its stability)."""

    seeds: int = 1
    borrowed: bool = False
    low: float = math.nan
    high: float = math.nan
    unstable: bool = False

    def __str__(self) -> str:
        seeds = f"{self.seeds} seed{'s' * (self.seeds != 1)}"
        mark = ", unstable" if self.unstable else ""
        if math.isnan(self.value):
            return f"n/a ({seeds}; fewer than two σ_w have a run that did not diverge)"
        if not self.has_error_bar:
            return f"{self.value:.1f} pp ({seeds}{mark}; no error bar: no pooled std of a one-seed spread)"
        if self.borrowed:
            return f"{self.value:.1f} ± {self.se:.1f} pp ({seeds}{mark}; pooled std of a one-seed spread)"
        return f"{self.value:.1f} ± {self.se:.1f} pp ({seeds}{mark}; seed bootstrap {self.low:.1f}–{self.high:.1f})"


def spread_estimate(arm: Arm, noise: NoiseFloor | None) -> SpreadEstimate:
    """The spread of seed-means of ``arm`` with its error bar (:class:`SpreadEstimate`): bootstrapped over its
    own seeds when it has two or more complete ones (:func:`seed_matrix`), else its one spread with the std a
    one-seed spread of its stability has at this scale (nan without a noise floor)."""
    seeds, _, matrix = seed_matrix(arm)
    if len(seeds) >= 2:
        b = stats.bootstrap(lambda idx: spread_of_means(matrix[idx]), len(seeds))
        return SpreadEstimate(b.value, b.se, len(seeds) - 1, seeds=len(seeds), low=b.low, high=b.high,
                              unstable=arm.unstable)
    std, df, _ = noise.borrowed(arm.unstable) if noise is not None else (math.nan, math.nan, 0)
    return SpreadEstimate(spread_of_means(matrix), std, df, seeds=len(seeds), borrowed=True, unstable=arm.unstable)


@dataclass(frozen=True)
class Difference(stats.Estimate):
    """A contrast of two arms' spreads, spread(a) - weight x spread(b) (pp), with its standard error and degrees
    of freedom: ``paired`` over the ``seeds`` both ran (common random numbers: a seed fixes the init draw and the
    data order in every arm), else from each arm's own error bar (:class:`SpreadEstimate`)."""

    paired: bool = False
    seeds: int = 0

    def __str__(self) -> str:
        if math.isnan(self.value):
            return "n/a (a spread is undefined)"
        if not self.has_error_bar:
            return f"{stats.signed(self.value)} pp (no error bar)"
        lo, hi = self.interval()
        how = f"paired over {self.seeds} seeds" if self.paired else "unpaired"
        return f"{stats.signed(self.value)} pp, 95 % [{stats.signed(lo)}, {stats.signed(hi)}] ({how})"


def spread_difference(a: Arm, b: Arm, noise: NoiseFloor | None, weight: float = 1.0) -> Difference:
    """spread(a) - ``weight`` x spread(b) (``weight`` 0.5: is a's spread below half of b's?). Paired when the arms
    share n >= 2 complete seeds on one sigma_w grid: the contrast on those seeds, its standard error the std over
    the exact seed bootstrap resampling both arms with the same seeds, on n - 1 degrees of freedom. Otherwise the
    contrast of the :func:`spread_estimate` values, se = sqrt(se_a^2 + weight^2 se_b^2) on the smaller of their
    degrees of freedom."""
    seeds_a, sig_a, ma = seed_matrix(a)
    seeds_b, sig_b, mb = seed_matrix(b)
    common = sorted(set(seeds_a) & set(seeds_b))
    if len(common) >= 2 and sig_a == sig_b:
        ma, mb = ma[[seeds_a.index(s) for s in common]], mb[[seeds_b.index(s) for s in common]]
        boot = stats.bootstrap(lambda idx: spread_of_means(ma[idx]) - weight * spread_of_means(mb[idx]), len(common))
        return Difference(boot.value, boot.se, len(common) - 1, paired=True, seeds=len(common))
    ea, eb = spread_estimate(a, noise), spread_estimate(b, noise)
    return Difference(ea.value - weight * eb.value, math.hypot(ea.se, weight * eb.se), min(ea.df, eb.df))


def mechanism(config: TrainConfig) -> str:
    """``SGD``, ``momentum SGD``, ``SGD + L2``, ``Adam``, ``AdamW`` or ``Muon``: an arm's group in the collapse."""
    return "SGD + L2" if sgd_with_l2(config) else get_optimizer(config.optimizer).label


# The mechanisms whose arms count in each clock's trend: momentum SGD counts on T_SGD at its effective step
# (:func:`forgetting_clock`); Muon counts on T_adapt by the book's reading of "adaptive preconditioning".
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


def pooled_arms(scale: str, selection: str, arch: str = "resnet9") -> list[tuple[str, Arm]]:
    """Every arm of Part I's experiments on ``arch`` read by rule ``selection`` on the quick sigma_w grid that
    every experiment runs (so that every spread is over the same sigma_w), with the runs of all experiments pooled
    (an arm that ``seed_noise`` ran on three seeds has three), each with the first experiment that holds it. An arm
    counts with the seeds that cover the whole grid (a seed still running is left out until it does)."""
    grid = set(grids(scale).quick_sigma_w)
    pooled: dict[str, Record] = {}
    first: dict[tuple, str] = {}
    for name in EXPERIMENTS:
        for r in load(name, scale):
            if r.config.arch == arch and r.config.sigma_w in grid and r.status in ("ok", "diverged"):
                pooled.setdefault(r.id, r)
                first.setdefault(arm_of(r.config), name)
    covered: dict[tuple, set[float]] = defaultdict(set)
    for r in pooled.values():
        covered[arm_of(r.config), r.config.seed].add(r.config.sigma_w)
    complete = [r for r in pooled.values() if covered[arm_of(r.config), r.config.seed] == grid]
    return [(first[arm_of(a.config)], a)
            for a in arms(complete, ("optimizer", "lr", "weight_decay", "batch_size", "epochs"), selection)]


def collapse_points(scale: str, selection: str, noise: NoiseFloor | None, arch: str = "resnet9",
                    momentum: str = "effective") -> list[ClockPoint]:
    """Every arm of :func:`pooled_arms` as a :class:`ClockPoint` (momentum SGD's clock read by ``momentum``),
    ordered by clock, then by its value."""
    points = [clock_point(experiment, a, noise, momentum) for experiment, a in pooled_arms(scale, selection, arch)]
    return sorted(points, key=lambda p: (p.clock, p.value))


def spread_and_direction(points: Sequence[ClockPoint]) -> list[tuple[float, float]]:
    """(cos(W_t, W_0) at the largest sigma_w of the arm, :func:`direction_kept`; spread mean) of every point
    whose selected predictors interpolate and whose runs at that sigma_w record the direction: whether an arm's
    spread goes with how much of the largest sigma_w's initial direction it keeps (fibook's question, not the
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


def baseline_arm(points: Sequence[ClockPoint], scale: str) -> Arm | None:
    """Low-learning-rate SGD at the scale's rate, b = 128 and length, among ``points`` (its quick-grid arm)."""
    f, g = get_scale(scale).forgetting, grids(scale)
    for p in points:
        c = p.arm.config
        if (c.optimizer, c.lr, c.weight_decay, c.batch_size, c.epochs) == ("sgd", g.sgd_lr, 0.0, 128, f.epochs):
            return p.arm
    return None


def selection_rows(experiment: str, scale: str, selections: Sequence[str] = ("best", "late")) -> list[dict]:
    """Per arm of ``experiment``: under each rule of :data:`SELECTIONS`, the spread, the selected epochs and how
    many sigma_w's selected predictors interpolate (how much a verdict owes to the checkpoint it reads)."""
    by_rule = {s: load_arms(experiment, scale, selection=s) for s in selections}
    rows = []
    for i, first in enumerate(by_rule[selections[0]]):
        row = {"arm": first.label}
        for s, arm_list in by_rule.items():
            a = arm_list[i]
            row[f"{s}: spread (pp)"] = f"{a.spread_pp:.1f}"
            row[f"{s}: epochs"] = a.epoch_range()
            row[f"{s}: interpolating"] = f"{sum(a.selected_interpolated)} of {len(a.sigmas)}"
        rows.append(row)
    return rows


def reading_rows(scale: str, arch: str = "resnet9") -> list[dict]:
    """Per arm of :func:`pooled_arms` (the quick grid, seeds pooled): its spread of seed-means under each reading,
    the best validation loss over the whole run, over the second half (the book's), the last epoch, and the mean
    of the last ``LAST_EPOCHS`` epochs, with whether the arm is stable: how much a verdict owes to the checkpoint
    it reads."""
    by_rule = {s: {arm_of(a.config): a for _, a in pooled_arms(scale, s, arch)} for s in ("best", "late", "last")}
    rows = []
    for key, a in by_rule["late"].items():
        seeds = len({r.config.seed for r in a.records})
        rows.append({"arm": a.label, "seeds": seeds,
                     **{f"{s}: spread (pp)": f"{by_rule[s][key].spread_pp:.1f}" for s in ("best", "late", "last")},
                     f"last {LAST_EPOCHS} epochs: spread (pp)": f"{a.last_epochs_spread_pp:.1f}",
                     "stable": "no" if a.unstable else "yes"})
    return rows


def stability_rows(arm_list: Sequence[Arm]) -> list[dict]:
    """Per arm, the worst of its runs (:class:`Stability`): the smallest fraction of second-half epochs that fit
    the training set, the deepest train-accuracy drop after fitting, the largest train loss after it, and how many
    runs collapsed or diverged."""
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
