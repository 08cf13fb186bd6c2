"""The verdicts of "Forgetting clocks" (``clocks``): the spread falls with each mechanism's clock, arms at an
equal clock have equal spreads, and the two experiments built to tell a clock from a rate (``clock_ladder``,
``tsgd_pair``).

=================================  ==========================================================================
``CLOCK_RHO = -0.5``               "a larger clock leaves a smaller spread": Spearman rank correlation of spread
                                   with the clock at or below -0.5 across the included arms, and the arm at the
                                   smallest clock above the one at the largest beyond noise (weakly: the drop
                                   alone); at a fixed clock, the spread "rises as the rate falls" at rho <= -0.5
                                   of spread with eta and the smallest rate's spread above the largest's
``EQUIVALENCE_PP``                 the equivalence margin (:mod:`~fibook.forgetting.claims.conditions`)
=================================  ==========================================================================
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from fibook import stats
from fibook.claims import Claim, Finding, Verdict, rule
from fibook.forgetting.arms import Arm, arm_of
from fibook.forgetting.claims.conditions import CONFIDENCE as CONFIDENCE  # a threshold its rules name
from fibook.forgetting.claims.conditions import EQUIVALENCE_PP as EQUIVALENCE_PP  # a threshold its rules name
from fibook.forgetting.claims.conditions import FIXED, NOT_YET, SELECTION, condition, noted, run_ids, shown, unjudged
from fibook.forgetting.collapse import ClockPoint, equal_clock_pairs
from fibook.forgetting.loading import Finished
from fibook.forgetting.metrics import rank_correlation
from fibook.forgetting.noise import Difference, NoiseFloor, spread_difference, spread_estimate
from fibook.forgetting.paper import (
    HEADLINE_SPREAD,
    HEADLINE_T_SGD,
    L2_PAPER,
    LONG_SPREAD,
    LONG_T_SGD,
    reconstructed_clock,
)

CLOCK_RHO = -0.5


@rule("CLOCK_RHO", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def falls_with_clock(rho: float | None, drop: Difference | None) -> Finding:
    """On the spread at the smallest clock minus the one at the largest (``drop``) and the rank correlation rho
    of spread with the clock: ``qualitatively`` when drop > 0 beyond noise and rho <= ``CLOCK_RHO``; ``weakly``
    when drop > 0 beyond noise alone; ``no`` when drop < 0 beyond noise (the larger clock keeps the larger
    spread); else ``not resolved``. ``not tested`` without a correlation (fewer than three included arms) or
    without an error bar on ``drop`` (:func:`unjudged`)."""
    if rho is None or drop is None:
        return Finding(Verdict.NOT_TESTED, ": no rank correlation (fewer than three arms count on this clock)")
    untestable = unjudged(drop)
    if untestable:
        return untestable
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
    untestable = condition(a, b) or unjudged(d)
    if untestable:
        return untestable
    if stats.equivalent(d, EQUIVALENCE_PP):
        return noted(Finding(Verdict.YES, f": equal within ±{EQUIVALENCE_PP:g} pp"), a, b)
    if stats.differs(d):
        return noted(Finding(Verdict.NO, f": the spreads differ, {d}, at this preset (the paper's own setting is not "
                                         "run here)"), a, b)
    return noted(Finding(Verdict.NOT_RESOLVED, f": {d} is neither shown within ±{EQUIVALENCE_PP:g} pp nor away "
                                                 "from 0"), a, b)


@rule("EQUIVALENCE_PP", "CLOCK_RHO", "CONFIDENCE", fixed=FIXED["ladder"])
def clock_or_rate(rungs: Sequence[Arm], noise: NoiseFloor | None) -> Finding:
    """Arms at one clock reached by rates spanning a decade (``clock_ladder``), largest rate first: :func:`condition`
    on every rung and an error bar on each rung's difference from the first. ``yes: the clock`` when every rung's
    spread equals the first's within +-``EQUIVALENCE_PP`` (:func:`fibook.stats.equivalent`); ``no: the rate`` when
    the smallest rate's spread exceeds the largest's beyond noise and the rank correlation of spread with the rate
    is at most ``CLOCK_RHO`` (the spread rises as the rate falls); else ``not resolved``."""
    if len(rungs) < 2:
        return Finding(Verdict.NOT_TESTED, ": a ladder needs two rungs or more")
    diffs = [spread_difference(r, rungs[0], noise) for r in rungs[1:]]
    untestable = condition(*rungs) or unjudged(*diffs)
    if untestable:
        return untestable
    if all(stats.equivalent(d, EQUIVALENCE_PP) for d in diffs):
        return noted(Finding(Verdict.YES, f": the clock (every rung within ±{EQUIVALENCE_PP:g} pp of the largest "
                                          "rate's)"), *rungs)
    rho = rank_correlation([r.config.lr for r in rungs], [spread_estimate(r, noise).value for r in rungs])
    if stats.above(diffs[-1]) and rho is not None and rho <= CLOCK_RHO:
        return noted(Finding(Verdict.NO, f": the rate (the spread rises as η falls, ρ = {rho:+.2f})"), *rungs)
    return noted(Finding(Verdict.NOT_RESOLVED, f": smallest − largest rate is {diffs[-1]}"), *rungs)


@rule("EQUIVALENCE_PP", "CLOCK_RHO", "CONFIDENCE", fixed=FIXED["ladder-fitting"])
def clock_or_rate_where_fitting(rungs: Sequence[Arm], noise: NoiseFloor | None) -> Finding:
    """:func:`clock_or_rate` on the rungs whose selected predictors fit the training set (:func:`condition`),
    largest rate first: the ladder read where the condition holds, when a rung fails it (the ladder's own row is
    then "not tested"); ``not tested`` with fewer than three such rungs (a trend in the rate needs three), and
    ``not tested`` with a reason when every rung fits (the ladder's own row decides then)."""
    fitting = [r for r in rungs if condition(r) is None]
    if len(fitting) == len(rungs):
        return Finding(Verdict.NOT_TESTED, ": every rung fits, so the ladder's own row decides")
    if len(fitting) < 3:
        return Finding(Verdict.NOT_TESTED, f": {len(fitting)} rung(s) fit the training set, a trend needs three")
    return clock_or_rate(fitting, noise)


CLOCK_CLAIMS = (
    ("T_SGD", "each mechanism acts on a timescale set by its regularization (abstract); larger batches (smaller "
              f"T_SGD) forget more slowly (secondary); {HEADLINE_SPREAD} at T_SGD = {HEADLINE_T_SGD}, "
              f"≈ {LONG_SPREAD} at {LONG_T_SGD} (secondary)"),
    ("T_L2", L2_PAPER),
    ("T_adapt", "the Adam family largely erases the dependence (abstract; T_adapt = "
                f"{reconstructed_clock('adam')[1]:.3g} for its Adam run in the book's reconstruction)"),
)


def trend(points: Sequence[ClockPoint], clock: str, noise: NoiseFloor | None,
          stable_only: bool = False) -> tuple[list[ClockPoint], float | None, Difference | None]:
    """The included arms on ``clock`` (by clock at the selected checkpoints; with ``stable_only``, the stable ones),
    the rank correlation of their spreads with it, and the spread difference between the arms at its smallest and
    largest value."""
    pts = sorted((p for p in points if p.clock == clock and p.included and not (stable_only and p.arm.unstable)),
                 key=lambda p: p.value)
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
TWIN_CHECK = "a check added 2026-12-06, after the bf16 pair's verdict was seen"


def without_precision(p: ClockPoint) -> tuple:
    """The settings of ``p``'s arm but its precision: an arm and its twin at another precision share them."""
    return tuple(kv for kv in arm_of(p.arm.config) if kv[0] != "precision")


def precision_twin(pair: tuple[ClockPoint, ClockPoint], twins: Sequence[tuple[ClockPoint, ClockPoint]]
                   ) -> tuple[ClockPoint, ClockPoint] | None:
    """Among the equal-clock pairs ``twins`` (of the :data:`FIXED_CLOCK` experiments), the one of the same two
    arms as ``pair`` at another precision, in ``pair``'s order; None when there is none."""
    p, q = pair
    for r, s in twins:
        if r.arm.config.precision == p.arm.config.precision:
            continue
        if (without_precision(r), without_precision(s)) == (without_precision(p), without_precision(q)):
            return r, s
        if (without_precision(s), without_precision(r)) == (without_precision(p), without_precision(q)):
            return s, r
    return None


def trend_claim(points: Sequence[ClockPoint], clock: str, paper: str, noise: NoiseFloor | None, where: str,
                claim: str, stable_only: bool = False) -> Claim:
    """The trend row of one clock (:func:`trend`, :func:`falls_with_clock`), over its stable arms only with
    ``stable_only``."""
    pts, rho, drop = trend(points, clock, noise, stable_only)
    reasons = Counter(p.left_out or "unstable" for p in points if p.clock == clock and p not in pts)
    left_out = "; ".join(f"{n} left out: {why}" for why, n in reasons.items()) or "none left out"
    ours = (f"{len(pts)} arms ({left_out}); ρ = " + ("n/a" if rho is None else f"{rho:+.2f}")
            + ("" if drop is None else f"; smallest − largest clock: {drop}"))
    verdict = noted(falls_with_clock(rho, drop), *[p.arm for p in pts])
    return Claim(claim, paper, f"{ours} ({where})", verdict, rule=falls_with_clock,
                 runs=run_ids(*[p.arm for p in points if p.clock == clock]))  # left out ones too


def clock_claims(points: Sequence[ClockPoint], noise: NoiseFloor | None, where: str,
                 raw_points: Sequence[ClockPoint] = ()) -> list[Claim]:
    """The ``clocks`` chapter's rows: per clock, the trend of spread with the clock over the included arms
    (:func:`trend_claim`) and, where unstable arms are among them, again over the stable ones; for T_SGD again with
    momentum SGD at its raw eta (``raw_points``, the reading before 2026-12-05); per equal-clock pair
    (:func:`~fibook.forgetting.collapse.equal_clock_pairs`) outside the experiments of :data:`FIXED_CLOCK`, whether
    their spreads agree (:func:`collapses`, after :func:`condition`), and, where those experiments ran the same two
    arms at another precision (:func:`precision_twin`), the same rule on the twins (:data:`TWIN_CHECK`)."""
    rows = []
    for clock, paper in CLOCK_CLAIMS:
        rows.append(trend_claim(points, clock, paper, noise, where, f"a larger {clock} leaves a smaller spread"))
        if any(p.clock == clock and p.included and p.arm.unstable for p in points):
            rows.append(trend_claim(points, clock, paper, noise, where, f"a larger {clock} leaves a smaller spread, "
                                    "unstable arms left out (a check added 2026-12-06)", stable_only=True))
        if clock == "T_SGD" and raw_points:
            rows.append(trend_claim(raw_points, clock, paper, noise, where,
                                    "a larger T_SGD leaves a smaller spread, momentum SGD read at its raw η "
                                    "and left out (the reading before 2026-12-05)"))
    for pair, twin in checked_pairs(points):
        rows.append(pair_claim(*pair, noise, where))
        if twin is not None:
            rows.append(pair_claim(*twin, noise, where, f", in {twin[0].arm.config.precision} (the "
                                                       f"{twin[0].experiment} runs of the same arms; {TWIN_CHECK})"))
    return rows


def checked_pairs(points: Sequence[ClockPoint]) -> list[tuple[tuple[ClockPoint, ClockPoint],
                                                                 tuple[ClockPoint, ClockPoint] | None]]:
    """Each equal-clock pair (:func:`~fibook.forgetting.collapse.equal_clock_pairs`) outside the experiments of
    :data:`FIXED_CLOCK`, with its twin at another precision in those experiments (:func:`precision_twin`; None
    without one)."""
    twins = equal_clock_pairs([p for p in points if p.experiment in FIXED_CLOCK])
    return [(pair, precision_twin(pair, twins))
            for pair in equal_clock_pairs([p for p in points if p.experiment not in FIXED_CLOCK])]


def pair_claim(p: ClockPoint, q: ClockPoint, noise: NoiseFloor | None, where: str, also: str = "") -> Claim:
    """The row of one equal-clock pair (:func:`collapses`): its clock over each run and at the selected
    checkpoints, each arm's spread with its seeds and precision, and their difference; ``also`` follows the
    claim."""
    d = spread_difference(p.arm, q.arm, noise)
    seeds = [len({r.config.seed for r in x.arm.records}) for x in (p, q)]
    arm_text = [f"{shown(x.spread.value, 1)} pp ({n} seed{'s' * (n > 1)}, {x.arm.config.precision})"
                for x, n in zip((p, q), seeds, strict=True)]
    return Claim(f"equal {p.clock}, equal spread: {p.arm.label} vs {q.arm.label}{also}",
                 "the paper's organising idea (clocks, not epochs)",
                 f"{p.clock} = {p.run_value:.3g} over each run ({p.value:.3g} and {q.value:.3g} at the selected "
                 f"checkpoints): {arm_text[0]} vs {arm_text[1]} (difference {d}) ({where})",
                 collapses(p.arm, q.arm, noise), rule=collapses, runs=run_ids(p.arm, q.arm),
                 key=f"equal {p.clock}, equal spread: {p.mechanism}, {pair_change(p.arm, q.arm)}{also}")


def reading_verdicts(by_reading: Mapping[str, tuple[Sequence[ClockPoint], NoiseFloor | None]], where: str,
                     book: str = SELECTION) -> list[dict[str, str]]:
    """The verdict of every :func:`clock_claims` row under each reading of ``by_reading`` (a selection rule of
    :data:`~fibook.forgetting.checkpoints.SELECTIONS`: its points and noise floor), rows in the order of the
    ``book`` reading's, then any row another reading adds: how much each verdict owes to the checkpoint it reads."""
    verdicts = {sel: {c.key: c.verdict.phrase for c in clock_claims(pts, noise, where)}
                for sel, (pts, noise) in by_reading.items()}
    keys = list(verdicts.get(book, {}))
    keys += [k for v in verdicts.values() for k in v if k not in keys]
    name = {sel: f"{sel} (the book's)" if sel == book else sel for sel in by_reading}
    return [{"row": k, **{name[sel]: verdicts[sel].get(k, "(no such row)") for sel in by_reading}} for k in keys]


def ladder_claims(ladder: Finished, pair: Finished, noise: NoiseFloor | None, where: str) -> list[Claim]:
    """The rows of the two experiments built to tell a clock from a rate: ``clock_ladder`` (Adam at one T_adapt
    by rates spanning a decade, :func:`clock_or_rate`) and ``tsgd_pair`` (SGD at equal T_SGD with sum eta twice as
    large in one arm, :func:`collapses`). A row waits ("not tested yet") until every arm of its experiment has
    finished on every seed."""
    rows = []
    claim = "at a fixed T_adapt the spread does not depend on η (the clock, not the rate, forgets)"
    paper = "the paper's organising idea (clocks, not epochs); the paper runs no fixed-clock ladder"
    fitting = f"{claim}, over the rungs whose selected predictors fit (a reading fixed 2026-12-06, see its rule)"
    if len(ladder.arms) < ladder.total_arms:
        for c, decide in ((claim, clock_or_rate), (fitting, clock_or_rate_where_fitting)):
            rows.append(Claim(c, paper, f"not finished ({ladder.progress})", NOT_YET, rule=decide,
                              runs=run_ids(*ladder.arms)))
    else:
        rungs = sorted(ladder.arms, key=lambda a: -a.config.lr)
        text = "; ".join(f"η = {a.config.lr:g} × {a.config.epochs}: {spread_estimate(a, noise)} "
                         f"({sum(a.selected_interpolated)} of {len(a.sigmas)} σ_w fit)" for a in rungs)
        ours = f"T_adapt = {rungs[0].run_clock()[1]:.3g} over each run; {text} ({where})"
        rows.append(Claim(claim, paper, ours, clock_or_rate(rungs, noise), rule=clock_or_rate, runs=run_ids(*rungs)))
        rows.append(Claim(fitting, paper, ours, clock_or_rate_where_fitting(rungs, noise),
                          rule=clock_or_rate_where_fitting, runs=run_ids(*rungs)))
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
