"""Part III's verdicts: every row of the layer-wise chapters' "claim | paper | ours | agrees?" tables, computed here.

A chapter cell that decides a verdict is one call of a function of this module; the rule behind each verdict and
its thresholds are named constants, stated in the docstring and in the chapter text before the figure, and
tested just above and just below each threshold. ``paper`` says what Pang et al. (2026) report (or that they do
not), ``ours`` the number measured on the chapter's page with the setting it was measured in.

Chapters "Two steps, exactly" (:func:`two_steps_claims`), "Unequal first, equal next" (:func:`unequal_equal_claims`;
its robustness rows read :func:`fibook.layerwise.robustness.claim_holds`) and "A balancing scheduler"
(:func:`scheduler_claims`):

=================================  ==========================================================================
``STEP1_SLOPE = -1.0``             the surrogate's step-1 error is O(1/h) when the fitted slope of log|gap|
``STEP1_TOL = 0.2``                on log h (``MIN_FIT_WIDTHS = 4`` or more widths ``>= FIT_FROM = 256``) is
                                   within 0.2 of −1, "not resolved" when its 95 % interval's half-width is 0.2
                                   or more, "not tested" when fewer than 4 widths reach 256 (both steps)
``STEP2_SLOPE = -0.5``             its step-2 error is O(1/√h) when the slope is within 0.25 of −½, and
``STEP2_TOL = 0.25``               qualitatively so when the whole interval is negative; "not resolved" when
                                   the interval's half-width is 0.25 or more
``SAME_TOL = 1e-9``                two schedules end the "same" when the interval of their paired final
                                   test-loss difference (same sampled problems) lies within 1e-9 of 0
``CONFIDENCE = 0.95``              otherwise one is better (worse) when the 95 % Student-t interval of the
                                   paired difference lies below (above) 0, else "within noise"; one that
                                   diverges on more draws is worse (both in :mod:`fibook.layerwise.comparison`);
                                   a schedule helps ("yes") when it is better in more settings than worse
                                   ("partly" on a tie, "not resolved" when better and worse nowhere)
``MC_LEVEL = 0.05``                the closed forms agree with Monte Carlo when every |z| is below the
                                   Bonferroni bound Phi^-1(1 − 0.05 / 2n) of the n z-scores
``RATIO_TOL = 1e-6``               A dominates B "by √h" when every (‖A‖_F/‖B‖_F)/√h is 1 within 1e-6
``WINDOW_TOL = 0.1``               an edge of the step-2 window scales as fibook derived it (h^e) when the
                                   fitted slope of its log on log h is within 0.1 of e and its 95 % interval's
                                   half-width is below 0.1 (over the fitted widths, a factor 64, 0.1 in the exponent
                                   moves an edge by a factor 1.5); a result of fibook's own: the paper's
                                   O(h√h) (two layers) and O(h) (three) are the rates below which the surrogate
                                   holds, not stated edges of this window
=================================  ==========================================================================

Along a split grid of a budget (odd length, midpoint ``eta1 = S/2`` in the middle) the equal split is a local
minimum when its loss is below both neighbours', a local maximum when above both (:func:`midpoint_kind`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

# the thresholds of the split preferences and of divergence, recorded with the rules that read them
from fibook import stats
from fibook.claims import Claim, Finding, Verdict, not_thresholded, rule, yes_or_no
from fibook.layerwise.closed_forms import TIE_RTOL  # noqa: F401
from fibook.layerwise.comparison import (
    CONFIDENCE,
    SAME_TOL,  # noqa: F401
    bonferroni_level,
    paired,
    paired_verdict,
)
from fibook.layerwise.scheduler import DIVERGENCE_FACTOR, ScheduleRun  # noqa: F401
from fibook.notebook import below
from fibook.presets import Preset

if TYPE_CHECKING:
    from fibook.layerwise.robustness import CaseResult

STEP1_SLOPE = -1.0
STEP1_TOL = 0.2
STEP2_SLOPE = -0.5
STEP2_TOL = 0.25
MC_LEVEL = 0.05
RATIO_TOL = 1e-6
WINDOW_TOL = 0.1


FIT_FROM = 256  # below this width the step-2 gap has not settled (it changes sign near h = 64)
MIN_FIT_WIDTHS = 4


def slope_widths(widths: Sequence[float]) -> np.ndarray:
    """The widths a surrogate-error slope is fitted over: those ``>= FIT_FROM``, or the ``MIN_FIT_WIDTHS``
    largest when fewer reach it (small presets)."""
    widths = np.sort(np.asarray(widths, dtype=float))
    if len(widths) < MIN_FIT_WIDTHS:
        raise ValueError(f"a slope with an interval needs at least {MIN_FIT_WIDTHS} widths, got {len(widths)}")
    big = widths[widths >= FIT_FROM]
    return big if len(big) >= MIN_FIT_WIDTHS else widths[-MIN_FIT_WIDTHS:]


def _unsettled(widths: Sequence[float]) -> Finding | None:
    """The reason a width rate cannot be read from a fit over ``widths`` (fewer than ``MIN_FIT_WIDTHS`` of them
    reach ``FIT_FROM``, below which the gap has not settled), else None."""
    big = sum(h >= FIT_FROM for h in widths)
    if big >= MIN_FIT_WIDTHS:
        return None
    shown = ", ".join(f"{h:g}" for h in sorted(widths))
    return Finding(Verdict.NOT_TESTED, f": {big} of the fitted widths h ∈ ({shown}) reach {FIT_FROM}, below which "
                   f"the gap has not settled (the rate needs {MIN_FIT_WIDTHS})")


def scales_like(fit: stats.Slope, exponent: float, tol: float) -> Finding:
    """Does a fitted power of ``h`` match ``exponent``? ``not resolved`` when the interval's half-width is at least
    ``tol`` (too wide to decide), else ``yes`` when ``|slope − exponent| < tol`` and ``no`` otherwise."""
    if fit.half >= tol:
        return Finding(Verdict.NOT_RESOLVED)
    return yes_or_no(abs(fit.slope - exponent) < tol)


@rule("STEP1_SLOPE", "STEP1_TOL", "FIT_FROM", "MIN_FIT_WIDTHS")
def first_step_rate(fit: stats.Slope, widths: Sequence[float]) -> Finding:
    """The surrogate error at step 1 is O(1/h) (the paper's step-1 bound): :func:`scales_like` with exponent
    ``STEP1_SLOPE`` and tolerance ``STEP1_TOL``; ``not tested`` when fewer than ``MIN_FIT_WIDTHS`` of the fitted
    ``widths`` reach ``FIT_FROM``."""
    return _unsettled(widths) or scales_like(fit, STEP1_SLOPE, STEP1_TOL)


@rule("STEP2_SLOPE", "STEP2_TOL", "FIT_FROM", "MIN_FIT_WIDTHS")
def second_step_rate(fit: stats.Slope, widths: Sequence[float]) -> Finding:
    """The surrogate error at step 2 is O(1/√h): ``not tested`` when fewer than ``MIN_FIT_WIDTHS`` of the fitted
    ``widths`` reach ``FIT_FROM``; else ``not resolved`` when the interval's half-width is at least
    ``STEP2_TOL``, ``yes`` when ``|slope − STEP2_SLOPE| < STEP2_TOL``, ``qualitatively`` when the whole interval
    is negative (the gap shrinks with width), else ``no``."""
    why = _unsettled(widths)
    if why is not None:
        return why
    if fit.half >= STEP2_TOL:
        return Finding(Verdict.NOT_RESOLVED)
    if abs(fit.slope - STEP2_SLOPE) < STEP2_TOL:
        return Finding(Verdict.YES)
    return Finding(Verdict.QUALITATIVELY) if fit.slope + fit.half < 0 else Finding(Verdict.NO)


def z_critical(n: int, level: float = MC_LEVEL) -> float:
    """The two-sided Bonferroni bound Phi^-1(1 − level / 2n) for ``n`` z-scores at family-wise level ``level``
    (:func:`fibook.stats.bonferroni_z`): if every closed form is right, all n |z| stay below it with probability at
    least 1 − level."""
    return stats.bonferroni_z(n, level)


@rule("MC_LEVEL")
def closed_forms_agree(z: Sequence[float]) -> Finding:
    """``yes`` when every |z| (Monte Carlo minus closed form, in standard errors) is below
    :func:`z_critical` of their number, else ``no``."""
    return yes_or_no(max(abs(v) for v in z) < z_critical(len(z)))


@rule("RATIO_TOL")
def dominates_by_sqrt_h(ratios: Sequence[float]) -> Finding:
    """``yes`` when every (‖A‖_F / ‖B‖_F) / √h is 1 within ``RATIO_TOL`` (relative), else ``no``."""
    return yes_or_no(all(abs(r - 1.0) < RATIO_TOL for r in ratios))


def two_steps_claims(preset: Preset, *, z: Sequence[float], ratios: Sequence[float], slopes: Mapping[int, stats.Slope],
                     fit_widths: Sequence[int]) -> list[Claim]:
    """The ``two_steps`` chapter's rows: the closed forms against Monte Carlo (``z``, every setting and step;
    :func:`closed_forms_agree`), A against B (``ratios`` = (‖A‖_F / ‖B‖_F) / √h per width and layer of the
    orthogonal setting; :func:`dominates_by_sqrt_h`), and the width rates of the surrogate error at steps 1 and 2
    (``slopes``, :func:`fibook.stats.log_slope` fitted over ``fit_widths``; :func:`first_step_rate`,
    :func:`second_step_rate`)."""
    sizes = preset.layerwise
    worst = max(abs(r - 1.0) for r in ratios)
    return [
        Claim("closed-form test loss after 1 and 2 steps (surrogate)", "formulas, no number",
              f"MC max |z| = {max(abs(v) for v in z):.2f} over {len(z)} (bound {z_critical(len(z)):.2f}), "
              f"h ∈ {sizes.mc_widths}, {sizes.mc_draws} draws ('{preset.name}')", closed_forms_agree(z),
              rule=closed_forms_agree),
        Claim("A dominates B by √h", "√h (norm orders)", f"(‖A‖_F/‖B‖_F)/√h = 1 to {below(worst, RATIO_TOL)} "
              f"over {len(ratios)} (width, layer) pairs, orthogonal setting", dominates_by_sqrt_h(ratios),
              rule=dominates_by_sqrt_h),
        Claim("surrogate error O(1/h) at step 1", "O(h⁻¹) (secondary summary)",
              f"slope {slopes[1].text()} (95 %), h ∈ {tuple(int(h) for h in fit_widths)} ('{preset.name}')",
              first_step_rate(slopes[1], fit_widths), rule=first_step_rate),
        Claim("surrogate error O(1/√h) at step 2", "O(h^-1/2) (secondary summary)",
              f"slope {slopes[2].text()} (same runs)", second_step_rate(slopes[2], fit_widths), rule=second_step_rate),
    ]


def midpoint_kind(curve: np.ndarray) -> str:
    """``min`` when the loss at the middle point of a split grid (index ``len // 2``, the equal split
    ``eta1 = S/2`` of an odd grid) is below both neighbours', ``max`` when above both, else ``neither``."""
    curve = np.asarray(curve, dtype=float)
    if curve.ndim != 1 or len(curve) < 3 or len(curve) % 2 == 0:
        raise ValueError(f"a split curve is 1-d with an odd number (>= 3) of points, got shape {curve.shape}")
    m = len(curve) // 2
    if curve[m] < min(curve[m - 1], curve[m + 1]):
        return "min"
    return "max" if curve[m] > max(curve[m - 1], curve[m + 1]) else "neither"


