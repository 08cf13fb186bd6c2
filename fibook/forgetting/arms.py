"""Part I arms: runs grouped by all but sigma_w and seed, seed-averaged per sigma_w, and the readings of each arm.

Runs are grouped into *arms* (:data:`ARM_FIELDS`: everything but sigma_w and seed, :func:`arm_of`), labelled for
tables (:func:`arm_label`; :data:`UNSTABLE` marks an arm with a run that collapsed or diverged) and for claims
(:func:`setting`). Each run is read at the checkpoint a selection rule picks (:mod:`fibook.forgetting.checkpoints`);
within an arm, seed-means are taken per sigma_w (Das et al. 2026): Acc(sigma) = mean over seeds of the selected
test accuracy, and

    Spread = max_sigma Acc(sigma) - min_sigma Acc(sigma)   (pp),

Spread^interp the same over the sigma_w whose every seed's selected checkpoint interpolates, and the radial memory
R = slope of log ||W_E|| against log sigma_w over seed-mean final norms. Clocks are read at the selected
checkpoints, the ones whose accuracy is plotted (:mod:`fibook.forgetting.clocks`). Beside these: the spread of
one seed's accuracies (:func:`seed_spreads`), the per-sigma_w seed std, the norm and direction each sigma_w keeps
of its initialization, and the (seeds x sigma_w) accuracies that the error bars of :mod:`fibook.forgetting.noise`
resample (:func:`seed_matrix`, :func:`spread_of_means`).

Serves every Part I chapter that shows trained runs: ``sgd_remembers``, ``time_lr_l2_batch``, ``optimizers``,
``clocks`` and ``depth``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fibook import stats
from fibook.forgetting import metrics
from fibook.forgetting.checkpoints import Checkpoint, Stability, checkpoint, last_epochs_acc, stability
from fibook.forgetting.clocks import clock_key, effective_lr, forgetting_clock, heavy_ball_momentum, sgd_with_l2
from fibook.forgetting.config import TrainConfig
from fibook.forgetting.optimizers import get_optimizer
from fibook.forgetting.records import Record

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


def setting(config: TrainConfig, preset: str, show: Sequence[str] = ("arch", "epochs")) -> str:
    """Where a number was measured, for a claims table: ``book: fashion_mnist, ResNet-9 w16, 40 epochs``;
    ``show`` picks the parts after the dataset (see :func:`config_part`)."""
    parts = [p for p in (config_part(config, k) for k in show) if p]
    return ", ".join([f"{preset}: {config.dataset}", *parts])


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
        """Some run of the arm collapsed after fitting the training set, or diverged
        (:class:`~fibook.forgetting.checkpoints.Stability`)."""
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
        :func:`~fibook.forgetting.clocks.forgetting_clock`)."""
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
    run read at the checkpoint of rule ``selection`` (:data:`~fibook.forgetting.checkpoints.SELECTIONS`)."""
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
