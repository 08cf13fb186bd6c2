"""Part I noise: how large a spread is by chance, the error bar of an arm's spread, and contrasts of two spreads.

The spread of seed-means (:mod:`fibook.forgetting.arms`) is the only spread of several seeds the book reports; its
error bar is a bootstrap over seeds (:func:`spread_estimate`), and the contrast of two arms' spreads,
spread(a) - w x spread(b), is bootstrapped over the seeds both ran, paired (:func:`spread_difference`). The spread
of one seed's accuracies (:func:`fibook.forgetting.arms.seed_spreads`) serves one purpose: how much a one-seed
arm's spread varies, the error bar it borrows (:class:`NoiseFloor`), pooled over the arms with n_i >= 2 seeds,

    s = sqrt(sum_i (n_i - 1) s_i^2 / sum_i (n_i - 1))   (:func:`pooled_spread_std`).

The floor a spread over k sigma_w that do not matter reaches by chance is d_k sqrt(s_seed^2 + s_test^2), with
s_test = 100 sqrt(p (1 - p) / n_test) (:meth:`NoiseFloor.floor_pp`). A run that fits the training set and later
falls out of it (:func:`fibook.forgetting.metrics.collapsed`) makes its arm *unstable*, and an unstable arm borrows
only from unstable arms.

Serves "SGD remembers" (``sgd_remembers``: the noise floor of the ``seed_noise`` arm) and every chapter whose
verdicts compare spreads: ``time_lr_l2_batch``, ``optimizers`` and ``clocks`` (also its table of every arm's spread
with its error bar under each reading, :func:`reading_rows`); the appendix's verdict rules describe it
(``chapters/_includes/part1_noise.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from fibook import stats
from fibook.forgetting import metrics
from fibook.forgetting.arms import UNSTABLE, Arm, arm_of, seed_matrix, seed_spreads, seed_std_pp, spread_of_means
from fibook.forgetting.checkpoints import LAST_EPOCHS
from fibook.forgetting.loading import finished_arms, load_arms, pooled_arms


@dataclass(frozen=True)
class NoiseFloor:
    """How large a spread is by chance at one preset, from the ``seed_noise`` experiment (one arm, several seeds)
    and the size of the test set.

    A one-seed accuracy Acc(sigma) is taken to carry noise of standard deviation s = sqrt(s_seed^2 + s_test^2):
    s_seed the pooled per-sigma_w standard deviation over seeds (run-to-run variation: init and data order, on the
    one test set), s_test = 100 sqrt(p (1 - p) / n_test) the binomial error of drawing a test set of n_test images.
    A spread over k sigma_w that do not matter at all is then d_k s on average
    (:func:`fibook.forgetting.metrics.expected_range`): the floor. It treats the test-set term as independent
    across sigma_w, which overstates it (every sigma_w is scored on the same images), so the floor is an upper
    bound; ``seed_floor_pp`` is the part that run-to-run variation alone gives, d_k s_seed.

    ``spread_std_pp`` is the standard deviation over seeds of a one-seed spread, the error bar an arm run on one
    seed borrows: pooled (:func:`pooled_spread_std`) over the arms of the preset with two or more seeds on the quick
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


def noise_floor(preset: str, selection: str = "best") -> NoiseFloor | None:
    """The :class:`NoiseFloor` of ``preset``: the per-sigma_w seed std from its ``seed_noise`` arm read by rule
    ``selection``, the std of a one-seed spread pooled over every multi-seed arm whose selected predictors
    interpolate, stable and unstable apart (:func:`pooled_spread_std`); None until the ``seed_noise`` arm has
    finished."""
    done = finished_arms("seed_noise", preset, ("lr",), selection)
    if not done.arms:
        return None
    (arm,) = done.arms
    variances = [v**2 for v in seed_std_pp(arm).values()]
    fitting = [a for _, a in pooled_arms(preset, selection) if a.interpolates_at_selection]
    std, arms_used, df = pooled_spread_std([a for a in fitting if not a.unstable])
    u_std, u_arms, u_df = pooled_spread_std([a for a in fitting if a.unstable])
    return NoiseFloor(seed_std_pp=math.sqrt(float(np.mean(variances))), spread_std_pp=std,
                      n_test=arm.config.n_test or 0, seeds=len(seed_spreads(arm)), spread_arms=arms_used,
                      spread_df=df, unstable_spread_std_pp=u_std, unstable_spread_arms=u_arms,
                      unstable_spread_df=u_df)