def unequal_then_equal(losses: Iterable[np.ndarray]) -> bool:
    """The paper's central finding on literal GD: True when, in every run (``losses``, one (points, steps + 1)
    array of test losses at steps 0, 1, 2, ... per budget), the equal split is a local maximum at step 1 and a
    local minimum at step 2 (:func:`midpoint_kind`)."""
    return all(midpoint_kind(np.asarray(loss)[:, 1]) == "max" and midpoint_kind(np.asarray(loss)[:, 2]) == "min"
               for loss in losses)


@rule()
def literal_midpoint(losses: Iterable[np.ndarray], step: int, kind: str) -> Finding:
    """``yes`` when the equal split is a local ``kind`` (``max`` or ``min``, :func:`midpoint_kind`) of the test
    loss at ``step`` in every literal-GD run ``losses`` (one (points, steps + 1) array per budget), else ``no``:
    the paper's step-1 claim is ``(1, "max")``, its step-2 claim ``(2, "min")``."""
    return yes_or_no(all(midpoint_kind(np.asarray(loss)[:, step]) == kind for loss in losses))


@rule("WINDOW_TOL")
def window_edge(fit: stats.Slope, derived: float, derived_text: str, edge: str) -> Finding:
    """A result of fibook's own on how an edge (``edge``: "lower" or "upper") of the step-2 window grows with
    width; the paper states no window edge (its O(h√h) for two layers and O(h) for three are the rates below
    which dropping B, the surrogate, is valid; Corollary 5.6's wording is not public). :func:`scales_like` of the
    fit against fibook's derived power ``h^derived`` (``derived_text``, e.g. ``h^(2/3)``) with ``WINDOW_TOL``:
    ``our own: the window's upper edge grows as h^0.70 (h^(2/3) derived)`` when it matches, ``... (not the
    derived h^(2/3))`` when it does not, ``our own: not resolved (...)`` when the interval is too wide."""
    said = scales_like(fit, derived, WINDOW_TOL)
    if said.verdict is Verdict.NOT_RESOLVED:
        return Finding(Verdict.OWN, f": not resolved (the {edge} edge's exponent {fit.text()}, interval too wide)")
    how = f"{derived_text} derived" if said.verdict is Verdict.YES else f"not the derived {derived_text}"
    return Finding(Verdict.OWN, f": the window's {edge} edge grows as h^{fit.slope:.2f} ({how})")


