"""The verdicts of the "Optimizers" chapter (``optimizers``): does each optimizer erase the sigma_w dependence that
low-learning-rate SGD keeps, and do adaptive methods drive the weights to a common norm?

=================================  ==========================================================================
``ERASES_FRACTION = 0.5``          an arm "largely erases" the sigma_w dependence when its spread is below half
                                   of low-learning-rate SGD's beyond noise; "no" when above it beyond noise
                                   (:mod:`~fibook.forgetting.claims.conditions`)
``COMMON_NORM_R = 0.5``            adaptive methods drive the weights to a common norm when the radial memory R
                                   (slope of log final norm on log sigma_w) of each is below 0.5 beyond noise
=================================  ==========================================================================
"""

from __future__ import annotations

from collections.abc import Sequence

from fibook import stats
from fibook.claims import Claim, Finding, Verdict, rule
from fibook.forgetting.arms import Arm, arm_of, config_part, setting
from fibook.forgetting.claims.conditions import CONFIDENCE as CONFIDENCE  # a threshold its rules name
from fibook.forgetting.claims.conditions import ERASES_FRACTION as ERASES_FRACTION  # a threshold its rules name
from fibook.forgetting.claims.conditions import (
    FIXED,
    NOT_YET,
    arm_key,
    condition,
    contrast_verdict,
    interpolating,
    noted,
    radial_text,
    run_ids,
    shown,
    unjudged,
)
from fibook.forgetting.clocks import effective_lr, heavy_ball_momentum
from fibook.forgetting.noise import NoiseFloor, spread_difference, spread_estimate
from fibook.forgetting.optimizers import get_optimizer
from fibook.forgetting.paper import L2_PAPER, MUON_SPREAD, reconstructed_clock

COMMON_NORM_R = 0.5


@rule("ERASES_FRACTION", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def erases(arm: Arm, sgd: Arm, noise: NoiseFloor | None) -> Finding:
    """:func:`condition` on both arms and an error bar (:func:`unjudged`); then on the contrast c = spread(arm) -
    ``ERASES_FRACTION`` x spread(SGD) (:func:`~fibook.forgetting.noise.spread_difference`): ``qualitatively``
    when c < 0 beyond noise, ``no`` when c > 0 beyond noise, else ``not resolved``."""
    c = spread_difference(arm, sgd, noise, weight=ERASES_FRACTION)
    untestable = condition(arm, sgd) or unjudged(c)
    if untestable:
        return untestable
    return noted(contrast_verdict(c, Finding(Verdict.QUALITATIVELY), Finding(Verdict.NO),
                                  f"spread − {ERASES_FRACTION:g} × SGD's"), arm, sgd)


@rule("COMMON_NORM_R", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def common_norm(adaptive: Sequence[Arm]) -> Finding:
    """On each adaptive arm's radial memory R with its interval (:meth:`Arm.radial_memory_estimate`):
    ``qualitatively`` when every R lies below ``COMMON_NORM_R`` beyond noise, ``no`` when some R lies above it
    beyond noise, else ``not resolved``; ``not tested`` when an arm has no R or no error bar (fewer than three
    sigma_w that did not diverge). An unstable arm is named after the verdict (:func:`noted`)."""
    estimates = [a.radial_memory_estimate() for a in adaptive]
    if not all(e.has_error_bar for e in estimates):
        return Finding(Verdict.NOT_TESTED, ": no interval on R (fewer than three σ_w that did not diverge)")
    shifted = [e - COMMON_NORM_R for e in estimates]
    if all(stats.below(e) for e in shifted):
        return noted(Finding(Verdict.QUALITATIVELY), *adaptive)
    if any(stats.above(e) for e in shifted):
        return noted(Finding(Verdict.NO), *adaptive)
    return noted(Finding(Verdict.NOT_RESOLVED, f": R − {COMMON_NORM_R:g} is " + ", ".join(str(e) for e in shifted)),
                 *adaptive)


@rule(fixed=FIXED["no results"])
def not_in_paper() -> Finding:
    """The verdict of a control the paper does not run (momentum SGD): ``n/a (not in the paper)``."""
    return Finding(Verdict.NOT_APPLICABLE, " (not in the paper)")


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
