"""Part II's verdicts: every row of the shape chapters' "claim | paper | ours | agrees?" tables, computed here.

A chapter cell that decides a verdict is one call of a function of this module; the rule behind each verdict and
its thresholds are named constants, stated in the docstring and in the chapter text before the figure, and
tested just above and just below each threshold. ``paper`` says what Azulay et al. (2021) report (or that they do
not), ``ours`` the number measured on the chapter's page with the setting it was measured in.

Chapters "Scale and shape in diagonal networks" (:func:`diagonal_claims`) and "Beyond mirror descent"
(:func:`beyond_mirror_claims`). A quantity that should vanish is printed as a bound at a floor
(:func:`fibook.notebook.below`); the verdicts read the same floor: it vanishes below it, it does not at or above.

=================================  ==========================================================================
``FLOW_FLOOR = 1e-9``              an exact gradient flow (LSODA, relative tolerance 1e-11) lands on a closed
                                   form when the relative distance is below 1e-9 (Theorems 4.1 and 6.1, the
                                   same-κ check, the sign-flip check); at or above it, it does not
``FD_FLOOR = 1e-8``                a first finite difference (step 1e-4) vanishes below 1e-8: the warped
                                   metric ``|a| M⁻¹`` is symmetric, the plain ``M⁻¹`` is not
``SHIFT_FACTOR = 10``              the largest shape moves the transition to smaller α when its transition α
                                   is below a tenth of that of the smallest shape
``COLLAPSE_MAX = 1e-2``            the curves of Figure 7.1 collapse against κ when no curve deviates from the
                                   s = 0 curve (interpolated in log κ) by 1e-2 or more
``GD_GAP_FRACTION = 0.05``         early-stopped GD is close to the GF limit when its population-error gap is
                                   below 5 % of the range of the curve (sparse-like to min-ℓ2-like)
``ORDER_FACTOR = 10``              two ranges are of the same order when each of our endpoints lies within a
                                   factor 10 of the paper's
``VANISH_MIN_SLOPE = 0.5``         a gap vanishes with the initialization when it falls at every smaller
                                   ‖w₀‖ and the slope of log gap on log ‖w₀‖ is at least 0.5
=================================  ==========================================================================

Figure 7.1's two regimes are read against the midpoint between the min-ℓ1 and min-ℓ2 errors, the level that also
defines the transition (:func:`kernel_to_rich`); where min-ℓ1 is not better than min-ℓ2 on the data (too few
examples for it to recover the teacher) neither the regimes nor the transition are tested.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fibook import stats
from fibook.claims import Claim, Finding, Verdict, not_thresholded, rule, yes_or_no
from fibook.notebook import below
from fibook.presets import Preset
from fibook.shape.paper import GD_DISTANCES, GD_STEPS, TRANSITIONS

FLOW_FLOOR = 1e-9
FD_FLOOR = 1e-8
SHIFT_FACTOR = 10
COLLAPSE_MAX = 1e-2
GD_GAP_FRACTION = 0.05
ORDER_FACTOR = 10
VANISH_MIN_SLOPE = 0.5


@rule("FLOW_FLOOR")
def vanishes(value: float, floor: float = FLOW_FLOOR) -> Finding:
    """``yes`` when ``|value| < floor`` (it prints as ``< floor`` with :func:`fibook.notebook.below`), else ``no``."""
    return yes_or_no(abs(value) < floor)


@rule("VANISH_MIN_SLOPE")
def gap_vanishes(norms: Sequence[float], gaps: Sequence[float]) -> Finding:
    """``yes`` when the gap falls at every smaller initial norm (``norms`` any order) and the least-squares slope
    of log gap on log norm is at least ``VANISH_MIN_SLOPE``, else ``no``."""
    order = np.argsort(np.asarray(norms, dtype=float))
    n, g = np.asarray(norms, dtype=float)[order], np.asarray(gaps, dtype=float)[order]
    if len(n) < 2:
        raise ValueError(f"a trend needs at least two initial norms, got {len(n)}")
    slope = stats.slope(np.log(n), np.log(g)).value
    return yes_or_no(np.all(np.diff(g) > 0) and slope >= VANISH_MIN_SLOPE)


@rule("FLOW_FLOOR")
def kappa_not_product(same_kappa: float, same_product: float) -> Finding:
    """Theorem 4.1's bias depends on ``u0² + v0²`` (the effective scale κ), not on ``α = u0 v0``: ``yes`` when the
    endpoints of two initializations with the same κ coincide (``‖Δβ‖ < FLOW_FLOOR``) and those of two with the
    same α but different shapes do not (``‖Δβ‖ >= FLOW_FLOOR``), else ``no``."""
    return yes_or_no(abs(same_kappa) < FLOW_FLOOR <= abs(same_product))


def _no_sparse_regime(err_l1: float, err_l2: float) -> Finding | None:
    """The reason Figure 7.1 cannot be read when min-ℓ1 does not beat min-ℓ2 on the data (then neither a sparse-like
    regime nor a transition to min-ℓ2 exists), else None."""
    if err_l1 < err_l2:
        return None
    return Finding(Verdict.NOT_TESTED, f": min-ℓ1 does not beat min-ℓ2 on this data (error {err_l1:.4f} vs "
                   f"{err_l2:.4f}), so there is no sparse-like regime to leave")


@rule("SHIFT_FACTOR")
def transition_shift(t_first: float | None, t_last: float | None, err_l1: float, err_l2: float) -> Finding:
    """``yes (a shift of D decades)`` when the largest shape's transition α ``t_last`` is below
    ``t_first / SHIFT_FACTOR``, that of the smallest shape, with ``D = log10(t_first / t_last)``; else ``no``
    (Figure 7.1). ``not tested`` when min-ℓ1's error ``err_l1`` is not below min-ℓ2's ``err_l2`` (no transition
    between them) or when a curve does not cross their midpoint on the grid (a transition is None, as
    :func:`fibook.shape.sparse_recovery.figure71_transitions` gives it)."""
    why = _no_sparse_regime(err_l1, err_l2)
    if why is not None:
        return why
    if t_first is None or t_last is None:
        return Finding(Verdict.NOT_TESTED, ": a curve does not cross the midpoint between the min-ℓ1 and min-ℓ2 "
                       "errors on this grid")
    if t_last < t_first / SHIFT_FACTOR:
        return Finding(Verdict.YES, f" (a shift of {np.log10(t_first / t_last):.1f} decades)")
    return Finding(Verdict.NO)


@rule()
def kernel_to_rich(errors: np.ndarray, err_l1: float, err_l2: float) -> Finding:
    """Figure 7.1's two regimes: ``yes`` when the lowest error of the grid is below the midpoint
    ``(err_l1 + err_l2) / 2`` of the min-ℓ1 and min-ℓ2 errors (sparse-like) and the highest is above it
    (min-ℓ2-like), else ``no``; ``not tested`` when ``err_l1`` is not below ``err_l2``."""
    why = _no_sparse_regime(err_l1, err_l2)
    if why is not None:
        return why
    mid = 0.5 * (err_l1 + err_l2)
    return yes_or_no(np.min(errors) < mid < np.max(errors))


@rule("COLLAPSE_MAX")
def collapses(collapse: float) -> Finding:
    """``yes`` when the largest deviation of any shape's curve from the s = 0 curve, interpolated at the same
    effective scale κ = α(1+s²)/(1−s²), is below ``COLLAPSE_MAX``, else ``no`` (implied by Theorem 4.1)."""
    return yes_or_no(collapse < COLLAPSE_MAX)


@rule("GD_GAP_FRACTION")
def gd_close(gaps: Sequence[float], errors: np.ndarray, stopped: Sequence[bool]) -> Finding:
    """``yes`` when every early-stopped-GD gap to the gradient-flow limit is below ``GD_GAP_FRACTION`` of the
    range of the population-error curve (``errors``), else ``no``; ``not tested`` when a run reached its step cap
    before the stop rule (``stopped`` false: it is not the paper's protocol)."""
    if len(stopped) != len(gaps):
        raise ValueError(f"one stop flag per gap: got {len(stopped)} flags for {len(gaps)} gaps")
    capped = len(stopped) - sum(map(bool, stopped))
    if capped:
        return Finding(Verdict.NOT_TESTED, f": {capped} of {len(stopped)} GD runs reached the step cap before the "
                       "training MSE fell below 1e-4")
    return yes_or_no(max(abs(g) for g in gaps) < GD_GAP_FRACTION * float(np.ptp(errors)))


@rule("ORDER_FACTOR")
def same_order(ours: tuple[float, float], paper: tuple[float, float]) -> Finding:
    """``yes (same order)`` when our (low, high) range's endpoints each lie within ``ORDER_FACTOR`` of the paper's,
    else ``no``."""
    ok = all(1 / ORDER_FACTOR <= o / p <= ORDER_FACTOR for o, p in zip(ours, paper, strict=True))
    return Finding(Verdict.YES, " (same order)") if ok else Finding(Verdict.NO)




@rule("ORDER_FACTOR")
def gd_same_order(steps: Sequence[int], distances: Sequence[float]) -> Finding:
    """``yes (same order)`` when both the range of our GD step counts and that of our final distances are of the
    paper's order (:func:`same_order` against :data:`fibook.shape.paper.GD_STEPS` and ``GD_DISTANCES``), else
    ``no``."""
    ok = same_order((min(steps), max(steps)), GD_STEPS.value).verdict is Verdict.YES and same_order(
        (min(distances), max(distances)), GD_DISTANCES.value).verdict is Verdict.YES
    return Finding(Verdict.YES, " (same order)") if ok else Finding(Verdict.NO)


def diagonal_claims(preset: Preset, *, flow_errors: Sequence[float], same_kappa: float, same_product: float,
                    transitions: Mapping[float, float], errors: np.ndarray, err_l1: float, err_l2: float,
                    collapse: float, gd_gaps: Sequence[float], gd_shapes: Sequence[float],
                    gd_stopped: Sequence[bool]) -> list[Claim]:
    """The ``diagonal_networks`` chapter's rows: Theorem 4.1 on small problems (:func:`vanishes` on the largest of
    ``flow_errors``), κ rather than α (:func:`kappa_not_product`), the transition of the first and last shape of
    ``transitions`` (:func:`transition_shift`), the two regimes of ``errors`` (shapes x scales,
    :func:`kernel_to_rich`), the collapse against κ (:func:`collapses`) and early-stopped GD (``gd_gaps``, the
    population-error gaps to the limit at grid points of the shapes ``gd_shapes``, the paper's protocol, and
    whether each met its stop rule, ``gd_stopped``; :func:`gd_close`)."""
    sc = preset.shape
    (s_first, t_first), (s_last, t_last) = list(transitions.items())[0], list(transitions.items())[-1]
    worst = max(flow_errors)
    return [
        Claim("GF on u∘v reaches argmin Q_k (Theorem 4.1)", "exact (theorem); code checks GD vs SLSQP to ~1e-4",
              f"max relative gap {below(worst, FLOW_FLOOR)} on N = {sc.n_small}, d = {sc.d_small}, "
              f"{len(flow_errors)} (α, s)", vanishes(worst), rule=vanishes),
        Claim("the bias depends on u₀²+v₀², not on the product u₀v₀", "Theorem 4.1",
              f"same κ: ‖Δβ‖ {below(same_kappa, FLOW_FLOOR)}; same α: ‖Δβ‖ = {same_product:.2f}",
              kappa_not_product(same_kappa, same_product), rule=kappa_not_product),
        Claim(f"larger shape moves the transition to smaller α (s = {s_first:g} vs {s_last:g})",
              str(TRANSITIONS),
              f"{_alpha(t_first)} vs {_alpha(t_last)} (midpoint crossing, '{preset.name}' preset, seed-1993 data)",
              transition_shift(t_first, t_last, err_l1, err_l2), rule=transition_shift, key="transition shift"),
        Claim("small scale → sparse-like, large → min-ℓ2-like population error", "Figure 7.1 (no y ticks)",
              f"{np.min(errors):.4f} → {np.max(errors):.4f}; min-ℓ1 {err_l1:.4f}, min-ℓ2 {err_l2:.4f}",
              kernel_to_rich(errors, err_l1, err_l2), rule=kernel_to_rich),
        Claim("curves collapse against κ = α(1+s²)/(1−s²)", "implied by Theorem 4.1 (not plotted in the paper)",
              f"max deviation {collapse:.1e} after interpolation", collapses(collapse), rule=collapses),
        Claim("early-stopped GD (MSE < 1e-4) is close to the GF limit", "paper's protocol",
              f"population-error gap ≤ {max(gd_gaps):.1e} at {len(gd_gaps)} grid points, "
              f"s ∈ {{{', '.join(f'{s:g}' for s in dict.fromkeys(gd_shapes))}}} (curve range {np.ptp(errors):.2f})",
              gd_close(gd_gaps, errors, gd_stopped), rule=gd_close),
    ]


def _alpha(value: float | None) -> str:
    return "no transition" if value is None else f"{value:.1e}"


@rule("FD_FLOOR")
def not_mirror_descent(asym_plain: float, asym_warp: float) -> Finding:
    """Section 6's argument: ``yes`` when the finite-difference asymmetry ``max |∂_k (M⁻¹)_ij − ∂_i (M⁻¹)_kj|`` of
    the plain metric does not vanish (``>= FD_FLOOR``) and that of the warped ``|a| M⁻¹`` does (``< FD_FLOOR``),
    else ``no``."""
    return yes_or_no(abs(asym_warp) < FD_FLOOR <= abs(asym_plain))


@rule("FLOW_FLOOR")
def sign_flip_breaks(flip_wrong: float, flip_right: float) -> Finding:
    """``yes`` when, after ``a`` crossed zero, the endpoint with ``sign(a_∞)`` lands on the trained network
    (relative distance ``flip_right < FLOW_FLOOR``) and the one with ``sign(a₀)`` of Theorem 6.1 as written does
    not (``flip_wrong >= FLOW_FLOOR``), else ``no``."""
    return yes_or_no(abs(flip_right) < FLOW_FLOOR <= abs(flip_wrong))


@rule("VANISH_MIN_SLOPE")
def vanishes_in_the_limit(vanishing: Mapping[str, tuple[Sequence[float], Sequence[float]]]) -> Finding:
    """The summed regularizer where the neurons' warps coincide (fibook's derivation): :func:`gap_vanishes` on the
    ``"equal δ"`` case of ``vanishing`` (per case, the initial norms and the largest per-neuron gaps), followed by
    ``; not with unequal δ`` when an ``"unequal δ"`` case is given and its gap does not vanish."""
    said = gap_vanishes(*vanishing["equal δ"])
    if "unequal δ" in vanishing and gap_vanishes(*vanishing["unequal δ"]).verdict is not Verdict.YES:
        return said.with_note("; not with unequal δ")
    return said


# rows whose statement fibook derived: no reachable text of the paper states it
UNCONFIRMED = "not found in the paper's reachable text (fibook's derivation)"
UNCONFIRMED_WIDTH = UNCONFIRMED[:-1] + "; the authors' code sums q over neurons and runs m = 1)"
UNCONFIRMED_SIGN = UNCONFIRMED[:-1] + "; Theorem 6.1's q is written with w̃(0) = a₀w₀, so with sign(a₀))"
# a row of fibook's own observation: the paper's reachable text does not discuss it either way
UNDISCUSSED_SUM = "not found in the paper's reachable text (the authors' code sums q over neurons)"


def beyond_mirror_claims(preset: Preset, *, asym_plain: float, asym_warp: float, flow_errors: Sequence[float],
                         gd_steps: Sequence[int], gd_dists: Sequence[float], leaky_errors: Sequence[float],
                         rho: float, flip_wrong: float, flip_right: float, neuron_gaps: Sequence[float],
                         vanishing: Mapping[str, tuple[Sequence[float], Sequence[float]]]) -> list[Claim]:
    """The ``beyond_mirror_descent`` chapter's rows: not mirror descent (:func:`not_mirror_descent`), Theorem 6.1
    against the exact flow (:func:`vanishes` on the largest of ``flow_errors``), the paper's GD protocol
    (``gd_steps``, ``gd_dists``; against the paper's ranges, :func:`gd_same_order`),
    the leaky-ReLU neuron (``leaky_errors``, Richardson-extrapolated), the sign flip (:func:`sign_flip_breaks`), the
    summed regularizer of 3 neurons at finite, unequal initializations (``neuron_gaps``) and at vanishing
    initializations, where the warps coincide (``vanishing``: per case ``"equal δ"``/``"unequal δ"``, the initial norms
    ‖w_i(0)‖ and the largest per-neuron gaps; :func:`vanishes_in_the_limit`). The leaky-ReLU and finite-width rows
    report distances that no threshold set before the data decides (:func:`fibook.claims.not_thresholded`). The
    leaky-ReLU, sign-flip and vanishing-initialization rows are fibook's own: no reachable text of the paper states
    them (:data:`UNCONFIRMED`)."""
    sc = preset.shape
    worst = max(flow_errors)
    return [
        Claim("the single-neuron dynamics are not infinitesimal mirror descent", "stated (motivates the new technique)",
              f"∂(M⁻¹) asymmetry {asym_plain:.2f}; with warp |a|: {below(asym_warp, FD_FLOOR)}",
              not_mirror_descent(asym_plain, asym_warp), rule=not_mirror_descent),
        Claim("Theorem 6.1: GF on a·wᵀx reaches argmin q (one neuron)", "exact (theorem)",
              f"LSODA flow vs explicit β_∞: {below(worst, FLOW_FLOOR)} relative, {len(flow_errors)} (α, s), "
              f"N = {sc.n_small}, d = {sc.d_small}", vanishes(worst), rule=vanishes),
        Claim("GD (η = 1e-3, stop at loss 1e-10) ends close to w̃_Q", f"{GD_STEPS}; {GD_DISTANCES}",
              f"{min(gd_steps):,.0f}–{max(gd_steps):,.0f} steps; distance {min(gd_dists):.0e}–{max(gd_dists):.0e} "
              f"(d = {sc.d}, N = {sc.n_train}, our draws of w₀)",
              gd_same_order(gd_steps, gd_dists), rule=gd_same_order),
        Claim("leaky-ReLU neuron: the bias is Theorem 6.1's q on transformed targets", UNCONFIRMED,
              f"Richardson-extrapolated GD within {max(leaky_errors):.0e} relative (ρ = {rho}) of the explicit "
              "endpoint on the branch of sign(a) read from the trained neuron",
              not_thresholded(Finding(Verdict.OWN, " observation, on that branch")), rule=not_thresholded),
        Claim("δ < 0 can flip the sign of a; then sign(a₀) is wrong", UNCONFIRMED_SIGN,
              f"sign(a₀): off by {flip_wrong:.2f}; sign(a_∞): {below(flip_right, FLOW_FLOOR)}",
              Finding(Verdict.OWN, f" result: {sign_flip_breaks(flip_wrong, flip_right)}"), rule=sign_flip_breaks),
        Claim("m > 1, finite unequal init: summed q is only an approximation", UNDISCUSSED_SUM,
              f"m = 3: per-neuron gaps {min(neuron_gaps):.0e}–{max(neuron_gaps):.0e}",
              not_thresholded(Finding(Verdict.OWN, " observation")), rule=not_thresholded),
        Claim("m > 1, equal δ, ‖w_i(0)‖ → 0: GF reaches argmin Σ q_i", UNCONFIRMED_WIDTH,
              "; ".join(f"{case}: gap {max(g):.0e} → {min(g):.0e} as ‖w₀‖ {max(n):g} → {min(n):g}"
                        for case, (n, g) in vanishing.items()),
              Finding(Verdict.OWN, f" result: {vanishes_in_the_limit(vanishing)}"), rule=vanishes_in_the_limit),
    ]