@rule("DIVERGENCE_FACTOR", "TIE_RTOL")
def robustness_agrees(verdict: str) -> Finding:
    """The paper says the transition holds in a robustness setting; ours is the
    :func:`fibook.layerwise.robustness.claim_holds` verdict on the steps its statement covers: ``yes``/``no`` as it
    is, ``not resolved (draws disagree)``, or ``not resolved (a split diverged)`` (constant rates blew up before
    the last step)."""
    verdicts = {"yes": Finding(Verdict.YES), "no": Finding(Verdict.NO),
                "not resolved": Finding(Verdict.NOT_RESOLVED, " (draws disagree)"),
                "diverged": Finding(Verdict.NOT_RESOLVED, " (a split diverged)")}
    if verdict not in verdicts:
        raise ValueError(f"unknown transition verdict {verdict!r}; expected one of {sorted(verdicts)}")
    return verdicts[verdict]


@rule("DIVERGENCE_FACTOR", "TIE_RTOL")
def variant_result(verdict: str) -> Finding:
    """A robustness setting that tests no statement of the paper (a fibook variant, with other data or at another
    width, or the paper's setting where its claim is not public; :attr:`fibook.layerwise.robustness.Case.own`): the
    same :func:`fibook.layerwise.robustness.claim_holds` verdict, as a result of fibook's own that says nothing
    against the paper: ``our own: the transition holds``, ``our own: the transition does not hold``, ``our own: not
    resolved (draws disagree)`` or ``our own: not resolved (a split diverged)``."""
    verdicts = {"yes": "the transition holds", "no": "the transition does not hold"}
    return Finding(Verdict.OWN, f": {verdicts.get(verdict) or robustness_agrees(verdict).text}")


