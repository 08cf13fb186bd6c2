"""The book's verdicts: every row of a chapter's "claim | paper | ours | agrees?" table, computed here.

A chapter cell that decides a verdict is one call of a function of this module; the rule behind each verdict and
its thresholds are named constants, stated in the docstring and in the chapter text before the figure, and
tested just above and just below each threshold. ``paper`` says what the paper reports (or that it does not),
``ours`` the number measured here with the setting it was measured in.

Part I (forgetting initialization, Das et al. 2026), read on the seed-averaged arms of
:mod:`fibook.forgetting.analysis`. Three rules apply to every spread verdict before its threshold:

* ``SELECTION = "late"``: the optimizers, time/LR/L2/batch and clocks chapters read every run at its lowest
  validation loss over the run's second half (the selected predictor must fit the training set, and a
  40-epoch run's best validation loss often comes before it does; a long run's second half also lies after a
  short run's end, so training longer can change what is selected).
* The condition (the book's reading of the paper's headline runs, which all fit the training set): a spread
  verdict needs every sigma_w's selected predictor to interpolate (:func:`condition`); an arm that does not is
  shown and its row says "not tested".
* ``NOISE_SIGMAS = 2.0``: a difference of spreads counts only beyond 2 standard errors of the difference
  (:func:`beyond_noise`, :func:`fibook.forgetting.analysis.spread_difference`: paired over shared seeds, else
  from each arm's own error bar).

=================================  ==========================================================================
``ERASES_FRACTION = 0.5``          an arm "largely erases" the sigma_w dependence when its spread is below half
                                   of low-learning-rate SGD's (``optimizers``)
``COMMON_NORM_R = 0.5``            adaptive methods drive the weights to a common norm when the radial memory R
                                   (slope of log final norm on log sigma_w) of each is below 0.5
``KEEPS_FRACTION = 0.5``           training longer "leaves the spread" when the longest arm keeps more than
                                   half of the shortest arm's selected and last-epoch spreads
``ERASED_PP = 1.0``                L2 erases the memory outright when the spread is below 1 pp; below
                                   ``ERASES_FRACTION`` of the baseline's it does so qualitatively
``RANK_AGREES = 0.5``              spread rising with batch size: Spearman rank correlation above 0.5, and the
                                   largest batch's spread above the smallest's beyond noise
``LARGE_SPREAD_PP = 5.0``          low-learning-rate SGD "keeps a large spread" across sigma_w from 5 pp up
``RADIAL_KEPT = 0.8``              the final weight norm "stays tied to sigma_w" when R exceeds 0.8
``NOISE_MULTIPLE = 3.0``           a spread is "far larger than seed noise" when the seed-mean spread exceeds
                                   3 x the largest per-sigma_w seed standard deviation
``CLOCK_RHO = -0.5``               "a larger clock leaves a smaller spread": Spearman rank correlation of spread
                                   with the clock at or below -0.5 across the included arms, and the arm at the
                                   smallest clock above the one at the largest beyond noise (weakly: rho < 0)
``STILL_RISING_PP = 1.0``          a deep net that does not interpolate "fails to" only when its train accuracy
                                   rose by at most 1 pp over the last quarter of training (else: budget)
``INVARIANCE_TOL = 1e-9``          BatchNorm scale invariance holds when the loss moves by less than 1e-9 and
                                   the gradient's cosine with the weight is below 1e-9 (float64)
``LOGIT_FLOOR = 1e-4``             sigma_w only scales the initial logits when the relative deviation from
                                   sigma_w logits(1) is below 1e-4 (float32 rounding lies below it)
(quoted figures)                   a recomputed clock agrees when it rounds to the paper's two digits
=================================  ==========================================================================
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from fibook.forgetting.analysis import (
    Arm,
    ClockPoint,
    Difference,
    Finished,
    NoiseFloor,
    arm_of,
    effective_lr,
    equal_clock_pairs,
    heavy_ball_momentum,
    seed_spreads,
    seed_std_pp,
    setting,
    sgd_with_l2,
    spread_difference,
    spread_estimate,
)
from fibook.forgetting.experiments import ADAM_LR, ADAMW_WEIGHT_DECAY, GRIDS, MUON_LR
from fibook.forgetting.metrics import forgetting_clocks, rank_correlation
from fibook.forgetting.optimizers import get_optimizer
from fibook.notebook import Claim, below

SELECTION = "late"
NOISE_SIGMAS = 2.0
ERASES_FRACTION = 0.5
COMMON_NORM_R = 0.5
KEEPS_FRACTION = 0.5
ERASED_PP = 1.0
RANK_AGREES = 0.5
LARGE_SPREAD_PP = 5.0
RADIAL_KEPT = 0.8
NOISE_MULTIPLE = 3.0
CLOCK_RHO = -0.5
STILL_RISING_PP = 1.0
INVARIANCE_TOL = 1e-9
LOGIT_FLOOR = 1e-4


def arm_key(arm: Arm) -> str:
    """``sgd``, ``msgd``, ``adam``, ``adamw``, ``muon``, or ``sgd+L2`` for SGD with weight decay."""
    return arm.config.optimizer + ("+L2" if sgd_with_l2(arm.config) else "")


def interpolating(arm: Arm) -> str:
    """``3 of 5 σ_w interpolate at the selected checkpoint``: sigma_w values whose every seed's selected
    predictor fits the training set."""
    return f"{sum(arm.selected_interpolated)} of {len(arm.sigmas)} σ_w interpolate at the selected checkpoint"


def condition(*arm_list: Arm) -> str | None:
    """None when the condition holds for every arm (each sigma_w's selected predictor interpolates),
    else the verdict that replaces the comparison: ``not tested: ... does not interpolate``."""
    failing = [a for a in arm_list if not a.interpolates_at_selection]
    if not failing:
        return None
    return "not tested: " + "; ".join(f"{a.label}'s selected predictor does not interpolate at "
                                      f"{len(a.sigmas) - sum(a.selected_interpolated)} of {len(a.sigmas)} σ_w"
                                      for a in failing)


def beyond_noise(d: Difference) -> bool:
    """A difference counts when |d| exceeds ``NOISE_SIGMAS`` standard errors of the difference (``d.std``)."""
    return abs(d.value) > NOISE_SIGMAS * d.std


def erases(arm: Arm, sgd: Arm, noise: NoiseFloor | None) -> str:
    """:func:`condition` on both arms; then ``qualitatively`` when ``arm``'s spread is below ``ERASES_FRACTION``
    of SGD's and SGD's exceeds it beyond noise (:func:`beyond_noise`), else ``no``."""
    unmet = condition(arm, sgd)
    if unmet:
        return unmet
    d = spread_difference(sgd, arm, noise)
    below_half = spread_estimate(arm, noise).mean < ERASES_FRACTION * spread_estimate(sgd, noise).mean
    return "qualitatively" if below_half and d.value > 0 and beyond_noise(d) else "no"


# The paper's runs in the book's reconstruction of its setting (only T_SGD's two values are quoted; the rest are
# the book's conventions): 312 steps an epoch at b = 128 for 300 epochs, (eta, lambda) per arm key (:func:`arm_key`)
RECONSTRUCTED_STEPS = 312 * 300
RECONSTRUCTED_RUNS = {"sgd": (GRIDS["paper"].sgd_lr, 0.0), "msgd": (GRIDS["paper"].sgd_lr, 0.0),
                      "sgd+L2": GRIDS["paper"].l2, "adam": (ADAM_LR, 0.0), "adamw": (ADAM_LR, ADAMW_WEIGHT_DECAY),
                      "muon": (MUON_LR, 0.0)}


def reconstructed_clock(key: str) -> tuple[str, float]:
    """The mechanism's clock of the paper's run of arm ``key`` in the book's reconstruction
    (:data:`RECONSTRUCTED_RUNS`, :func:`fibook.forgetting.metrics.forgetting_clocks` over
    :data:`RECONSTRUCTED_STEPS` constant steps at b = 128): T_SGD 7.3e-4 for SGD and momentum SGD (raw eta),
    T_L2 9.36 for SGD + L2, T_adapt 93.6 for Adam and AdamW, 1,872 for Muon."""
    lr, wd = RECONSTRUCTED_RUNS[key]
    name = "T_L2" if key == "sgd+L2" else get_optimizer(key).clock
    return name, forgetting_clocks([lr] * RECONSTRUCTED_STEPS, 128, wd)[name]


def common_norm(adaptive: Sequence[Arm]) -> str:
    """``qualitatively`` when every adaptive arm's radial memory R is below ``COMMON_NORM_R``, else ``no``."""
    return "qualitatively" if all(a.radial_memory < COMMON_NORM_R for a in adaptive) else "no"


OPTIMIZER_CLAIMS = (  # key, the paper's number, the claim
    ("adam", "qualitative", "Adam largely erases the σ_w dependence"),
    ("adamw", "qualitative", "AdamW largely erases it too"),
    ("muon", "≈ 4.0 pp (secondary)", "Muon leaves a small spread"),
    ("sgd+L2", "≈ 0.3 pp at η = λ = 1e-2 (secondary; T_L2 = 9.36 if run 300 epochs, derived)",
     "SGD + L2 at a large T_L2 forgets"),
)


def seeded_twin(a: Arm, quick: Sequence[Arm]) -> Arm | None:
    """The arm of ``quick`` (arms on the quick sigma_w grid, seeds pooled over experiments) with ``a``'s settings
    and two or more seeds; None when there is none yet."""
    for q in quick:
        if arm_of(q.config) == arm_of(a.config) and len({r.config.seed for r in q.records}) >= 2:
            return q
    return None


def optimizer_claims(arm_list: Sequence[Arm], scale: str, noise: NoiseFloor | None,
                     long_clock: Sequence[Arm] = (), quick_sgd: Arm | None = None,
                     quick: Sequence[Arm] = ()) -> list[Claim]:
    """The ``optimizers`` chapter's rows: each method's spread against SGD's (:func:`erases`), the same for the
    ``long_clock`` arms (adaptive arms run to a longer clock on the quick sigma_w grid, ``adaptive_clock``; one
    no longer than the same method's arm above is left out) against ``quick_sgd`` (SGD on that grid), momentum
    SGD (not in the paper) and the common-norm claim (:func:`common_norm`), on the main grid and on the long-clock
    Adam and AdamW arms. An arm not run yet says so.

    A method whose arm also ran on the quick grid over several seeds (``quick``, :func:`seeded_twin`, from the
    ``seeds`` experiment) is judged there, against ``quick_sgd``, with the per-seed spreads paired; its one-seed
    spread on the main grid is quoted beside it."""
    by_key = {arm_key(a): a for a in arm_list}
    sgd = by_key["sgd"]
    sgd_spread = spread_estimate(sgd, noise)

    def ours(a: Arm, reference: Arm = sgd) -> str:
        clock, value = a.clock()
        return (f"{spread_estimate(a, noise)} ({clock} = {value:.3g} at the selected checkpoints; "
                f"{interpolating(a)}) vs SGD {spread_estimate(reference, noise)}; {setting(a.config, scale)}")

    claims = []
    for key, paper, claim in OPTIMIZER_CLAIMS:
        a = by_key.get(key)
        if a is None:
            claims.append(Claim(claim, paper, f"not run yet at scale '{scale}'", "not tested"))
            continue
        q = seeded_twin(a, quick) if quick_sgd is not None else None
        if q is None:
            claims.append(Claim(claim, paper, ours(a), erases(a, sgd, noise)))
        else:
            main = f"{spread_estimate(a, noise).mean:.1f} pp on the main σ_w grid (1 seed)"
            claims.append(Claim(claim, paper, f"quick σ_w grid: {ours(q, quick_sgd)}; {main}",
                                erases(q, quick_sgd, noise)))
    longer = []
    for a in long_clock if quick_sgd is not None else ():
        short = by_key.get(arm_key(a))
        if short is not None and a.run_clock()[1] <= short.run_clock()[1]:
            continue  # no longer than the arm above
        longer.append(a)
        clock, value = a.run_clock()
        name = get_optimizer(a.config.optimizer).label
        paper_clock = reconstructed_clock(arm_key(a))[1]
        claims.append(Claim(f"{name} at a longer clock largely erases it (η = {a.config.lr:g}, {a.config.epochs} "
                            f"epochs: {clock} = {value:.3g} over the run; quick σ_w grid)",
                            f"qualitative (T_adapt = {paper_clock:,.4g} in the book's reconstruction of the "
                            "paper's run)", ours(a, quick_sgd), erases(a, quick_sgd, noise)))
    if "msgd" in by_key:
        m = by_key["msgd"]
        raw, grow = m.run_clock()[1], 1 / (1 - heavy_ball_momentum(m.config)) ** 2
        claims.append(Claim("momentum SGD at the same raw η", "no number given",
                            f"{spread_estimate(m, noise).mean:.1f} pp vs SGD {sgd_spread.mean:.1f} pp; T_SGD = "
                            f"{raw:.3g} over the run at the raw η, as SGD's {sgd.run_clock()[1]:.3g}, or "
                            f"{raw * grow:.3g} at its effective step η/(1−μ) = {effective_lr(m.config):g}",
                            "n/a (not in the paper)"))

    def radial(arm_list: Sequence[Arm]) -> str:
        return ", ".join(f"{get_optimizer(a.config.optimizer).label} (η = {a.config.lr:g}, {a.config.epochs} epochs) "
                         f"{a.radial_memory:.2f}" for a in arm_list)

    adaptive = [by_key[k] for k in ("adam", "adamw") if k in by_key]
    if adaptive:
        claims.append(Claim("adaptive methods drive the weights to a common norm", "qualitative (secondary)",
                            f"R: {radial(adaptive)}; SGD {sgd.radial_memory:.2f}", common_norm(adaptive)))
    adaptive_longer = [a for a in longer if a.config.optimizer in ("adam", "adamw")]
    if adaptive_longer:
        claims.append(Claim("adaptive methods drive the weights to a common norm, at the longer clocks above",
                            "qualitative (secondary)", f"R on the quick σ_w grid: {radial(adaptive_longer)}; SGD "
                            f"{quick_sgd.radial_memory:.2f}", common_norm(adaptive_longer)))
    return claims


def keeps_spread(short: Arm, long: Arm) -> str:
    """:func:`condition` on both; then ``qualitatively`` when the longer arm keeps more than ``KEEPS_FRACTION``
    of the shorter one's selected and last-epoch spreads, else ``no``."""
    unmet = condition(short, long)
    if unmet:
        return unmet
    kept = all(getattr(long, k) > KEEPS_FRACTION * getattr(short, k) for k in ("spread_pp", "final_spread_pp"))
    return "qualitatively" if kept else "no"


def l2_erases(base: Arm, both: Arm, noise: NoiseFloor | None) -> str:
    """:func:`condition` on both; ``no: within noise`` unless the baseline's spread exceeds the L2 arm's beyond
    noise (:func:`beyond_noise`); then ``yes`` below ``ERASED_PP``; ``qualitatively: k× smaller, not ≈ 0.3 pp``
    below ``ERASES_FRACTION`` of the baseline's spread; else ``no``."""
    unmet = condition(base, both)
    if unmet:
        return unmet
    d = spread_difference(base, both, noise)
    if not (d.value > 0 and beyond_noise(d)):
        return "no: within noise"
    if both.spread_pp < ERASED_PP:
        return "yes"
    ratio = both.spread_pp / base.spread_pp
    return f"qualitatively: {1 / ratio:.1f}× smaller, not ≈ 0.3 pp" if ratio < ERASES_FRACTION else "no"


def falls(row: Sequence[Arm], noise: NoiseFloor | None) -> bool:
    """Arms in rising L2 strength (or clock): the first arm's spread exceeds the last one's beyond noise, and no
    step along the row raises the spread beyond noise."""
    steps = [spread_difference(x, y, noise) for x, y in itertools.pairwise(row)]
    drop = spread_difference(row[0], row[-1], noise)
    return drop.value > 0 and beyond_noise(drop) and not any(d.value < 0 and beyond_noise(d) for d in steps)


def falls_with_l2(rows: dict[str, Sequence[Arm]], noise: NoiseFloor | None) -> str:
    """Per row (one learning rate and length, arms in rising lambda, lambda = 0 first): :func:`condition` on
    every arm; then ``qualitatively`` when the spread :func:`falls` along every row, ``partly: only ...`` along
    some, else ``no``."""
    unmet = condition(*[a for r in rows.values() for a in r])
    if unmet:
        return unmet
    falling = [name for name, r in rows.items() if falls(r, noise)]
    if len(falling) == len(rows):
        return "qualitatively"
    return f"partly: only {', '.join(falling)}" if falling else "no"


def l2_lowers(control: Arm, with_l2: Arm, noise: NoiseFloor | None) -> str:
    """fibook's hypothesis that the L2 term itself erases memory, on an arm and its lambda = 0 control at the same
    rate and length: :func:`condition` on both; ``yes`` when the control's spread exceeds the L2 arm's beyond
    noise, ``no: within noise`` or ``no: L2 raised the spread`` otherwise."""
    unmet = condition(control, with_l2)
    if unmet:
        return unmet
    d = spread_difference(control, with_l2, noise)
    if not beyond_noise(d):
        return "no: within noise"
    return "yes" if d.value > 0 else "no: L2 raised the spread"


def rises_with_batch(rho: float | None, rise: Difference | None) -> str:
    """``qualitatively`` when the rank correlation of spread with batch size exceeds ``RANK_AGREES`` and the
    spread at the largest batch exceeds the one at the smallest beyond noise (``rise``, :func:`beyond_noise`);
    else ``no``."""
    grows = rise is not None and rise.value > 0 and beyond_noise(rise)
    return "qualitatively" if rho is not None and rho > RANK_AGREES and grows else "no"


def _row(claim: str, paper: str, finished: Finished, needed: bool, ours: Callable[[], tuple[str, str]]) -> Claim:
    """A claim measured on ``finished``'s arms, or ``not tested yet`` while they are not all there."""
    if not needed:
        return Claim(claim, paper, f"not finished ({finished.progress})", "not tested yet")
    return Claim(claim, paper, *ours())


def l2_rows(l2_clock: Finished) -> dict[str, list[Arm]]:
    """The ``l2_clock`` arms as rows of one rate and length (``η = 0.01, 40 epochs``), lambda rising, kept only
    when the row holds its lambda = 0 control and at least one lambda > 0 arm."""
    rows: dict[tuple, list[Arm]] = {}
    for a in l2_clock.arms:
        rows.setdefault((a.config.lr, a.config.epochs), []).append(a)
    return {f"η = {lr:g}, {e} epochs": sorted(r, key=lambda a: a.config.weight_decay)
            for (lr, e), r in sorted(rows.items()) if len(r) >= 2 and r and min(a.config.weight_decay for a in r) == 0}


def time_l2_batch_claims(long: Finished, l2: Finished, l2_clock: Finished, batch: Finished, lrs: Sequence[float],
                         wds: Sequence[float], scale: str, noise: NoiseFloor | None) -> list[Claim]:
    """The ``time_lr_l2_batch`` chapter's rows: longer training (:func:`keeps_spread`, shortest against longest
    arm), L2 at a large rate (:func:`l2_erases`, on the ``l2_lr`` grid ``lrs`` x ``wds``), more L2 at a fixed
    rate (:func:`falls_with_l2`) and L2 against its lambda = 0 control (:func:`l2_lowers`) on ``l2_clock``,
    batch size (:func:`rises_with_batch`, over the arms whose selected predictors interpolate)."""
    def where(f: Finished, show):
        return setting(f.arms[0].config, scale, show=show)

    long_arms = sorted(long.arms, key=lambda a: a.config.epochs)
    batch_arms = sorted(batch.arms, key=lambda a: a.config.batch_size)
    cells = {(a.config.lr, a.config.weight_decay): a for a in l2.arms}
    base, both = cells.get((min(lrs), 0.0)), cells.get((max(lrs), max(wds)))
    rows = l2_rows(l2_clock)

    def longer():
        short, longest = long_arms[0], long_arms[-1]
        return (f"{short.config.epochs} → {longest.config.epochs} epochs: selected {short.spread_pp:.1f} → "
                f"{longest.spread_pp:.1f} pp (difference {spread_difference(longest, short, noise)}), last epoch "
                f"{short.final_spread_pp:.1f} → {longest.final_spread_pp:.1f} pp, R {short.radial_memory:.2f} → "
                f"{longest.radial_memory:.2f}, selected epochs {short.epoch_range()} and {longest.epoch_range()} "
                f"({where(long, ('arch', 'lr'))})"), keeps_spread(short, longest)

    def large_rate_l2():
        return (f"{both.label}: {both.spread_pp:.1f} pp (T_L2 = {both.clock()[1]:.3g} at the selected checkpoints; "
                f"{interpolating(both)}) vs {base.label}: {base.spread_pp:.1f} pp (difference "
                f"{spread_difference(base, both, noise)}) ({where(l2, ('arch', 'epochs'))})"), \
            l2_erases(base, both, noise)

    def more_l2():
        per_row = "; ".join(f"{name}: " + " → ".join(f"{a.spread_pp:.1f}" for a in r) + " pp at λ = "
                            + ", ".join(f"{a.config.weight_decay:g}" for a in r) for name, r in rows.items())
        return f"{per_row} ({where(l2_clock, ('arch',))})", falls_with_l2(rows, noise)

    def l2_itself():
        control, strongest = next(iter(rows.values()))[0], next(iter(rows.values()))[-1]
        return (f"{control.label} → {strongest.label}: {control.spread_pp:.1f} → "
                f"{strongest.spread_pp:.1f} pp (difference {spread_difference(control, strongest, noise)}; "
                f"T_L2 = {strongest.clock()[1]:.3g} at the selected checkpoints) ({where(l2_clock, ('arch',))})"), \
            l2_lowers(control, strongest, noise)

    def batches():
        fit = [a for a in batch_arms if a.interpolates_at_selection]
        rho = rank_correlation([a.config.batch_size for a in fit], [a.spread_pp for a in fit])
        rise = spread_difference(fit[-1], fit[0], noise) if len(fit) >= 2 else None
        left_out = [f"b = {a.config.batch_size}" for a in batch_arms if not a.interpolates_at_selection]
        return (", ".join(f"b = {a.config.batch_size}: {a.spread_pp:.1f} pp" for a in batch_arms)
                + f"; rank correlation {'n/a' if rho is None else f'{rho:+.2f}'} over {len(fit)} arms"
                + ("" if rise is None else f", largest − smallest b: {rise}")
                + (f" ({', '.join(left_out)} left out: selected predictor does not interpolate)" if left_out else "")
                + f" ({where(batch, ('arch', 'epochs', 'lr'))})"), rises_with_batch(rho, rise)

    return [
        _row("training much longer leaves the spread", "26.5 pp at 300 epochs, ≈ 26 pp after 5,000 (secondary)", long,
             len(long_arms) >= 2, longer),
        _row("a larger learning rate with L2 erases the memory",
             "≈ 0.3 pp at η = λ = 1e-2 (secondary; T_L2 = 9.36 if run 300 epochs, derived)", l2,
             bool(base and both), large_rate_l2),
        _row("at a fixed learning rate, more L2 (larger T_L2) leaves a smaller spread",
             "the paper's reading: T_L2 is the clock of explicit L2", l2_clock, bool(rows), more_l2),
        _row("the L2 term itself lowers the spread (against λ = 0 at the same η and length)",
             "fibook's hypothesis: the paper credits a larger learning rate plus explicit L2; no λ = 0 control "
             "is among the figures available here (abstract, secondary summaries)",
             l2_clock, bool(rows), l2_itself),
        _row("larger batches forget more slowly (larger spread)", "qualitative (secondary)", batch,
             len(batch_arms) >= 3, batches),
    ]


def matches_quoted(value: float, quoted: str) -> str:
    """``consistent`` when ``value`` rounded to two significant digits equals the paper's quoted figure (e.g.
    7.3e-4), else ``no``. Not a confirmation: the setting that gives ``value`` was reconstructed from the quoted
    figures themselves, so agreement checks the arithmetic and the reconstruction, nothing the paper measured."""
    return "consistent (η and N were inferred from these figures)" if float(f"{value:.2g}") == float(quoted) \
        else "no"


def scale_invariant(losses: Sequence[float], cosines: Sequence[float]) -> bool:
    """Whether a loss is invariant to scaling one weight: every ``|L(cW) - L(W)|`` (``losses[0]`` at c = 1 or
    any reference c) and every ``|cos(grad L, W)|`` below ``INVARIANCE_TOL`` (float64)."""
    return all(abs(v - losses[0]) < INVARIANCE_TOL for v in losses) and all(abs(c) < INVARIANCE_TOL for c in cosines)


def question_claims(t_sgd: float, t_long: float, losses: Sequence[float], cosines: Sequence[float],
                    logit_error: float, scale: str, width: int) -> list[Claim]:
    """The ``question`` chapter's rows: the paper's two quoted T_SGD values recomputed (:func:`matches_quoted`),
    BatchNorm scale invariance (:func:`scale_invariant`) and sigma_w scaling the initial logits (relative
    deviation below ``LOGIT_FLOOR``, float32)."""
    invariant = scale_invariant(losses, cosines)
    return [
        Claim("T_SGD of the headline run (η = 1e-3, b = 128, 300 epochs of 40,000 images)", "7.3e-4",
              f"{t_sgd:.3g} (arithmetic, drop_last)", matches_quoted(t_sgd, "7.3e-4")),
        Claim("T_SGD after 5,000 epochs", "1.2e-2", f"{t_long:.3g} (arithmetic)", matches_quoted(t_long, "1.2e-2")),
        Claim("BatchNorm makes the loss scale-invariant in each conv weight", "mechanism (fibook's reading)",
              "L(cW) = L(W) to 1e-9, |cos(∇L, W)| < 1e-9 for c = 0.1, 1, 10 (float64, width-4 ResNet-9)"
              if invariant else "L(cW) or cos(∇L, W) moved with c (float64, width-4 ResNet-9)",
              "yes" if invariant else "no"),
        Claim("at initialization σ_w only scales the logits", "mechanism (fibook's reading)",
              f"logits(σ_w) = σ_w · logits(1) to {below(logit_error, LOGIT_FLOOR)} relative with BatchNorm ε "
              f"negligible (float32, {scale} ResNet-9 w{width}, training-mode BatchNorm)",
              "yes" if logit_error < LOGIT_FLOOR else "no"),
    ]


def above_seed_noise(seed_spreads: Sequence[float], seed_std_pp: Sequence[float]) -> bool:
    """Whether the mean over seeds of the spread exceeds ``NOISE_MULTIPLE`` times the largest per-sigma_w
    standard deviation over seeds."""
    return float(np.mean(seed_spreads)) > NOISE_MULTIPLE * max(seed_std_pp)


def sgd_remembers_claims(arm: Arm, noise: Finished, scale: str) -> list[Claim]:
    """The ``sgd_remembers`` chapter's rows: spread at least ``LARGE_SPREAD_PP``, every sigma_w's selected
    predictor interpolating,
    radial memory above ``RADIAL_KEPT``, and the spread against seed noise (:func:`above_seed_noise`, on the
    ``seed_noise`` experiment's one arm once it has finished)."""
    where = setting(arm.config, scale, show=("arch", "epochs", "lr"))
    rows = [
        Claim("low-LR SGD keeps a large test-accuracy spread across σ_w", "26.5 pp (CIFAR-10, ResNet-9, 300 ep)",
              f"{arm.spread_pp:.1f} pp ({where})", "qualitatively" if arm.spread_pp >= LARGE_SPREAD_PP else "no"),
        Claim("every σ_w's selected predictor interpolates", "yes (≥ 99.5 % train acc)",
              f"{sum(arm.selected_interpolated)} of {len(arm.sigmas)} σ_w at the selected checkpoint "
              f"({sum(arm.interpolated)} reach 99.5 % at some epoch)",
              "yes" if arm.interpolates_at_selection else "no: selected before it fits the training set at σ_w = "
              + ", ".join(f"{s:g}" for s, ok in zip(arm.sigmas, arm.selected_interpolated, strict=True) if not ok)),
        Claim("the final weight norm stays tied to σ_w under SGD", "qualitative (secondary)",
              f"radial memory R = {arm.radial_memory:.2f}", "yes" if arm.radial_memory > RADIAL_KEPT else "no"),
    ]
    claim = ("the spread is far larger than seed-to-seed variation (verdict: mean spread > 3 × the largest "
             "per-σ_w seed std)")
    if not noise.arms:
        return rows + [Claim(claim, "seed noise not reported", f"not finished ({noise.progress})", "not tested yet")]
    (seeds,) = noise.arms
    per_seed, seed_std = seed_spreads(seeds), seed_std_pp(seeds)
    return rows + [Claim(claim, "seed noise not reported",
                         f"spread {np.mean(list(per_seed.values())):.1f} pp (mean of {len(per_seed)} seeds) vs "
                         f"per-σ_w seed std ≤ {max(seed_std.values()):.2f} pp (quick grid)",
                         "yes" if above_seed_noise(list(per_seed.values()), list(seed_std.values())) else "no")]


def late_rise_pp(arm: Arm) -> float:
    """How much the train accuracy at the arm's largest sigma_w (seed-mean) rose over the last quarter of
    training, epochs E - max(1, E // 4) .. E, in pp: a run still rising has not shown that it cannot fit."""
    runs = [r for r in arm.records if r.config.sigma_w == arm.sigmas[-1]]
    e = runs[0].config.epochs
    start = e - max(1, e // 4)
    return 100 * float(np.mean([r.history["train_acc"][e] - r.history["train_acc"][start] for r in runs]))


def deep_nets_fail(deep: Sequence[Arm]) -> str:
    """``qualitatively`` when no deeper ResNet interpolates at the largest sigma_w of its grid and none of them is
    still rising there (train accuracy up by at most ``STILL_RISING_PP`` over the last quarter, :func:`late_rise_pp`);
    ``not tested: ... still rising`` when one is (a budget effect, not a failure to fit); ``no`` when one fits."""
    if any(a.interpolated[-1] for a in deep):
        return "no: a deep net interpolates at the largest σ_w here"
    rising = [a for a in deep if late_rise_pp(a) > STILL_RISING_PP]
    if rising:
        return "not tested: train accuracy still rising at the end of training (" + "; ".join(
            f"{a.config.arch} at σ_w = {a.sigmas[-1]:g}: +{late_rise_pp(a):.1f} pp over the last quarter"
            for a in rising) + "), a budget effect"
    return "qualitatively"


def depth_claims(depth: Finished, scale: str) -> list[Claim]:
    """The ``depth`` chapter's row: deeper ResNets failing to interpolate at large sigma_w
    (:func:`deep_nets_fail`), arms listed from the shallowest."""
    arms = sorted(depth.arms, key=lambda a: int(a.config.arch.removeprefix("resnet")))
    deep = [a for a in arms if a.config.arch != "resnet9"]
    claim, paper = "deep ResNets at large σ_w fail to interpolate", "ResNet-56/110 (secondary)"
    if not deep:
        return [Claim(claim, paper, f"not finished ({depth.progress})", "not tested yet")]
    ours = "; ".join(f"{a.config.arch}: interpolates at {sum(a.interpolated)} of {len(a.sigmas)} σ_w"
                     for a in arms)
    return [Claim(claim, paper, f"{ours} ({setting(arms[0].config, scale, show=('epochs', 'lr'))})",
                  deep_nets_fail(deep))]


def falls_with_clock(rho: float | None, drop: Difference | None) -> str:
    """``qualitatively`` at rho <= ``CLOCK_RHO`` with the spread at the smallest clock above the one at the
    largest beyond noise (``drop``, :func:`beyond_noise`); ``weakly`` for any other rho < 0; ``no`` from 0 up;
    ``not tested yet`` without a correlation (fewer than three included arms)."""
    if rho is None or drop is None:
        return "not tested yet"
    if rho <= CLOCK_RHO and drop.value > 0 and beyond_noise(drop):
        return "qualitatively"
    return f"weakly (ρ = {rho:+.2f}{'' if rho <= CLOCK_RHO else ' > −0.5'}, drop {drop})" if rho < 0 else "no"


def collapses(d: Difference) -> str:
    """Two arms at one clock reached by different rates or lengths: ``yes`` when their spreads agree within
    noise (not :func:`beyond_noise`), else ``no``."""
    return "no" if beyond_noise(d) else "yes"


CLOCK_CLAIMS = (
    ("T_SGD", "each mechanism acts on a timescale set by its regularization (abstract); larger batches (smaller "
              "T_SGD) forget more slowly (secondary); 26.5 pp at T_SGD = 7.3e-4, ≈ 26 pp at 1.2e-2 (secondary)"),
    ("T_L2", "≈ 0.3 pp at η = λ = 1e-2 (secondary; T_L2 = 9.36 if run 300 epochs, derived)"),
    ("T_adapt", "the Adam family largely erases the dependence (abstract; T_adapt = "
                f"{reconstructed_clock('adam')[1]:.3g} for its Adam run in the book's reconstruction)"),
)


def trend(points: Sequence[ClockPoint], clock: str, noise: NoiseFloor | None) -> tuple[list[ClockPoint], float | None,
                                                                                       Difference | None]:
    """The included arms on ``clock`` (by clock at the selected checkpoints), the rank correlation of their
    spreads with it, and the spread difference between the arms at its smallest and largest value."""
    pts = sorted((p for p in points if p.clock == clock and p.included), key=lambda p: p.value)
    rho = rank_correlation([p.value for p in pts], [p.spread.mean for p in pts]) if len(pts) >= 3 else None
    drop = spread_difference(pts[0].arm, pts[-1].arm, noise) if len(pts) >= 2 else None
    return pts, rho, drop


def clock_claims(points: Sequence[ClockPoint], noise: NoiseFloor | None, where: str) -> list[Claim]:
    """The ``clocks`` chapter's rows: per clock, the trend of spread with the clock over the included arms
    (:func:`trend`, :func:`falls_with_clock`); per equal-clock pair (:func:`~fibook.forgetting.analysis.
    equal_clock_pairs`), whether their spreads agree (:func:`collapses`, after :func:`condition`)."""
    rows = []
    for clock, paper in CLOCK_CLAIMS:
        pts, rho, drop = trend(points, clock, noise)
        reasons = Counter(p.left_out for p in points if p.clock == clock and not p.included)
        left_out = "; ".join(f"{n} left out: {why}" for why, n in reasons.items()) or "none left out"
        ours = (f"{len(pts)} arms ({left_out}); ρ = "
                + ("n/a" if rho is None else f"{rho:+.2f}")
                + ("" if drop is None else f"; smallest − largest clock: {drop}"))
        rows.append(Claim(f"a larger {clock} leaves a smaller spread", paper, f"{ours} ({where})",
                          falls_with_clock(rho, drop)))
    for p, q in equal_clock_pairs(points):
        d = spread_difference(p.arm, q.arm, noise)
        rows.append(Claim(f"equal {p.clock}, equal spread: {p.arm.label} vs {q.arm.label}",
                          "the paper's organising idea (clocks, not epochs)",
                          f"{p.clock} = {p.run_value:.3g} over each run ({p.value:.3g} and {q.value:.3g} at the "
                          f"selected checkpoints): {p.spread.mean:.1f} vs {q.spread.mean:.1f} pp (difference {d}) "
                          f"({where})", condition(p.arm, q.arm) or collapses(d)))
    return rows