def pooled_spread_std(arm_list: Sequence[Arm]) -> tuple[float, int, float]:
    """The pooled standard deviation of a one-seed spread, sqrt(sum_i (n_i - 1) s_i^2 / sum_i (n_i - 1)) with s_i the
    sample std (ddof = 1) of the n_i per-seed spreads of arm i (:func:`~fibook.forgetting.arms.seed_spreads`), over the
    arms with n_i >= 2; how many arms that is, and its degrees of freedom sum_i (n_i - 1). (nan, 0, nan) when no arm has
    two seeds."""
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
    spread of the preset's :class:`NoiseFloor` (``borrowed``; from arms of its stability)."""

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

    def brief(self) -> str:
        """``8.4 ± 0.5 pp`` (`` [unstable]`` after an unstable arm's), for a list of spreads whose text says once where
        the error bars come from; ``8.4 pp (no error bar)`` without one, ``n/a`` where the spread is undefined."""
        if math.isnan(self.value):
            return "n/a"
        mark = UNSTABLE if self.unstable else ""
        if not self.has_error_bar:
            return f"{self.value:.1f} pp{mark} (no error bar)"
        return f"{self.value:.1f} ± {self.se:.1f} pp{mark}"


def spread_estimate(arm: Arm, noise: NoiseFloor | None) -> SpreadEstimate:
    """The spread of seed-means of ``arm`` with its error bar (:class:`SpreadEstimate`): bootstrapped over its own seeds
    when it has two or more complete ones (:func:`~fibook.forgetting.arms.seed_matrix`), else its one spread with the
    std a one-seed spread of its stability has at this preset (nan without a noise floor)."""
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


READINGS = ("best", "late", "last")  # the readings of reading_rows: the paper's, the book's, the last epoch


def with_error_bar(e: SpreadEstimate) -> str:
    """``8.4 ± 0.4``: a spread and its standard error in pp, for a table's cell (``8.4 (no error bar)`` without)."""
    return f"{e.value:.1f} ± {e.se:.1f}" if e.has_error_bar else f"{e.value:.1f} (no error bar)"


def selection_rows(experiment: str, preset: str, selections: Sequence[str] = ("best", "late")) -> list[dict]:
    """Per arm of ``experiment``: under each rule of :data:`~fibook.forgetting.checkpoints.SELECTIONS`, the spread
    with its error bar (:func:`spread_estimate`, a one-seed arm borrowing from that rule's :func:`noise_floor`), the
    selected epochs and how many sigma_w's selected predictors interpolate (how much a verdict owes to the checkpoint
    it reads)."""
    by_rule = {s: load_arms(experiment, preset, selection=s) for s in selections}
    floors = {s: noise_floor(preset, s) for s in selections}
    rows = []
    for i, first in enumerate(by_rule[selections[0]]):
        row = {"arm": first.label}
        for s, arm_list in by_rule.items():
            a = arm_list[i]
            row[f"{s}: spread (pp)"] = with_error_bar(spread_estimate(a, floors[s]))
            row[f"{s}: epochs"] = a.epoch_range()
            row[f"{s}: interpolating"] = f"{sum(a.selected_interpolated)} of {len(a.sigmas)}"
        rows.append(row)
    return rows