WINDOW_PAPER = {2: "no window edge stated: O(h√h) for two layers is the rate below which the surrogate holds "
                   "(dropping B; secondary summary)",
                3: "no window edge stated: O(h) for three layers is the rate below which the surrogate holds "
                   "(dropping B; secondary summary); Corollary 5.6's wording is not public"}


def unequal_equal_claims(preset: Preset, *, literal: Mapping[object, tuple[np.ndarray, np.ndarray]],
                         windows: Mapping[int, tuple[stats.Slope, stats.Slope]], window_widths: Sequence[int],
                         robust: Sequence[CaseResult]) -> list[Claim]:
    """The ``unequal_equal`` chapter's rows: unequal at step 1 and equal at step 2 on literal GD (``literal``: per
    run, the split grid and its (points, steps + 1) losses; :func:`literal_midpoint`, one row per step); how the
    step-2 window's edges grow with width at depths 2 and 3 (``windows``: per depth, the lower and upper edges'
    :func:`fibook.stats.log_slope` over ``window_widths``; :func:`window_edge`, results of fibook's own against its
    derivation: h/2 at depth 2's lower edge, h^(2/3) at depth 3's upper edge); and one row per robustness run
    (``robust``; :func:`robustness_agrees` of each run's ``claim`` in the paper's settings, :func:`variant_result`
    for fibook's variants)."""
    H, h = preset.layerwise.width, preset.layerwise.sim_width
    curves = [loss for _, loss in literal.values()]
    span = f"closed form, {len(window_widths)} widths h = {min(window_widths)}…{max(window_widths)}"
    (lo2, hi2), (lo3, hi3) = windows[2], windows[3]
    rows = [
        Claim("step 1: unequal rates are optimal (equal = max)", "qualitative (figures)",
              f"closed forms at h = {H}; literal GD at h = {h} ('{preset.name}')", literal_midpoint(curves, 1, "max"),
              rule=literal_midpoint),
        Claim("step 2: equal rates are optimal (local min)", "qualitative (figures)",
              f"closed forms at h = {H}; literal GD at h = {h}", literal_midpoint(curves, 2, "min"),
              rule=literal_midpoint),
        Claim("step-2 window, depth 2: how its lower edge grows with h", WINDOW_PAPER[2],
              f"lower edge ∝ h^({lo2.text()}), upper ∝ h^({hi2.text()}) ({span})",
              window_edge(lo2, 1.0, "h/2", "lower"), rule=window_edge),
        Claim("step-2 window, depth 3: how its upper edge grows with h", WINDOW_PAPER[3],
              f"lower edge ∝ h^({lo3.text()}), upper ∝ h^({hi3.text()}) ({span})",
              window_edge(hi3, 2 / 3, "h^(2/3)", "upper"), rule=window_edge),
    ]
    for r in robust:
        steps = "; ".join(f"step {t}: {r.step_text(t)}" for t in r.case.steps)
        draws = f"{r.draws} draw" + ("s" if r.draws != 1 else "")
        decide = variant_result if r.case.own else robustness_agrees
        rows.append(Claim(f"the transition holds: {r.case.name}", r.case.paper,
                          f"literal GD, h = {r.h}, {draws}: {steps}", decide(r.claim), rule=decide))
    return rows


