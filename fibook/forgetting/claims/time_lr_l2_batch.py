"""The verdicts of the "Time, learning rate, L2 and batch size" chapter (``time_lr_l2_batch``): longer training,
L2 at a large rate, more L2 at a fixed rate, the L2 term against its lambda = 0 control, and batch size.

=================================  ==========================================================================
``KEEPS_FRACTION = 0.5``           training longer "leaves the spread" when the longest arm keeps more than
                                   half of the shortest arm's spread beyond noise
``RANK_AGREES = 0.5``              spread rising with batch size: Spearman rank correlation above 0.5, and the
                                   largest batch's spread above the smallest's beyond noise
``EQUIVALENCE_PP``,                shared with the other chapters (:mod:`~fibook.forgetting.claims.conditions`)
``ERASES_FRACTION``
=================================  ==========================================================================
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from fibook import stats
from fibook.claims import Claim, Finding, Verdict, rule
from fibook.forgetting.arms import UNSTABLE, Arm, setting
from fibook.forgetting.claims.conditions import CONFIDENCE as CONFIDENCE  # a threshold its rules name
from fibook.forgetting.claims.conditions import EQUIVALENCE_PP as EQUIVALENCE_PP  # a threshold its rules name
from fibook.forgetting.claims.conditions import ERASES_FRACTION as ERASES_FRACTION  # a threshold its rules name
from fibook.forgetting.claims.conditions import (
    FIXED,
    NOT_YET,
    condition,
    contrast_verdict,
    interpolating,
    noted,
    run_ids,
    shown,
    unjudged,
    unmet,
)
from fibook.forgetting.loading import Finished
from fibook.forgetting.metrics import rank_correlation
from fibook.forgetting.noise import Difference, NoiseFloor, spread_difference, spread_estimate
from fibook.forgetting.paper import HEADLINE_SPREAD, L2_PAPER, LONG_SPREAD

KEEPS_FRACTION = 0.5
RANK_AGREES = 0.5
ERROR_BARS = ("± one standard error: a seed bootstrap where an arm has several seeds, else the pooled std of a "
              "one-seed spread")  # said once in a row that lists spreads


@rule("KEEPS_FRACTION", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def keeps_spread(short: Arm, long: Arm, noise: NoiseFloor | None) -> Finding:
    """:func:`condition` on both and an error bar; then on c = spread(long) - ``KEEPS_FRACTION`` x spread(short):
    ``qualitatively`` when c > 0 beyond noise (the longer arm keeps more than that fraction), ``no`` when c < 0
    beyond noise, else ``not resolved``."""
    c = spread_difference(long, short, noise, weight=KEEPS_FRACTION)
    untestable = condition(short, long) or unjudged(c)
    if untestable:
        return untestable
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
    untestable = condition(base, both) or unjudged(d, c)
    if untestable:
        return untestable
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
    untestable = condition(*[a for r in rows.values() for a in r]) or unjudged(
        *[spread_difference(x, y, noise) for r in rows.values() for x, y in itertools.pairwise(r)])
    if untestable:
        return untestable
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
    untestable = condition(control, with_l2) or unjudged(d)
    if untestable:
        return untestable
    return noted(contrast_verdict(d, Finding(Verdict.NO, ": L2 raised the spread"), Finding(Verdict.YES),
                                  "control − L2 arm"), control, with_l2)


@rule("RANK_AGREES", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def rises_with_batch(rho: float | None, rise: Difference | None) -> Finding:
    """On the spread at the largest batch minus the one at the smallest (``rise``) and the rank correlation of
    spread with batch size: ``qualitatively`` when rise > 0 beyond noise and rho > ``RANK_AGREES``; ``weakly`` when
    rise > 0 beyond noise alone; ``no`` when rise < 0 beyond noise; else ``not resolved``. ``not tested`` without
    a rank correlation (fewer than three batch sizes whose selected predictors interpolate) or without an error
    bar on ``rise`` (:func:`unjudged`). The chapter names the unstable arms it read after the verdict
    (:func:`noted`)."""
    if rho is None or rise is None:
        return Finding(Verdict.NOT_TESTED, ": no rank correlation (fewer than three batch sizes whose selected "
                       "predictors interpolate)")
    untestable = unjudged(rise)
    if untestable:
        return untestable
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

    def pp(a: Arm) -> str:
        return spread_estimate(a, noise).brief()

    def bare_label(a: Arm) -> str:  # without its unstable mark, which pp() puts after the spread
        return a.label.removesuffix(UNSTABLE)

    long_arms = sorted(long.arms, key=lambda a: a.config.epochs)
    batch_arms = sorted(batch.arms, key=lambda a: a.config.batch_size)
    cells = {(a.config.lr, a.config.weight_decay): a for a in l2.arms}
    base, both = cells.get((min(lrs), 0.0)), cells.get((max(lrs), max(wds)))
    rows = l2_rows(l2_clock)

    def longer():
        short, longest = long_arms[0], long_arms[-1]
        return (f"{short.config.epochs} → {longest.config.epochs} epochs: selected {pp(short)} → "
                f"{pp(longest)} (longest − {KEEPS_FRACTION:g} × shortest: "
                f"{spread_difference(longest, short, noise, weight=KEEPS_FRACTION)}), last "
                f"epoch {shown(short.final_spread_pp, 1)} → {shown(longest.final_spread_pp, 1)} pp, R "
                f"{shown(short.radial_memory, 2)} → "
                f"{shown(longest.radial_memory, 2)}, selected epochs {short.epoch_range()} and {longest.epoch_range()} "
                f"({where(long, ('arch', 'lr'))})"), keeps_spread(short, longest, noise), long_arms

    def large_rate_l2():
        return (f"{bare_label(both)}: {pp(both)} (T_L2 = {both.clock()[1]:.3g} at the selected "
                "checkpoints; "
                f"{interpolating(both)}) vs {bare_label(base)}: {pp(base)} (difference "
                f"{spread_difference(base, both, noise)}) ({where(l2, ('arch', 'epochs'))})"), \
            l2_erases(base, both, noise), (base, both)

    def more_l2():
        per_row = "; ".join(f"{name}: " + " → ".join(pp(a) for a in r) + " at λ = "
                            + ", ".join(f"{a.config.weight_decay:g}" for a in r) for name, r in rows.items())
        return f"{per_row} ({ERROR_BARS}; {where(l2_clock, ('arch',))})", falls_with_l2(rows, noise), \
            [a for r in rows.values() for a in r]

    def l2_itself():
        control, strongest = next(iter(rows.values()))[0], next(iter(rows.values()))[-1]
        return (f"{bare_label(control)} → {bare_label(strongest)}: {pp(control)} → "
                f"{pp(strongest)} (difference {spread_difference(control, strongest, noise)}; "
                f"T_L2 = {strongest.clock()[1]:.3g} at the selected checkpoints) ({where(l2_clock, ('arch',))})"), \
            l2_lowers(control, strongest, noise), (control, strongest)

    def batches():
        fit = [a for a in batch_arms if condition(a) is None]
        rho = rank_correlation([a.config.batch_size for a in fit], [a.spread_pp for a in fit])
        rise = spread_difference(fit[-1], fit[0], noise) if len(fit) >= 2 else None
        left_out = [f"b = {a.config.batch_size}" for a in batch_arms if condition(a) is not None]
        return (", ".join(f"b = {a.config.batch_size}: {pp(a)}" for a in batch_arms)
                + f"; rank correlation {'n/a' if rho is None else f'{rho:+.2f}'} over {len(fit)} arms"
                + ("" if rise is None else f", largest − smallest b: {rise}")
                + (f" ({', '.join(left_out)} left out: {'; '.join(unmet(*batch_arms))})" if left_out else "")
                + f" ({ERROR_BARS}; {where(batch, ('arch', 'epochs', 'lr'))})"), \
            noted(rises_with_batch(rho, rise), *fit), batch_arms

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
