"""The book's verdicts: every row of a chapter's "claim | paper | ours | agrees?" table, computed here.

A chapter cell that decides a verdict is one call of a function of this module; the rule behind each verdict and
its thresholds are named constants, stated in the docstring and in the chapter text before the figure, and
tested just above and just below each threshold. ``paper`` says what the paper reports (or that it does not),
``ours`` the number measured here with the setting it was measured in.

Part I (forgetting initialization, Das et al. 2026), read on the seed-averaged arms of
:mod:`fibook.forgetting.arms`. Three rules apply to every spread verdict before its threshold:

* ``SELECTION = "late"``: the optimizers, time/LR/L2/batch and clocks chapters read every run at its lowest
  validation loss over the run's second half (the selected predictor must fit the training set, and a
  40-epoch run's best validation loss often comes before it does; a long run's second half also lies after a
  short run's end, so training longer can change what is selected).
* The condition (the book's reading of the paper's headline runs, which all fit the training set): a spread
  verdict needs every sigma_w's selected predictor to interpolate (:func:`condition`); an arm that does not is
  shown and its row says "not tested".
* ``CONFIDENCE = 0.95`` (:mod:`fibook.stats`): a spread is Das et al.'s spread of seed-means; a difference or
  a contrast of spreads (:func:`fibook.forgetting.noise.spread_difference`: bootstrapped over shared seeds and
  paired, else from each arm's own error bar) counts only when its two-sided 95 % Student-t interval, on the
  degrees of freedom that exist, excludes zero (:func:`fibook.stats.differs`). A difference with no error bar
  cannot be judged: its row says "not tested" (:func:`unjudged`). "Equal" and "erased" need the equivalence test
  (:func:`fibook.stats.equivalent`, two one-sided tests at 5 %) against ``EQUIVALENCE_PP``; a verdict neither
  test decides is "not resolved".
* An unstable arm (a run that fit the training set and later fell below 90 % train accuracy, or diverged:
  :class:`fibook.forgetting.checkpoints.Stability`) is marked so in every label, borrows its error bar only from
  unstable arms, and every verdict it enters says so (:func:`noted`).

When each rule was fixed, and which results existed then, is in :data:`FIXED` (the git history is the record):
only the ``clock_ladder`` and ``tsgd_pair`` rules were fixed before their data.

Every :class:`~fibook.claims.Claim` names its ``rule`` (the function below that decided it, marked with the
thresholds it reads), the ``runs`` it read (results-store record ids) and, where its text carries numbers of
the preset, a ``key`` that names it across presets. A row whose runs have not finished says "not tested yet" under
the rule of the row it stands for.

=================================  ==========================================================================
``ERASES_FRACTION = 0.5``          an arm "largely erases" the sigma_w dependence when its spread is below half
                                   of low-learning-rate SGD's beyond noise (``optimizers``); "no" when above it
                                   beyond noise
``COMMON_NORM_R = 0.5``            adaptive methods drive the weights to a common norm when the radial memory R
                                   (slope of log final norm on log sigma_w) of each is below 0.5 beyond noise
``KEEPS_FRACTION = 0.5``           training longer "leaves the spread" when the longest arm keeps more than
                                   half of the shortest arm's spread beyond noise
``EQUIVALENCE_PP = 2.0``           the equivalence margin: two spreads are "equal" when the 90 % interval of
                                   their difference lies within +-2 pp, a spread is "erased" when its one-sided
                                   95 % bound lies below 2 pp (above the book's noise floor of a 3-point
                                   one-seed spread, 1.2 pp)
``RANK_AGREES = 0.5``              spread rising with batch size: Spearman rank correlation above 0.5, and the
                                   largest batch's spread above the smallest's beyond noise
``LARGE_SPREAD_PP = 5.0``          low-learning-rate SGD "keeps a large spread" across sigma_w from 5 pp up
``RADIAL_KEPT = 0.8``              the final weight norm "stays tied to sigma_w" when R exceeds 0.8 beyond noise
``NOISE_MULTIPLE = 3.0``           a spread is "far larger than seed noise" when the seed-mean spread exceeds
                                   3 x the largest per-sigma_w seed standard deviation beyond noise
``CLOCK_RHO = -0.5``               "a larger clock leaves a smaller spread": Spearman rank correlation of spread
                                   with the clock at or below -0.5 across the included arms, and the arm at the
                                   smallest clock above the one at the largest beyond noise (weakly: the drop
                                   alone); at a fixed clock, the spread "rises as the rate falls" at rho <= -0.5
                                   of spread with eta and the smallest rate's spread above the largest's
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

from fibook import stats
from fibook.claims import Claim, Finding, Quoted, Verdict, rule, yes_or_no
from fibook.forgetting.arms import Arm, arm_of, config_part, seed_std_pp, setting
from fibook.forgetting.clocks import effective_lr, heavy_ball_momentum, sgd_with_l2
from fibook.forgetting.collapse import ClockPoint, equal_clock_pairs
from fibook.forgetting.experiments import ADAM_LR, ADAMW_WEIGHT_DECAY, GRIDS, MUON_LR
from fibook.forgetting.loading import Finished
from fibook.forgetting.metrics import forgetting_clocks, rank_correlation
from fibook.forgetting.noise import Difference, NoiseFloor, spread_difference, spread_estimate
from fibook.forgetting.optimizers import get_optimizer
from fibook.forgetting.paper import (
    HEADLINE_SPREAD,
    HEADLINE_T_SGD,
    L2_SPREAD,
    LONG_SPREAD,
    LONG_T_SGD,
    MUON_SPREAD,
)
from fibook.notebook import below
from fibook.stats import CONFIDENCE  # noqa: F401  (a threshold the rules name, recorded in their claims)

SELECTION = "late"
ERASES_FRACTION = 0.5
COMMON_NORM_R = 0.5
KEEPS_FRACTION = 0.5
EQUIVALENCE_PP = 2.0
RANK_AGREES = 0.5
LARGE_SPREAD_PP = 5.0
RADIAL_KEPT = 0.8
NOISE_MULTIPLE = 3.0
CLOCK_RHO = -0.5
STILL_RISING_PP = 1.0
INVARIANCE_TOL = 1e-9
LOGIT_FLOOR = 1e-4

NOT_YET = Finding(Verdict.NOT_TESTED, " yet")  # the verdict of a row whose experiment has not finished


def run_ids(*arm_list: Arm | None) -> tuple[str, ...]:
    """The results-store ids of every run of the given arms (None: no arm), for a claim's ``runs``."""
    return tuple(r.id for a in arm_list if a is not None for r in a.records)