def reading_rows(preset: str, arch: str = "resnet9") -> list[dict]:
    """Per arm of :func:`~fibook.forgetting.loading.pooled_arms` (the quick grid, seeds pooled): its spread of
    seed-means with its error bar (:func:`spread_estimate`, a one-seed arm borrowing from that reading's
    :func:`noise_floor`) under each reading of ``READINGS``, the best validation loss over the whole run, over the
    second half (the book's), the last epoch; the mean of the last ``LAST_EPOCHS`` epochs (no error bar); how many
    sigma_w's selected predictors fit the training set under the book's reading and whether the arm is stable (an
    arm that never fits is not unstable, it does not fit): how much a verdict owes to the checkpoint it reads."""
    by_rule = {s: {arm_of(a.config): a for _, a in pooled_arms(preset, s, arch)} for s in READINGS}
    floors = {s: noise_floor(preset, s) for s in READINGS}
    rows = []
    for key, a in by_rule["late"].items():
        rows.append({"arm": a.label, "seeds": len({r.config.seed for r in a.records}),
                     **{f"{s}: spread (pp)": with_error_bar(spread_estimate(by_rule[s][key], floors[s]))
                        for s in READINGS},
                     f"last {LAST_EPOCHS} epochs: spread (pp)": f"{a.last_epochs_spread_pp:.1f}",
                     "selected predictors fit (book's reading)": f"{sum(a.selected_interpolated)} of {len(a.sigmas)}",
                     "stable": "no" if a.unstable else "yes"})
    return rows


@dataclass(frozen=True)
class PrecisionCheck:
    """Runs of one config and seed trained at two precisions (bf16 and fp32), compared spread by spread.

    ``rows``: per such (arm, seed), the one-seed spread at each precision and their difference. If precision does
    not change a spread's distribution, two runs of one seed differ at most as two independent one-seed spreads do,
    with variance 2 s^2 (s the pooled std of a one-seed spread, ``spread_std_pp``, on ``spread_df`` degrees of
    freedom); the ratio F = mean(d^2) / (2 s^2) of the n differences d is then at most F(n, spread_df)-distributed,
    and ``p_value`` = P(F(n, df) >= F) tests for more difference than that (one-sided). ``rms_pp`` =
    sqrt(mean(d^2)); ``expected_pp`` = sqrt(2) s."""

    rows: list[dict]
    rms_pp: float
    expected_pp: float
    p_value: float

    @property
    def line(self) -> str:
        """The comparison in one sentence (rounded), or why there is none."""
        if not self.rows:
            return "no run was trained at both precisions with the same config and seed"
        if math.isnan(self.p_value):
            return f"{len(self.rows)} paired spreads, root mean square difference {self.rms_pp:.1f} pp; no pooled std"
        return (f"{len(self.rows)} paired spreads: root mean square difference {self.rms_pp:.1f} pp against "
                f"{self.expected_pp:.1f} pp for two independent one-seed spreads (√2 × the pooled std); "
                f"F test p = {self.p_value:.2g}")


def precision_check(preset: str, selection: str, noise: NoiseFloor | None, arch: str = "resnet9") -> PrecisionCheck:
    """Every arm of :func:`~fibook.forgetting.loading.pooled_arms` that also ran at another precision with the
    same config, seed by seed (the seeds both have on the whole grid), read by rule ``selection``; stable arms only
    (an unstable arm's spread depends on the reading), in the order of the arms' labels, then seeds."""
    pool = [a for _, a in pooled_arms(preset, selection, arch) if not a.unstable]
    by_rest: dict[tuple, dict[str, Arm]] = {}
    for a in pool:
        rest = tuple(kv for kv in arm_of(a.config) if kv[0] != "precision")
        by_rest.setdefault(rest, {})[a.config.precision] = a
    rows = []
    for both in sorted((b for b in by_rest.values() if len(b) == 2), key=lambda b: min(a.label for a in b.values())):
        (p, a), (q, b) = sorted(both.items())
        sa, sb = seed_spreads(a), seed_spreads(b)
        for seed in sorted(set(sa) & set(sb)):
            rows.append({"arm": a.label, "seed": seed, f"spread, {p} (pp)": f"{sa[seed]:.1f}",
                         f"spread, {q} (pp)": f"{sb[seed]:.1f}", "difference (pp)": stats.signed(sa[seed] - sb[seed]),
                         "_d": sa[seed] - sb[seed]})
    d = np.array([r.pop("_d") for r in rows])
    rms = float(np.sqrt(np.mean(d**2))) if len(d) else math.nan
    s = math.nan if noise is None else noise.spread_std_pp
    p_value = math.nan if not len(d) or math.isnan(s) else \
        float(scipy_stats.f.sf(np.mean(d**2) / (2 * s**2), len(d), noise.spread_df))
    return PrecisionCheck(rows, rms, math.sqrt(2) * s, p_value)