@rule("SAME_TOL", "CONFIDENCE", "DIVERGENCE_FACTOR")
def balancing_helps(verdicts: Sequence[str], together: Sequence[str] | None = None) -> Finding:
    """Over the settings' :func:`paired_verdict` verdicts of a schedule against a baseline: ``yes`` when it is
    better in more settings than worse, ``no`` when worse in more; on a tie ``partly`` when it is better (and as
    often worse) somewhere, ``not resolved`` when it is better and worse nowhere (a reconstruction's ``no`` speaks
    about the reconstruction, not about the paper's unpublished scheduler). Each setting is tested at
    ``CONFIDENCE``; when ``together`` (the same settings' verdicts with their intervals holding ``CONFIDENCE``
    together, :func:`fibook.layerwise.comparison.bonferroni_level`) reads otherwise, the finding says so in a
    note; the verdict stays the per-setting reading's."""
    said = _helps(verdicts)
    if together is not None and (held := _helps(together)).verdict is not said.verdict:
        return said.with_note(f"; held to {CONFIDENCE:.0%} together (Bonferroni over {len(together)}): {held}")
    return said


def _helps(verdicts: Sequence[str]) -> Finding:
    better = sum(v.startswith("better") for v in verdicts)
    worse = sum(v.startswith("worse") for v in verdicts)
    if better != worse:
        return yes_or_no(better > worse)
    if better:
        return Finding(Verdict.PARTLY, f": better in {better} setting{'s' if better > 1 else ''} and worse in as "
                       "many")
    return Finding(Verdict.NOT_RESOLVED, ": better or worse in no setting")


def _count(verdicts: Sequence[str], together: Sequence[str], n: int) -> str:
    """``better in b of n settings, worse in w`` at ``CONFIDENCE`` per setting (``verdicts``, which the rows'
    rules read), then the same counts when the settings' intervals hold ``CONFIDENCE`` together (``together``:
    each at :func:`fibook.layerwise.comparison.bonferroni_level`)."""
    def tally(vs: Sequence[str]) -> tuple[int, int]:
        return sum(v.startswith("better") for v in vs), sum(v.startswith("worse") for v in vs)

    (better, worse), (b, w) = tally(verdicts), tally(together)
    return (f"better in {better} of {n} settings, worse in {worse}; held to {CONFIDENCE:.0%} together (Bonferroni "
            f"over {len(together)}): better in {b}, worse in {w}")


RECONSTRUCTION = ": fibook's reconstruction differs from the paper's rule (as described by a secondary summary)"