def shown(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, or ``n/a`` where it is undefined: a spread or a radial memory is NaN
    when fewer than two sigma_w have a run that did not diverge."""
    return "n/a" if np.isnan(value) else f"{value:.{digits}f}"


def arm_key(arm: Arm) -> str:
    """``sgd``, ``msgd``, ``adam``, ``adamw``, ``muon``, or ``sgd+L2`` for SGD with weight decay."""
    return arm.config.optimizer + ("+L2" if sgd_with_l2(arm.config) else "")


def interpolating(arm: Arm) -> str:
    """``3 of 5 σ_w interpolate at the selected checkpoint``: sigma_w values whose every seed's selected
    predictor fits the training set."""
    return f"{sum(arm.selected_interpolated)} of {len(arm.sigmas)} σ_w interpolate at the selected checkpoint"


def unmet(*arm_list: Arm) -> list[str]:
    """Why each arm fails the condition of the spread verdicts: its spread is undefined (fewer than two sigma_w have
    a run that did not diverge), or a sigma_w's selected predictor does not interpolate; empty when all pass."""
    return [f"{a.label} has fewer than two σ_w with a run that did not diverge" if np.isnan(a.spread_pp) else
            f"{a.label}'s selected predictor does not interpolate at "
            f"{len(a.sigmas) - sum(a.selected_interpolated)} of {len(a.sigmas)} σ_w"
            for a in arm_list if np.isnan(a.spread_pp) or not a.interpolates_at_selection]


def condition(*arm_list: Arm) -> Finding | None:
    """None when every arm meets the condition of the spread verdicts (:func:`unmet`), else the verdict that
    replaces the comparison: ``not tested: <why>``."""
    reasons = unmet(*arm_list)
    return Finding(Verdict.NOT_TESTED, ": " + "; ".join(reasons)) if reasons else None


# When each rule was fixed and which of its results existed then (the git history is the record). Rules marked
# ``fixed=FIXED[...]`` carry the line; a chapter shows the table (:func:`fixed_rows`).
_MAIN = "sgd_remembers, optimizers, long_training, l2_lr, batch_size, depth (committed 2026-12-02)"
FIXED = {
    "late": f"2026-12-03, after the book results of {_MAIN}, seed_noise and adaptive_clock, with l2_clock's",
    "sgd_remembers": f"2026-12-03, after the book results of {_MAIN} and seed_noise",
    "depth": "2026-12-03, after the depth results",
    "no results": "2026-12-03; it reads no results-store run (the chapter computes what it reads)",
    "2026-12-05": "2026-12-05, after every Part I book result but clock_ladder's and tsgd_pair's",
    "ladder": "2026-12-05, before any clock_ladder or tsgd_pair run",
}


def unjudged(*diffs: stats.Estimate | None) -> Finding | None:
    """None when every difference has an error bar, else the verdict that replaces the comparison: ``not tested:
    no error bar ...`` (a one-seed arm at a preset with no pooled seed std: noise cannot be told from an effect)."""
    if all(d is None or d.has_error_bar for d in diffs):
        return None
    return Finding(Verdict.NOT_TESTED, ": no error bar (one seed and no pooled seed std at this preset), so a "
                   "difference cannot be judged beyond noise")


def noted(verdict: Finding, *arm_list: Arm | None) -> Finding:
    """``verdict`` with the unstable arms it read named after it (every verdict an unstable arm enters says so)."""
    unstable = [a.label.removesuffix(" [unstable]") for a in arm_list if a is not None and a.unstable]
    if not unstable:
        return verdict
    return verdict.with_note(f"; unstable: {', '.join(unstable)} (a run fell out of its fit, see the stability table)")


def contrast_verdict(c: Difference, yes: Finding, no: Finding, what: str) -> Finding:
    """``yes`` when the contrast ``c`` lies below zero beyond noise, ``no`` above it, else ``not resolved: <what>
    is <c>``."""
    if stats.below(c):
        return yes
    if stats.above(c):
        return no
    return Finding(Verdict.NOT_RESOLVED, f": {what} is {c}")


@rule("ERASES_FRACTION", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def erases(arm: Arm, sgd: Arm, noise: NoiseFloor | None) -> Finding:
    """:func:`condition` on both arms and an error bar (:func:`unjudged`); then on the contrast c = spread(arm) -
    ``ERASES_FRACTION`` x spread(SGD) (:func:`~fibook.forgetting.noise.spread_difference`): ``qualitatively``
    when c < 0 beyond noise, ``no`` when c > 0 beyond noise, else ``not resolved``."""
    c = spread_difference(arm, sgd, noise, weight=ERASES_FRACTION)
    unmet = condition(arm, sgd) or unjudged(c)
    if unmet:
        return unmet
    return noted(contrast_verdict(c, Finding(Verdict.QUALITATIVELY), Finding(Verdict.NO),
                                  f"spread − {ERASES_FRACTION:g} × SGD's"), arm, sgd)


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


@rule("COMMON_NORM_R", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def common_norm(adaptive: Sequence[Arm]) -> Finding:
    """On each adaptive arm's radial memory R with its interval (:meth:`Arm.radial_memory_estimate`):
    ``qualitatively`` when every R lies below ``COMMON_NORM_R`` beyond noise, ``no`` when some R lies above it
    beyond noise, else ``not resolved``; ``not tested`` when an arm has no R or no error bar (fewer than three
    sigma_w that did not diverge)."""
    estimates = [a.radial_memory_estimate() for a in adaptive]
    if not all(e.has_error_bar for e in estimates):
        return Finding(Verdict.NOT_TESTED, ": no interval on R (fewer than three σ_w that did not diverge)")
    shifted = [e - COMMON_NORM_R for e in estimates]
    if all(stats.below(e) for e in shifted):
        return Finding(Verdict.QUALITATIVELY)
    if any(stats.above(e) for e in shifted):
        return Finding(Verdict.NO)
    return Finding(Verdict.NOT_RESOLVED, ": R − 0.5 is " + ", ".join(str(e) for e in shifted))


@rule(fixed=FIXED["no results"])
def not_in_paper() -> Finding:
    """The verdict of a control the paper does not run (momentum SGD): ``n/a (not in the paper)``."""
    return Finding(Verdict.NOT_APPLICABLE, " (not in the paper)")


L2_PAPER = (f"≈ {L2_SPREAD} at η = λ = 1e-2 (secondary; T_L2 = {reconstructed_clock('sgd+L2')[1]:.3g} if run 300 "
            "epochs, derived)")

OPTIMIZER_CLAIMS = (  # key, the paper's number, the claim
    ("adam", "qualitative", "Adam largely erases the σ_w dependence"),
    ("adamw", "qualitative", "AdamW largely erases it too"),
    ("muon", f"≈ {MUON_SPREAD} (secondary)", "Muon leaves a small spread"),
    ("sgd+L2", L2_PAPER,
     "SGD + L2 at a large T_L2 forgets"),
)


def seeded_twin(a: Arm, quick: Sequence[Arm]) -> Arm | None:
    """The arm of ``quick`` (arms on the quick sigma_w grid, seeds pooled over experiments) with ``a``'s settings
    and two or more seeds; None when there is none yet."""
    for q in quick:
        if arm_of(q.config) == arm_of(a.config) and len({r.config.seed for r in q.records}) >= 2:
            return q
    return None


def optimizer_claims(arm_list: Sequence[Arm], preset: str, noise: NoiseFloor | None,
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
                f"{interpolating(a)}) vs SGD {spread_estimate(reference, noise)}; {setting(a.config, preset)}")

    claims = []
    for key, paper, claim in OPTIMIZER_CLAIMS:
        a = by_key.get(key)
        if a is None:
            claims.append(Claim(claim, paper, f"not run yet at preset '{preset}'", NOT_YET, rule=erases))
            continue
        q = seeded_twin(a, quick) if quick_sgd is not None else None
        if q is None:
            claims.append(Claim(claim, paper, ours(a), erases(a, sgd, noise), rule=erases, runs=run_ids(a, sgd)))
        else:
            main = f"{shown(spread_estimate(a, noise).value, 1)} pp on the main σ_w grid (1 seed)"
            claims.append(Claim(claim, paper, f"quick σ_w grid: {ours(q, quick_sgd)}; {main}",
                                erases(q, quick_sgd, noise), rule=erases, runs=run_ids(q, quick_sgd, a)))
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
                            "paper's run)", ours(a, quick_sgd), erases(a, quick_sgd, noise), rule=erases,
                            runs=run_ids(a, quick_sgd), key=f"{name} at a longer clock largely erases it"))
    if "msgd" in by_key:
        m = by_key["msgd"]
        raw, grow = m.run_clock("raw")[1], 1 / (1 - heavy_ball_momentum(m.config)) ** 2
        claims.append(Claim("momentum SGD at the same raw η", "no number given",
                            f"{shown(spread_estimate(m, noise).value, 1)} pp vs SGD {shown(sgd_spread.value, 1)} pp; "
                            "T_SGD = "
                            f"{raw:.3g} over the run at the raw η, as SGD's {sgd.run_clock()[1]:.3g}, or "
                            f"{raw * grow:.3g} at its effective step η/(1−μ) = {effective_lr(m.config):g}",
                            not_in_paper(), rule=not_in_paper, runs=run_ids(m, sgd)))

    def radial(arm_list: Sequence[Arm]) -> str:
        return ", ".join(f"{get_optimizer(a.config.optimizer).label} (η = {a.config.lr:g}, "
                         f"{config_part(a.config, 'epochs')}) {radial_text(a)}" for a in arm_list)

    adaptive = [by_key[k] for k in ("adam", "adamw") if k in by_key]
    if adaptive:
        claims.append(Claim("adaptive methods drive the weights to a common norm", "qualitative (secondary)",
                            f"R: {radial(adaptive)}; SGD {shown(sgd.radial_memory, 2)}", common_norm(adaptive),
                            rule=common_norm, runs=run_ids(*adaptive, sgd)))
    adaptive_longer = [a for a in longer if a.config.optimizer in ("adam", "adamw")]
    if adaptive_longer:
        claims.append(Claim("adaptive methods drive the weights to a common norm, at the longer clocks above",
                            "qualitative (secondary)", f"R on the quick σ_w grid: {radial(adaptive_longer)}; SGD "
                            f"{shown(quick_sgd.radial_memory, 2)}", common_norm(adaptive_longer), rule=common_norm,
                            runs=run_ids(*adaptive_longer, quick_sgd)))
    return claims


@rule("KEEPS_FRACTION", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def keeps_spread(short: Arm, long: Arm, noise: NoiseFloor | None) -> Finding:
    """:func:`condition` on both and an error bar; then on c = spread(long) - ``KEEPS_FRACTION`` x spread(short):
    ``qualitatively`` when c > 0 beyond noise (the longer arm keeps more than that fraction), ``no`` when c < 0
    beyond noise, else ``not resolved``."""
    c = spread_difference(long, short, noise, weight=KEEPS_FRACTION)
    unmet = condition(short, long) or unjudged(c)
    if unmet:
        return unmet
    return noted(contrast_verdict(c, Finding(Verdict.NO), Finding(Verdict.QUALITATIVELY),
                                  f"spread − {KEEPS_FRACTION:g} × the shorter arm's"),
                 short, long)


@rule("EQUIVALENCE_PP", "ERASES_FRACTION", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def l2_erases(base: Arm, both: Arm, noise: NoiseFloor | None) -> Finding:
    """:func:`condition` on both and an error bar (:func:`unjudged`); with d = spread(base) - spread(L2 arm) and
    c = spread(L2 arm) - ``ERASES_FRACTION`` x spread(base): ``no: L2 raised the spread`` when d < 0 beyond noise;
    ``yes`` when d > 0 beyond noise and the L2 arm's spread lies below ``EQUIVALENCE_PP`` by the one-sided test
    (:func:`fibook.stats.under`: erased outright); ``qualitatively`` when c < 0 beyond noise; ``no`` when c > 0
    beyond noise; else ``not resolved``."""
    d = spread_difference(base, both, noise)
    c = spread_difference(both, base, noise, weight=ERASES_FRACTION)
    unmet = condition(base, both) or unjudged(d, c)
    if unmet:
        return unmet
    if stats.below(d):
        return noted(Finding(Verdict.NO, ": L2 raised the spread"), base, both)
    if stats.above(d) and stats.under(spread_estimate(both, noise), EQUIVALENCE_PP):
        return noted(Finding(Verdict.YES), base, both)
    partial = Finding(Verdict.QUALITATIVELY, f": below {ERASES_FRACTION:g} of the baseline's, not shown below "
                                             f"{EQUIVALENCE_PP:g} pp")
    return noted(contrast_verdict(c, partial, Finding(Verdict.NO), f"spread − {ERASES_FRACTION:g} × the baseline's"),
                 base, both)


def falls(row: Sequence[Arm], noise: NoiseFloor | None) -> str:
    """Arms in rising L2 strength (or clock): ``falls`` when the first arm's spread exceeds the last one's beyond
    noise and no step along the row raises the spread beyond noise; ``rises`` when the last one's exceeds the
    first one's beyond noise; else ``unresolved``."""
    steps = [spread_difference(x, y, noise) for x, y in itertools.pairwise(row)]
    drop = spread_difference(row[0], row[-1], noise)
    if stats.above(drop) and not any(stats.below(d) for d in steps):
        return "falls"
    return "rises" if stats.below(drop) else "unresolved"


@rule("CONFIDENCE", fixed=FIXED["2026-12-05"])
def falls_with_l2(rows: dict[str, Sequence[Arm]], noise: NoiseFloor | None) -> Finding:
    """Per row (one learning rate and length, arms in rising lambda, lambda = 0 first): :func:`condition` on
    every arm and an error bar on every step (:func:`unjudged`); then by :func:`falls`: ``qualitatively`` when
    the spread falls along every row, ``partly: only ...`` along some, ``no`` when none falls and one rises,
    else ``not resolved``."""
    unmet = condition(*[a for r in rows.values() for a in r]) or unjudged(
        *[spread_difference(x, y, noise) for r in rows.values() for x, y in itertools.pairwise(r)])
    if unmet:
        return unmet
    kinds = {name: falls(r, noise) for name, r in rows.items()}
    falling = [name for name, k in kinds.items() if k == "falls"]
    arms_read = [a for r in rows.values() for a in r]
    if len(falling) == len(rows):
        return noted(Finding(Verdict.QUALITATIVELY), *arms_read)
    if falling:
        return noted(Finding(Verdict.PARTLY, f": only {', '.join(falling)}"), *arms_read)
    if "rises" in kinds.values():
        return noted(Finding(Verdict.NO), *arms_read)
    return noted(Finding(Verdict.NOT_RESOLVED, ": no row's first and last spreads differ beyond noise"), *arms_read)


@rule("CONFIDENCE", fixed=FIXED["2026-12-05"])
def l2_lowers(control: Arm, with_l2: Arm, noise: NoiseFloor | None) -> Finding:
    """fibook's hypothesis that the L2 term itself erases memory, on an arm and its lambda = 0 control at the same
    rate and length: :func:`condition` on both and an error bar (:func:`unjudged`); ``yes`` when the control's
    spread exceeds the L2 arm's beyond noise, ``no: L2 raised the spread`` when the L2 arm's exceeds the
    control's beyond noise, else ``not resolved``."""
    d = spread_difference(control, with_l2, noise)
    unmet = condition(control, with_l2) or unjudged(d)
    if unmet:
        return unmet
    return noted(contrast_verdict(d, Finding(Verdict.NO, ": L2 raised the spread"), Finding(Verdict.YES),
                                  "control − L2 arm"), control, with_l2)


@rule("RANK_AGREES", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def rises_with_batch(rho: float | None, rise: Difference | None) -> Finding:
    """On the spread at the largest batch minus the one at the smallest (``rise``) and the rank correlation of
    spread with batch size: ``qualitatively`` when rise > 0 beyond noise and rho > ``RANK_AGREES``; ``weakly`` when
    rise > 0 beyond noise alone; ``no`` when rise < 0 beyond noise; else ``not resolved``. ``not tested`` without
    a rank correlation (fewer than three batch sizes whose selected predictors interpolate) or without an error
    bar on ``rise`` (:func:`unjudged`)."""
    if rho is None or rise is None:
        return Finding(Verdict.NOT_TESTED, ": no rank correlation (fewer than three batch sizes whose selected "
                       "predictors interpolate)")
    unmet = unjudged(rise)
    if unmet:
        return unmet
    if stats.above(rise):
        return Finding(Verdict.QUALITATIVELY) if rho > RANK_AGREES else \
            Finding(Verdict.WEAKLY, f" (ρ = {rho:+.2f} ≤ {RANK_AGREES:g})")
    return Finding(Verdict.NO) if stats.below(rise) else \
        Finding(Verdict.NOT_RESOLVED, f": largest − smallest b is {rise}")


def _row(claim: str, paper: str, finished: Finished, needed: bool, decide: Callable,
         ours: Callable[[], tuple[str, str, Sequence[Arm]]], needs: str) -> Claim:
    """A claim measured on ``finished``'s arms by rule ``decide`` (``ours()``: the text, the verdict and the arms
    it read) when the arms it ``needs`` are there (``needed``); else, under the same rule, ``not tested yet`` while
    the experiment runs, or ``not tested: ...`` when it has finished on a grid without them."""
    if not needed:
        if finished.finished_runs < finished.total_runs:
            return Claim(claim, paper, f"not finished ({finished.progress})", NOT_YET, rule=decide)
        return Claim(claim, paper, f"{finished.line}",
                     Finding(Verdict.NOT_TESTED, f": the grid of this preset lacks {needs}"),
                     rule=decide, runs=run_ids(*finished.arms))
    text, verdict, used = ours()
    return Claim(claim, paper, text, verdict, rule=decide, runs=run_ids(*used))


def l2_rows(l2_clock: Finished) -> dict[str, list[Arm]]:
    """The ``l2_clock`` arms as rows of one rate and length (``η = 0.01, 40 epochs``), lambda rising, kept only
    when the row holds its lambda = 0 control and at least one lambda > 0 arm."""
    rows: dict[tuple, list[Arm]] = {}
    for a in l2_clock.arms:
        rows.setdefault((a.config.lr, a.config.epochs), []).append(a)
    return {f"η = {lr:g}, {e} epochs": sorted(r, key=lambda a: a.config.weight_decay)
            for (lr, e), r in sorted(rows.items()) if len(r) >= 2 and r and min(a.config.weight_decay for a in r) == 0}


def time_l2_batch_claims(long: Finished, l2: Finished, l2_clock: Finished, batch: Finished, lrs: Sequence[float],
                         wds: Sequence[float], preset: str, noise: NoiseFloor | None) -> list[Claim]:
    """The ``time_lr_l2_batch`` chapter's rows: longer training (:func:`keeps_spread`, shortest against longest
    arm), L2 at a large rate (:func:`l2_erases`, on the ``l2_lr`` grid ``lrs`` x ``wds``), more L2 at a fixed
    rate (:func:`falls_with_l2`) and L2 against its lambda = 0 control (:func:`l2_lowers`) on ``l2_clock``,
    batch size (:func:`rises_with_batch`, over the arms whose selected predictors interpolate)."""
    def where(f: Finished, show):
        return setting(f.arms[0].config, preset, show=show)

    long_arms = sorted(long.arms, key=lambda a: a.config.epochs)
    batch_arms = sorted(batch.arms, key=lambda a: a.config.batch_size)
    cells = {(a.config.lr, a.config.weight_decay): a for a in l2.arms}
    base, both = cells.get((min(lrs), 0.0)), cells.get((max(lrs), max(wds)))
    rows = l2_rows(l2_clock)

    def longer():
        short, longest = long_arms[0], long_arms[-1]
        return (f"{short.config.epochs} → {longest.config.epochs} epochs: selected {shown(short.spread_pp, 1)} → "
                f"{shown(longest.spread_pp, 1)} pp (longest − {KEEPS_FRACTION:g} × shortest: "
                f"{spread_difference(longest, short, noise, weight=KEEPS_FRACTION)}), last "
                f"epoch {shown(short.final_spread_pp, 1)} → {shown(longest.final_spread_pp, 1)} pp, R "
                f"{shown(short.radial_memory, 2)} → "
                f"{shown(longest.radial_memory, 2)}, selected epochs {short.epoch_range()} and {longest.epoch_range()} "
                f"({where(long, ('arch', 'lr'))})"), keeps_spread(short, longest, noise), long_arms

    def large_rate_l2():
        return (f"{both.label}: {shown(both.spread_pp, 1)} pp (T_L2 = {both.clock()[1]:.3g} at the selected "
                "checkpoints; "
                f"{interpolating(both)}) vs {base.label}: {shown(base.spread_pp, 1)} pp (difference "
                f"{spread_difference(base, both, noise)}) ({where(l2, ('arch', 'epochs'))})"), \
            l2_erases(base, both, noise), (base, both)

    def more_l2():
        per_row = "; ".join(f"{name}: " + " → ".join(f"{shown(a.spread_pp, 1)}" for a in r) + " pp at λ = "
                            + ", ".join(f"{a.config.weight_decay:g}" for a in r) for name, r in rows.items())
        return f"{per_row} ({where(l2_clock, ('arch',))})", falls_with_l2(rows, noise), \
            [a for r in rows.values() for a in r]

    def l2_itself():
        control, strongest = next(iter(rows.values()))[0], next(iter(rows.values()))[-1]
        return (f"{control.label} → {strongest.label}: {shown(control.spread_pp, 1)} → "
                f"{shown(strongest.spread_pp, 1)} pp (difference {spread_difference(control, strongest, noise)}; "
                f"T_L2 = {strongest.clock()[1]:.3g} at the selected checkpoints) ({where(l2_clock, ('arch',))})"), \
            l2_lowers(control, strongest, noise), (control, strongest)

    def batches():
        fit = [a for a in batch_arms if condition(a) is None]
        rho = rank_correlation([a.config.batch_size for a in fit], [a.spread_pp for a in fit])
        rise = spread_difference(fit[-1], fit[0], noise) if len(fit) >= 2 else None
        left_out = [f"b = {a.config.batch_size}" for a in batch_arms if condition(a) is not None]
        return (", ".join(f"b = {a.config.batch_size}: {shown(a.spread_pp, 1)} pp" for a in batch_arms)
                + f"; rank correlation {'n/a' if rho is None else f'{rho:+.2f}'} over {len(fit)} arms"
                + ("" if rise is None else f", largest − smallest b: {rise}")
                + (f" ({', '.join(left_out)} left out: {'; '.join(unmet(*batch_arms))})" if left_out else "")
                + f" ({where(batch, ('arch', 'epochs', 'lr'))})"), rises_with_batch(rho, rise), batch_arms

    return [
        _row("training much longer leaves the spread",
             f"{HEADLINE_SPREAD} at 300 epochs, ≈ {LONG_SPREAD} after 5,000 (secondary)", long,
             len(long_arms) >= 2, keeps_spread, longer, "two lengths"),
        _row("a larger learning rate with L2 erases the memory",
             L2_PAPER, l2,
             bool(base and both), l2_erases, large_rate_l2, "the smallest rate without L2 and the largest with it"),
        _row("at a fixed learning rate, more L2 (larger T_L2) leaves a smaller spread",
             "the paper's reading: T_L2 is the clock of explicit L2", l2_clock, bool(rows), falls_with_l2, more_l2,
             "a row of one rate and length with λ = 0 and λ > 0"),
        _row("the L2 term itself lowers the spread (against λ = 0 at the same η and length)",
             "fibook's hypothesis: the paper credits a larger learning rate plus explicit L2; no λ = 0 control "
             "is among the figures available here (abstract, secondary summaries)",
             l2_clock, bool(rows), l2_lowers, l2_itself, "a row of one rate and length with λ = 0 and λ > 0"),
        _row("larger batches forget more slowly (larger spread)", "qualitative (secondary)", batch,
             len(batch_arms) >= 3, rises_with_batch, batches, "three batch sizes (a trend needs three)"),
    ]


@rule(fixed=FIXED["no results"])
def matches_quoted(value: float, quoted: Quoted) -> Finding:
    """``consistent`` when ``value`` rounded to two significant digits equals the paper's quoted figure
    (:class:`~fibook.forgetting.paper.Quoted`, e.g. 7.3e-4), else ``no``. Not a confirmation: the setting that gives
    ``value`` was reconstructed from the quoted figures themselves, so agreement checks the arithmetic and the
    reconstruction, nothing the paper measured."""
    return Finding(Verdict.CONSISTENT, " (η and N were inferred from these figures)") \
        if float(f"{value:.2g}") == quoted.value \
        else Finding(Verdict.NO)


@rule("INVARIANCE_TOL", fixed=FIXED["no results"])
def scale_invariant(losses: Sequence[float], cosines: Sequence[float]) -> Finding:
    """``yes`` when a loss is invariant to scaling one weight: every ``|L(cW) - L(W)|`` (``losses[0]`` at c = 1 or
    any reference c) and every ``|cos(grad L, W)|`` below ``INVARIANCE_TOL`` (float64); else ``no``."""
    invariant = all(abs(v - losses[0]) < INVARIANCE_TOL for v in losses) and \
        all(abs(c) < INVARIANCE_TOL for c in cosines)
    return yes_or_no(invariant)


@rule("LOGIT_FLOOR", fixed=FIXED["no results"])
def scales_logits(logit_error: float) -> Finding:
    """``yes`` when sigma_w only scales the initial logits: relative deviation from sigma_w logits(1) below
    ``LOGIT_FLOOR`` (float32); else ``no``."""
    return yes_or_no(logit_error < LOGIT_FLOOR)


def question_claims(t_sgd: float, t_long: float, losses: Sequence[float], cosines: Sequence[float],
                    logit_error: float, preset: str, width: int) -> list[Claim]:
    """The ``question`` chapter's rows: the paper's two quoted T_SGD values recomputed (:func:`matches_quoted`),
    BatchNorm scale invariance (:func:`scale_invariant`) and sigma_w scaling the initial logits (relative
    deviation below ``LOGIT_FLOOR``, float32)."""
    invariant = scale_invariant(losses, cosines)
    return [
        Claim("T_SGD of the headline run (η = 1e-3, b = 128, 300 epochs of 40,000 images)", str(HEADLINE_T_SGD),
              f"{t_sgd:.3g} (arithmetic, drop_last)", matches_quoted(t_sgd, HEADLINE_T_SGD), rule=matches_quoted),
        Claim("T_SGD after 5,000 epochs", str(LONG_T_SGD), f"{t_long:.3g} (arithmetic)",
              matches_quoted(t_long, LONG_T_SGD),
              rule=matches_quoted),
        Claim("BatchNorm makes the loss scale-invariant in each conv weight", "mechanism (fibook's reading)",
              "L(cW) = L(W) to 1e-9, |cos(∇L, W)| < 1e-9 for c = 0.1, 1, 10 (float64, width-4 ResNet-9)"
              if invariant.verdict is Verdict.YES else "L(cW) or cos(∇L, W) moved with c (float64, width-4 ResNet-9)",
              invariant, rule=scale_invariant),
        Claim("at initialization σ_w only scales the logits", "mechanism (fibook's reading)",
              f"logits(σ_w) = σ_w · logits(1) to {below(logit_error, LOGIT_FLOOR)} relative with BatchNorm ε "
              f"negligible (float32, {preset} ResNet-9 w{width}, training-mode BatchNorm)",
              scales_logits(logit_error), rule=scales_logits),
    ]


def radial_text(arm: Arm) -> str:
    """``0.98, 95 % [0.95, 1.01]``: R with its interval (``n/a`` without R)."""
    e = arm.radial_memory_estimate()
    if np.isnan(e.value):
        return "n/a"
    if not e.has_error_bar:
        return f"{e.value:.2f} (no interval)"
    lo, hi = e.interval()
    return f"{e.value:.2f}, 95 % [{lo:.2f}, {hi:.2f}]"


@rule("LARGE_SPREAD_PP", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def large_spread(arm: Arm, noise: NoiseFloor | None) -> Finding:
    """:func:`condition` and an error bar; then ``qualitatively`` when the spread (:func:`~fibook.forgetting.
    noise.spread_estimate`) exceeds ``LARGE_SPREAD_PP`` beyond noise (at most qualitatively: the paper's
    26.5 pp is CIFAR-10 over 300 epochs), ``no`` when it lies below it beyond noise, else ``not resolved``."""
    e = spread_estimate(arm, noise) - LARGE_SPREAD_PP
    unmet = condition(arm) or unjudged(e)
    if unmet:
        return unmet
    return noted(contrast_verdict(e, Finding(Verdict.NO), Finding(Verdict.QUALITATIVELY),
                                  f"spread − {LARGE_SPREAD_PP:g} pp"), arm)


@rule(fixed=FIXED["sgd_remembers"])
def every_sigma_interpolates(arm: Arm) -> Finding:
    """``yes`` when every sigma_w's selected predictor (every seed's) fits the training set, else ``no: selected
    before it fits the training set at sigma_w = ...``."""
    if arm.interpolates_at_selection:
        return Finding(Verdict.YES)
    return Finding(Verdict.NO, ": selected before it fits the training set at σ_w = " + ", ".join(
        f"{s:g}" for s, ok in zip(arm.sigmas, arm.selected_interpolated, strict=True) if not ok))


@rule("RADIAL_KEPT", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def radial_kept(arm: Arm) -> Finding:
    """On the radial memory R with its interval (:meth:`Arm.radial_memory_estimate`): ``yes`` when R exceeds
    ``RADIAL_KEPT`` beyond noise, ``no`` when it lies below it beyond noise, else ``not resolved``; ``not tested``
    without an interval (fewer than three sigma_w that did not diverge)."""
    e = arm.radial_memory_estimate() - RADIAL_KEPT
    if not e.has_error_bar:
        return Finding(Verdict.NOT_TESTED, ": no interval on R (fewer than three σ_w that did not diverge)")
    return contrast_verdict(e, Finding(Verdict.NO), Finding(Verdict.YES), f"R − {RADIAL_KEPT:g}")


@rule("NOISE_MULTIPLE", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def above_seed_noise(seeds: Arm) -> Finding:
    """On an arm run over several seeds: :func:`condition`; ``not tested`` with fewer than two complete seeds;
    then on the spread of seed-means (bootstrapped over seeds) minus ``NOISE_MULTIPLE`` times the largest
    per-sigma_w standard deviation over seeds: ``yes`` when above zero beyond noise, ``no`` below, else ``not
    resolved``."""
    e, seed_std = spread_estimate(seeds, None), list(seed_std_pp(seeds).values())
    unmet = condition(seeds)
    if unmet:
        return unmet
    if e.borrowed or any(np.isnan(seed_std)):
        return Finding(Verdict.NOT_TESTED, ": fewer than two seeds at some σ_w, so no seed-to-seed variation to "
                       "compare with")
    return noted(contrast_verdict(e - NOISE_MULTIPLE * max(seed_std), Finding(Verdict.NO), Finding(Verdict.YES),
                                  f"spread − {NOISE_MULTIPLE:g} × the largest seed std"), seeds)


HEADLINE = "low-LR SGD keeps a large test-accuracy spread across σ_w"
SEED_NOISE = ("the spread is far larger than seed-to-seed variation (verdict: mean spread > 3 × the largest "
              "per-σ_w seed std)")
LATE_READING = ", read over the second half of training (the selection the rest of Part I uses)"
WHOLE_RUN = "the paper's reading (best validation loss over the whole run); the book reads the second half"


def sgd_remembers_claims(arm: Arm, noise: Finished, late_arm: Arm, late_noise: Finished,
                         preset: str, floor: NoiseFloor | None) -> list[Claim]:
    """The ``sgd_remembers`` chapter's rows, each run read over the second half of training (``late_arm``,
    ``late_noise``, selection ``late``: the book's one reading) and at the paper's validation-selected checkpoint
    over the whole run (``arm``, ``noise``): the spread (:func:`large_spread`, a one-seed spread with the error
    bar of ``floor``), every sigma_w's selected predictor interpolating (:func:`every_sigma_interpolates`),
    radial memory (:func:`radial_kept`), and the spread against seed noise (:func:`above_seed_noise`, on the
    ``seed_noise`` experiment's one arm once it has finished). Every spread row needs every sigma_w's selected
    predictor to interpolate (:func:`condition`)."""
    where = setting(arm.config, preset, show=("arch", "epochs", "lr"))
    paper = f"{HEADLINE_SPREAD} (CIFAR-10, ResNet-9, 300 ep)"

    def headline(a: Arm, late: bool) -> Claim:
        return Claim(HEADLINE + (LATE_READING if late else ""), paper if late else f"{paper}; {WHOLE_RUN}",
                     f"{spread_estimate(a, floor)} ({where}; {interpolating(a)})", large_spread(a, floor),
                     rule=large_spread, runs=run_ids(a))

    def seed_row(f: Finished, late: bool) -> Claim:
        claim = SEED_NOISE + (LATE_READING if late else "")
        paper = "seed noise not reported" + ("" if late else f"; {WHOLE_RUN}")
        if not f.arms:
            return Claim(claim, paper, f"not finished ({f.progress})", NOT_YET, rule=above_seed_noise)
        (seeds,) = f.arms
        seed_std = [v for v in seed_std_pp(seeds).values() if not np.isnan(v)]
        std = f"per-σ_w seed std ≤ {max(seed_std):.2f} pp" if seed_std else "no seed std (one seed)"
        return Claim(claim, paper, f"spread {spread_estimate(seeds, None)} vs {std} (quick grid; "
                     f"{interpolating(seeds)})", above_seed_noise(seeds), rule=above_seed_noise, runs=run_ids(seeds))

    return [
        headline(late_arm, True),
        headline(arm, False),
        Claim("every σ_w's selected predictor interpolates", "yes (≥ 99.5 % train acc)",
              f"{sum(late_arm.selected_interpolated)} of {len(late_arm.sigmas)} σ_w at the checkpoint selected over "
              f"the second half ({sum(arm.selected_interpolated)} at the paper's whole-run selection; "
              f"{sum(arm.interpolated)} reach 99.5 % at some epoch)", every_sigma_interpolates(late_arm),
              rule=every_sigma_interpolates, runs=run_ids(late_arm)),
        Claim("the final weight norm stays tied to σ_w under SGD", "qualitative (secondary)",
              f"radial memory R = {radial_text(arm)}", radial_kept(arm), rule=radial_kept, runs=run_ids(arm)),
        seed_row(late_noise, True),
        seed_row(noise, False),
    ]


def late_rise_pp(arm: Arm) -> float:
    """How much the train accuracy at the arm's largest sigma_w (seed-mean) rose over the last quarter of
    training, epochs E - max(1, E // 4) .. E, in pp: a run still rising has not shown that it cannot fit (a run
    that diverged is read up to its last recorded epoch)."""
    def rise(train_acc: list[float]) -> float:
        e = len(train_acc) - 1  # the last epoch recorded: E, or the epoch a diverged run stopped at
        return train_acc[e] - train_acc[e - max(1, e // 4)]

    runs = [r for r in arm.records if r.config.sigma_w == arm.sigmas[-1]]
    return 100 * float(np.mean([rise(r.history["train_acc"]) for r in runs]))


@rule("STILL_RISING_PP", fixed=FIXED["depth"])
def deep_nets_fail(deep: Sequence[Arm]) -> Finding:
    """``qualitatively`` when no deeper ResNet interpolates at the largest sigma_w of its grid and none of them is
    still rising there (train accuracy up by at most ``STILL_RISING_PP`` over the last quarter, :func:`late_rise_pp`);
    ``not tested: ... still rising`` when one is (a budget effect, not a failure to fit); ``no`` when one fits."""
    if any(a.interpolated[-1] for a in deep):
        return Finding(Verdict.NO, ": a deep net interpolates at the largest σ_w here")
    rising = [a for a in deep if late_rise_pp(a) > STILL_RISING_PP]
    if rising:
        return Finding(Verdict.NOT_TESTED, ": train accuracy still rising at the end of training (" + "; ".join(
            f"{a.config.arch} at σ_w = {a.sigmas[-1]:g}: +{late_rise_pp(a):.1f} pp over the last quarter"
            for a in rising) + "), a budget effect")
    return Finding(Verdict.QUALITATIVELY)


def depth_claims(depth: Finished, preset: str) -> list[Claim]:
    """The ``depth`` chapter's row: deeper ResNets failing to interpolate at large sigma_w
    (:func:`deep_nets_fail`), arms listed from the shallowest."""
    arms = sorted(depth.arms, key=lambda a: int(a.config.arch.removeprefix("resnet")))
    deep = [a for a in arms if a.config.arch != "resnet9"]
    claim, paper = "deep ResNets at large σ_w fail to interpolate", "ResNet-56/110 (secondary)"
    if not deep:
        return [Claim(claim, paper, f"not finished ({depth.progress})", NOT_YET, rule=deep_nets_fail)]
    ours = "; ".join(f"{a.config.arch}: reaches 99.5 % train accuracy at some epoch at {sum(a.interpolated)} of "
                     f"{len(a.sigmas)} σ_w (at the selected checkpoint: {sum(a.selected_interpolated)})"
                     for a in arms)
    return [Claim(claim, paper, f"{ours} ({setting(arms[0].config, preset, show=('epochs', 'lr'))})",
                  deep_nets_fail(deep), rule=deep_nets_fail, runs=run_ids(*arms))]


@rule("CLOCK_RHO", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def falls_with_clock(rho: float | None, drop: Difference | None) -> Finding:
    """On the spread at the smallest clock minus the one at the largest (``drop``) and the rank correlation rho
    of spread with the clock: ``qualitatively`` when drop > 0 beyond noise and rho <= ``CLOCK_RHO``; ``weakly``
    when drop > 0 beyond noise alone; ``no`` when drop < 0 beyond noise (the larger clock keeps the larger
    spread); else ``not resolved``. ``not tested`` without a correlation (fewer than three included arms) or
    without an error bar on ``drop`` (:func:`unjudged`)."""
    if rho is None or drop is None:
        return Finding(Verdict.NOT_TESTED, ": no rank correlation (fewer than three arms count on this clock)")
    unmet = unjudged(drop)
    if unmet:
        return unmet
    if stats.above(drop):
        return Finding(Verdict.QUALITATIVELY) if rho <= CLOCK_RHO else \
            Finding(Verdict.WEAKLY, f" (ρ = {rho:+.2f} > {CLOCK_RHO:g})")
    return Finding(Verdict.NO) if stats.below(drop) else \
        Finding(Verdict.NOT_RESOLVED, f": smallest − largest clock is {drop} (ρ = {rho:+.2f})")


@rule("EQUIVALENCE_PP", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def collapses(a: Arm, b: Arm, noise: NoiseFloor | None) -> Finding:
    """Two arms at one clock reached by different rates or lengths: :func:`condition` on both and an error bar
    (:func:`unjudged`); ``yes`` when the two one-sided tests show their difference within +-``EQUIVALENCE_PP``
    (:func:`fibook.stats.equivalent`), ``no: the spreads differ ...`` when it differs from zero beyond noise, else
    ``not resolved``."""
    d = spread_difference(a, b, noise)
    unmet = condition(a, b) or unjudged(d)
    if unmet:
        return unmet
    if stats.equivalent(d, EQUIVALENCE_PP):
        return noted(Finding(Verdict.YES, f": equal within ±{EQUIVALENCE_PP:g} pp"), a, b)
    if stats.differs(d):
        return noted(Finding(Verdict.NO, f": the spreads differ, {d}, at this preset (the paper's own setting is not "
                                         "run here)"), a, b)
    return noted(Finding(Verdict.NOT_RESOLVED, f": {d} is neither shown within ±{EQUIVALENCE_PP:g} pp nor away "
                                                 "from 0"), a, b)


@rule("EQUIVALENCE_PP", "CLOCK_RHO", "CONFIDENCE", fixed=FIXED["ladder"])
def clock_or_rate(rungs: Sequence[Arm], noise: NoiseFloor | None) -> Finding:
    """Arms at one clock reached by rates a decade apart (``clock_ladder``), largest rate first: :func:`condition`
    on every rung and an error bar on each rung's difference from the first. ``yes: the clock`` when every rung's
    spread equals the first's within +-``EQUIVALENCE_PP`` (:func:`fibook.stats.equivalent`); ``no: the rate`` when
    the smallest rate's spread exceeds the largest's beyond noise and the rank correlation of spread with the rate
    is at most ``CLOCK_RHO`` (the spread rises as the rate falls); else ``not resolved``."""
    if len(rungs) < 2:
        return Finding(Verdict.NOT_TESTED, ": a ladder needs two rungs or more")
    diffs = [spread_difference(r, rungs[0], noise) for r in rungs[1:]]
    unmet = condition(*rungs) or unjudged(*diffs)
    if unmet:
        return unmet
    if all(stats.equivalent(d, EQUIVALENCE_PP) for d in diffs):
        return noted(Finding(Verdict.YES, f": the clock (every rung within ±{EQUIVALENCE_PP:g} pp of the largest "
                                          "rate's)"), *rungs)
    rho = rank_correlation([r.config.lr for r in rungs], [spread_estimate(r, noise).value for r in rungs])
    if stats.above(diffs[-1]) and rho is not None and rho <= CLOCK_RHO:
        return noted(Finding(Verdict.NO, f": the rate (the spread rises as η falls, ρ = {rho:+.2f})"), *rungs)
    return noted(Finding(Verdict.NOT_RESOLVED, f": smallest − largest rate is {diffs[-1]}"), *rungs)


CLOCK_CLAIMS = (
    ("T_SGD", "each mechanism acts on a timescale set by its regularization (abstract); larger batches (smaller "
              f"T_SGD) forget more slowly (secondary); {HEADLINE_SPREAD} at T_SGD = {HEADLINE_T_SGD}, "
              f"≈ {LONG_SPREAD} at {LONG_T_SGD} (secondary)"),
    ("T_L2", L2_PAPER),
    ("T_adapt", "the Adam family largely erases the dependence (abstract; T_adapt = "
                f"{reconstructed_clock('adam')[1]:.3g} for its Adam run in the book's reconstruction)"),
)


def trend(points: Sequence[ClockPoint], clock: str, noise: NoiseFloor | None) -> tuple[list[ClockPoint], float | None,
                                                                                       Difference | None]:
    """The included arms on ``clock`` (by clock at the selected checkpoints), the rank correlation of their
    spreads with it, and the spread difference between the arms at its smallest and largest value."""
    pts = sorted((p for p in points if p.clock == clock and p.included), key=lambda p: p.value)
    rho = rank_correlation([p.value for p in pts], [p.spread.value for p in pts]) if len(pts) >= 3 else None
    drop = spread_difference(pts[0].arm, pts[-1].arm, noise) if len(pts) >= 2 else None
    return pts, rho, drop


def pair_change(a: Arm, b: Arm) -> str:
    """How two arms of an equal-clock pair differ, the same at every preset: from the arm with the larger rate (then
    L2, batch, epochs) to the other, the factor of each setting that changes, e.g. ``lr ×0.5, epochs ×2``."""
    first, second = sorted((a.config, b.config), key=lambda c: (-c.lr, -c.weight_decay, -c.batch_size, -c.epochs))
    return ", ".join(f"{name} ×{getattr(second, name) / getattr(first, name):.3g}"
                     for name in ("lr", "weight_decay", "batch_size", "epochs")
                     if getattr(first, name) != getattr(second, name) and getattr(first, name)) or "same settings"


FIXED_CLOCK = ("clock_ladder", "tsgd_pair")  # experiments whose arms are judged by rows of their own


def trend_claim(points: Sequence[ClockPoint], clock: str, paper: str, noise: NoiseFloor | None, where: str,
                claim: str) -> Claim:
    """The trend row of one clock (:func:`trend`, :func:`falls_with_clock`)."""
    pts, rho, drop = trend(points, clock, noise)
    reasons = Counter(p.left_out for p in points if p.clock == clock and not p.included)
    left_out = "; ".join(f"{n} left out: {why}" for why, n in reasons.items()) or "none left out"
    ours = (f"{len(pts)} arms ({left_out}); ρ = " + ("n/a" if rho is None else f"{rho:+.2f}")
            + ("" if drop is None else f"; smallest − largest clock: {drop}"))
    verdict = noted(falls_with_clock(rho, drop), *[p.arm for p in pts])
    return Claim(claim, paper, f"{ours} ({where})", verdict, rule=falls_with_clock,
                 runs=run_ids(*[p.arm for p in points if p.clock == clock]))  # left out ones too


def clock_claims(points: Sequence[ClockPoint], noise: NoiseFloor | None, where: str,
                 raw_points: Sequence[ClockPoint] = ()) -> list[Claim]:
    """The ``clocks`` chapter's rows: per clock, the trend of spread with the clock over the included arms
    (:func:`trend_claim`), and for T_SGD again with momentum SGD at its raw eta (``raw_points``, the reading
    before 2026-12-05); per equal-clock pair (:func:`~fibook.forgetting.collapse.equal_clock_pairs`) outside the
    experiments of :data:`FIXED_CLOCK`, whether their spreads agree (:func:`collapses`, after
    :func:`condition`)."""
    rows = []
    for clock, paper in CLOCK_CLAIMS:
        rows.append(trend_claim(points, clock, paper, noise, where, f"a larger {clock} leaves a smaller spread"))
        if clock == "T_SGD" and raw_points:
            rows.append(trend_claim(raw_points, clock, paper, noise, where,
                                    "a larger T_SGD leaves a smaller spread, momentum SGD read at its raw η "
                                    "and left out (the reading before 2026-12-05)"))
    for p, q in equal_clock_pairs([p for p in points if p.experiment not in FIXED_CLOCK]):
        d = spread_difference(p.arm, q.arm, noise)
        rows.append(Claim(f"equal {p.clock}, equal spread: {p.arm.label} vs {q.arm.label}",
                          "the paper's organising idea (clocks, not epochs)",
                          f"{p.clock} = {p.run_value:.3g} over each run ({p.value:.3g} and {q.value:.3g} at the "
                          f"selected checkpoints): {shown(p.spread.value, 1)} vs {shown(q.spread.value, 1)} pp "
                          f"(difference {d}) ({where})", collapses(p.arm, q.arm, noise), rule=collapses,
                          runs=run_ids(p.arm, q.arm),
                          key=f"equal {p.clock}, equal spread: {p.mechanism}, {pair_change(p.arm, q.arm)}"))
    return rows


def ladder_claims(ladder: Finished, pair: Finished, noise: NoiseFloor | None, where: str) -> list[Claim]:
    """The rows of the two experiments built to tell a clock from a rate: ``clock_ladder`` (Adam at one T_adapt
    by rates a decade apart, :func:`clock_or_rate`) and ``tsgd_pair`` (SGD at equal T_SGD with sum eta twice as
    large in one arm, :func:`collapses`). A row waits ("not tested yet") until every arm of its experiment has
    finished on every seed."""
    rows = []
    claim = "at a fixed T_adapt the spread does not depend on η (the clock, not the rate, forgets)"
    paper = "the paper's organising idea (clocks, not epochs); the paper runs no fixed-clock ladder"
    if len(ladder.arms) < ladder.total_arms:
        rows.append(Claim(claim, paper, f"not finished ({ladder.progress})", NOT_YET, rule=clock_or_rate,
                          runs=run_ids(*ladder.arms)))
    else:
        rungs = sorted(ladder.arms, key=lambda a: -a.config.lr)
        text = "; ".join(f"η = {a.config.lr:g} × {a.config.epochs}: {spread_estimate(a, noise)}" for a in rungs)
        rows.append(Claim(claim, paper, f"T_adapt = {rungs[0].run_clock()[1]:.3g} over each run; {text} ({where})",
                          clock_or_rate(rungs, noise), rule=clock_or_rate, runs=run_ids(*rungs)))
    claim = "equal T_SGD, equal spread, with Σ η twice as large in one arm (T_SGD, not Σ η, is SGD's clock)"
    paper = "T_SGD = Σ η²/b is the clock of SGD's implicit regularization (abstract, secondary)"
    if len(pair.arms) < pair.total_arms:
        rows.append(Claim(claim, paper, f"not finished ({pair.progress})", NOT_YET, rule=collapses,
                          runs=run_ids(*pair.arms)))
    else:
        a, b = sorted(pair.arms, key=lambda x: x.config.batch_size)
        sums = [x.records[0].summary.clocks["T_adapt"] for x in (a, b)]
        rows.append(Claim(claim, paper, f"{a.label}: {spread_estimate(a, noise)} vs {b.label}: "
                          f"{spread_estimate(b, noise)}; T_SGD = {a.run_clock()[1]:.3g} over each run, Σ η "
                          f"{sums[0]:.3g} vs {sums[1]:.3g} (difference {spread_difference(a, b, noise)}) ({where})",
                          collapses(a, b, noise), rule=collapses, runs=run_ids(a, b)))
    return rows


def fixed_rows() -> list[dict]:
    """When each Part I rule was fixed and which results existed then (:data:`FIXED`): the reading rules
    (checkpoint, condition) and every function of this module marked as a rule."""
    rules = sorted({fn.__name__: fn for fn in globals().values() if callable(fn) and hasattr(fn, "fixed")}.items())
    return [{"rule": "SELECTION = 'late' and the interpolation condition", "fixed": FIXED["late"]},
            {"rule": "momentum SGD counted on T_SGD at its effective step", "fixed": FIXED["2026-12-05"]},
            *({"rule": name, "fixed": fn.fixed} for name, fn in rules)]