@rule("SAME_TOL", "CONFIDENCE", "DIVERGENCE_FACTOR")
def reconstruction_result(verdicts: Sequence[str], together: Sequence[str] | None = None) -> Finding:
    """Norm balancing (fibook's reconstruction) against a baseline says nothing about the paper's rule, which a
    secondary summary describes differently (:func:`fibook.layerwise.scheduler.cross_norm_rates`): ``not tested``
    with the reason :data:`RECONSTRUCTION`, followed by the reconstruction's own :func:`balancing_helps` over the
    settings' :func:`paired_verdict` ``verdicts`` (and ``together``)."""
    return Finding(Verdict.NOT_TESTED,
                   f"{RECONSTRUCTION}; the reconstruction itself: {balancing_helps(verdicts, together)}")


CROSS_NORM_PAPER = ("reduces test loss vs the uniform baseline (secondary summary: η_{W_i} = "
                    "2‖W_j‖_F/(‖W_1‖_F + ‖W_2‖_F)·lr, two layers; no code or number public)")


def scheduler_claims(preset: Preset, runs: Mapping[str, Mapping[str, ScheduleRun]], *, h: int) -> list[Claim]:
    """The ``scheduler`` chapter's rows, from ``runs`` (per setting, every schedule of
    :data:`fibook.layerwise.scheduler.SCHEDULES` that applies there, tuned and run on the same evaluation draws at
    width ``h``): norm balancing (fibook's reconstruction) against uniform (:func:`reconstruction_result`: not a
    test of the paper) and against the best fixed pair (fibook's own question); the cross-norm rule (the paper's,
    as a secondary summary describes it; the settings with two trained layers) against uniform; fibook's RUB
    against uniform (:func:`paired`, :func:`paired_verdict`, :func:`balancing_helps`); and equal rates at step 2
    (the rules' construction)."""
    steps = {len(run.test) - 1 for r in runs.values() for run in r.values()}
    if len(steps) != 1:
        raise ValueError(f"every run must have the same number of steps, got {sorted(steps)}")
    n, where = len(runs), f"paired over the same problems, {CONFIDENCE:.0%} intervals; h = {h}, {steps.pop()} steps, " \
        f"'{preset.name}'"

    def verdicts(method: str, baseline: str) -> tuple[list[str], list[str]]:
        """Per setting where ``method`` runs: its verdicts at ``CONFIDENCE`` each, and held together."""
        ran = [r for r in runs.values() if method in r]
        return [[paired_verdict(paired(r[method], r[baseline], level)) for r in ran]
                for level in (CONFIDENCE, bonferroni_level(max(len(ran), 1)))]

    nb_u, nb_f, rub_u = verdicts("norm_balance", "uniform"), verdicts("norm_balance", "fixed"), \
        verdicts("rub", "uniform")
    cross = {name: paired(r["cross_norm"], r["uniform"]) for name, r in runs.items() if "cross_norm" in r}
    gains = [(p.mean, name, p.text()) for name, p in cross.items() if paired_verdict(p).startswith("better") and p.n]
    largest = "" if not gains else "; largest gain {2} ({1})".format(*min(gains))
    rows = [
        Claim("balancing the layers' norms reduces test loss (vs uniform)", CROSS_NORM_PAPER,
              f"norm balancing (fibook's reconstruction, not the paper's rule): {_count(*nb_u, n)} ({where})",
              reconstruction_result(*nb_u), rule=reconstruction_result),
        Claim("balancing beats the best fixed (η₁, η₂) pair", "not a paper claim (the summary compares with uniform "
              "only)", f"norm balancing vs the tuned fixed pair: {_count(*nb_f, n)}",
              Finding(Verdict.OWN, f" result: {balancing_helps(*nb_f)}"), rule=balancing_helps),
    ]
    if cross:
        cn_u = verdicts("cross_norm", "uniform")
        rows.append(Claim("the paper's rule (as a secondary summary describes it) reduces test loss (vs uniform)",
                          CROSS_NORM_PAPER, f"cross-norm rule, the {len(cross)} settings with two trained layers: "
                          f"{_count(*cn_u, len(cross))}{largest}", balancing_helps(*cn_u), rule=balancing_helps))
    return rows + [
        Claim("relative-update balancing (RUB) vs uniform", "not in the paper (fibook's own rule)",
              f"RUB: {_count(*rub_u, n)}", Finding(Verdict.OWN, f" result: {balancing_helps(*rub_u)}"),
              rule=balancing_helps),
        Claim("equal rates optimal at step 2 (orthogonal nets)", "qualitative",
              "every balancing rule starts at equal rates there and stays equal in depth 2",
              not_thresholded(Finding(Verdict.CONSISTENT, " by construction")), rule=not_thresholded),
    ]
