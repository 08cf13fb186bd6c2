"""Part II's verdicts on synthetic numbers with known answers, just above and just below each threshold."""

from dataclasses import replace

import numpy as np
import pytest

from fibook.claims import Finding, Verdict, not_thresholded
from fibook.presets import get_preset
from fibook.shape import claims

UP, DOWN = 1 + 1e-6, 1 - 1e-6  # relative nudges across a floor or factor


def small_scale():
    """A preset named 'x' whose sizes appear in the rows: N = 7, d = 11 small problems, d = 40, N = 9 large."""
    s = get_preset("smoke")
    return replace(s, name="x", shape=replace(s.shape, n_small=7, d_small=11, d=40, n_train=9))


def test_a_quantity_vanishes_below_its_floor():
    assert claims.vanishes(1e-9 * DOWN).verdict is Verdict.YES and claims.vanishes(-1e-9 * DOWN).verdict is Verdict.YES
    assert claims.vanishes(1e-9 * UP).verdict is Verdict.NO and claims.vanishes(1e-9).verdict is Verdict.NO
    assert claims.vanishes(float("nan")).verdict is Verdict.NO
    assert claims.vanishes(1e-8 * DOWN, claims.FD_FLOOR).verdict is Verdict.YES
    assert claims.vanishes(1e-8 * UP, claims.FD_FLOOR).verdict is Verdict.NO


def test_the_bias_follows_kappa_when_equal_kappa_coincides_and_equal_product_does_not():
    assert claims.kappa_not_product(1e-9 * DOWN, 0.3).verdict is Verdict.YES
    assert claims.kappa_not_product(1e-9 * UP, 0.3).verdict is Verdict.NO
    assert claims.kappa_not_product(1e-12, 1e-9).verdict is Verdict.YES
    assert claims.kappa_not_product(1e-12, 1e-9 * DOWN).verdict is Verdict.NO


def test_the_transition_shifts_when_the_largest_shape_is_below_a_tenth():
    l1, l2 = 0.01, 0.86
    assert claims.transition_shift(3e-3, 3e-4 * DOWN, l1, l2).text == "yes (a shift of 1.0 decades)"
    assert claims.transition_shift(3e-3, 3e-5, l1, l2).text == "yes (a shift of 2.0 decades)"
    assert claims.transition_shift(3e-3, 3e-4 * UP, l1, l2).verdict is Verdict.NO
    assert claims.transition_shift(3e-3, 3e-3, l1, l2).verdict is Verdict.NO


def test_without_a_sparse_regime_or_a_crossing_the_transition_is_not_tested():
    assert claims.transition_shift(3e-3, 3e-5, 0.779, 0.764).text == (
        "not tested: min-ℓ1 does not beat min-ℓ2 on this data (error 0.7790 vs 0.7640), so there is no "
        "sparse-like regime to leave")
    assert claims.transition_shift(3e-3, 3e-5, 0.5, 0.5).text.startswith("not tested: min-ℓ1 does not beat")
    assert claims.transition_shift(None, 3e-5, 0.01, 0.86) == claims.transition_shift(3e-3, None, 0.01, 0.86)
    assert claims.transition_shift(None, 3e-5, 0.01, 0.86).text == (
        "not tested: a curve does not cross the midpoint between the min-ℓ1 and min-ℓ2 errors on this grid")
    errors = np.array([0.2, 0.9])
    assert claims.kernel_to_rich(errors, 0.5, 0.5 * UP).verdict is Verdict.YES
    assert claims.kernel_to_rich(errors, 0.5, 0.5).text.startswith("not tested: min-ℓ1 does not beat min-ℓ2")


def test_both_regimes_need_the_lowest_error_below_and_the_highest_above_the_midpoint():
    l1, l2 = 0.1, 0.9  # midpoint 0.5
    assert claims.kernel_to_rich(np.array([[0.5 * DOWN, 0.7], [0.6, 0.8]]), l1, l2).verdict is Verdict.YES
    assert claims.kernel_to_rich(np.array([[0.5 * UP, 0.7], [0.6, 0.8]]), l1, l2).verdict is Verdict.NO
    assert claims.kernel_to_rich(np.array([0.2, 0.5 * DOWN]), l1, l2).verdict is Verdict.NO
    assert claims.kernel_to_rich(np.array([0.2, 0.5 * UP]), l1, l2).verdict is Verdict.YES


def test_the_curves_collapse_below_a_hundredth():
    assert claims.collapses(1e-2 * DOWN).verdict is Verdict.YES
    assert claims.collapses(1e-2 * UP).verdict is Verdict.NO and claims.collapses(1e-2).verdict is Verdict.NO


def test_not_mirror_descent_needs_the_plain_asymmetry_to_stay_and_the_warped_to_vanish():
    assert claims.not_mirror_descent(1e-8, 1e-8 * DOWN).verdict is Verdict.YES
    assert claims.not_mirror_descent(1e-8 * DOWN, 1e-12).verdict is Verdict.NO
    assert claims.not_mirror_descent(0.1, 1e-8 * UP).verdict is Verdict.NO


def test_a_sign_flip_breaks_the_formula_when_only_sign_a_inf_lands_on_the_network():
    assert claims.sign_flip_breaks(1e-9, 1e-9 * DOWN).verdict is Verdict.YES
    assert claims.sign_flip_breaks(1e-9 * DOWN, 1e-12).verdict is Verdict.NO
    assert claims.sign_flip_breaks(1.25, 1e-9 * UP).verdict is Verdict.NO


def test_diagonal_rows_read_first_and_last_shape_and_the_largest_errors():
    rows = claims.diagonal_claims(
        small_scale(), flow_errors=[1e-12, 3e-10, 5e-11], same_kappa=2e-9, same_product=0.284,
        transitions={0.0: 3e-3, 0.5: 1e-3, 0.99: 2e-4}, errors=np.array([[0.02, 0.3], [0.05, 0.86]]),
        err_l1=0.011, err_l2=0.859, collapse=0.02, gd_gaps=[1e-3, 2e-3, 5e-4], gd_shapes=[0.0, 0.0, 0.99],
        gd_stopped=[True] * 3)
    assert [r.claim for r in rows][2] == "larger shape moves the transition to smaller α (s = 0 vs 0.99)"
    assert rows[0].ours == "max relative gap < 1e-9 on N = 7, d = 11, 3 (α, s)"
    assert rows[1].ours == "same κ: ‖Δβ‖ 2.0e-09; same α: ‖Δβ‖ = 0.28"
    assert rows[2].ours == "3.0e-03 vs 2.0e-04 (midpoint crossing, 'x' preset, seed-1993 data)"
    assert rows[3].ours == "0.0200 → 0.8600; min-ℓ1 0.0110, min-ℓ2 0.8590"
    assert rows[5].ours == "population-error gap ≤ 2.0e-03 at 3 grid points, s ∈ {0, 0.99} (curve range 0.84)"
    assert [r.agrees for r in rows] == ["yes", "no", "yes (a shift of 1.2 decades)", "yes", "no", "yes"]
    assert [r.rule.rsplit(".", 1)[1] for r in rows] == ["vanishes", "kappa_not_product", "transition_shift",
                                                       "kernel_to_rich", "collapses", "gd_close"]
    assert rows[2].thresholds == {"SHIFT_FACTOR": 10} and rows[2].key == "transition shift" and not rows[2].runs
    assert all(r.key == r.claim for i, r in enumerate(rows) if i != 2)


def test_diagonal_rows_without_a_sparse_regime_say_why_and_name_no_transition():
    rows = claims.diagonal_claims(
        small_scale(), flow_errors=[1e-12], same_kappa=1e-12, same_product=0.3,
        transitions={0.0: None, 0.9: None}, errors=np.array([[0.7, 0.8], [0.75, 0.8]]), err_l1=0.779,
        err_l2=0.764, collapse=1e-3, gd_gaps=[1e-3, 2e-3], gd_shapes=[0.0, 0.9],
        gd_stopped=[False, True])
    assert rows[2].claim == "larger shape moves the transition to smaller α (s = 0 vs 0.9)"
    assert rows[2].ours == "no transition vs no transition (midpoint crossing, 'x' preset, seed-1993 data)"
    assert [r.verdict for r in rows] == [Verdict.YES, Verdict.YES, Verdict.NOT_TESTED, Verdict.NOT_TESTED, Verdict.YES,
                                         Verdict.NOT_TESTED]


def test_beyond_mirror_rows_read_ranges_and_floors():
    vanishing = {"equal δ": ([1.0, 0.1, 0.01], [3e-2, 2e-3, 1e-4]), "unequal δ": ([1.0, 0.1, 0.01], [0.16, 0.13, 0.13])}
    rows = claims.beyond_mirror_claims(
        small_scale(), asym_plain=0.1, asym_warp=3e-9, flow_errors=[1e-12, 2e-9], gd_steps=[2835, 223],
        gd_dists=[7.9e-6, 8.1e-5], leaky_errors=[4.4e-7, 3.6e-5], rho=0.2, flip_wrong=1.25, flip_right=1e-11,
        neuron_gaps=[0.24, 0.029], vanishing=vanishing)
    assert rows[0].ours == "∂(M⁻¹) asymmetry 0.10; with warp |a|: < 1e-8"
    assert rows[1].ours == "LSODA flow vs explicit β_∞: 2.0e-09 relative, 2 (α, s), N = 7, d = 11"
    assert rows[2].ours == "223–2,835 steps; distance 8e-06–8e-05 (d = 40, N = 9, our draws of w₀)"
    assert rows[3].ours == ("Richardson-extrapolated GD within 4e-05 relative (ρ = 0.2) of the explicit endpoint on "
                            "the branch of sign(a) read from the trained neuron")
    assert rows[4].ours == "sign(a₀): off by 1.25; sign(a_∞): < 1e-9"
    assert rows[5].ours == "m = 3: per-neuron gaps 3e-02–2e-01"
    assert rows[6].ours == "equal δ: gap 3e-02 → 1e-04 as ‖w₀‖ 1 → 0.01; unequal δ: gap 2e-01 → 1e-01 as ‖w₀‖ 1 → 0.01"
    assert [r.agrees for r in rows] == ["yes", "no", "yes (same order)",
                                        "our own observation, on that branch", "our own result: yes",
                                        "our own observation", "our own result: yes; not with unequal δ"]
    # what no reachable text of the paper states is fibook's own, and its paper column says so
    assert [r.verdict for r in rows].count(Verdict.OWN) == 4
    assert all(rows[i].paper.startswith("not found in the paper's reachable text") for i in (3, 4, 5, 6))
    assert "not discussed" not in " ".join(r.paper for r in rows)  # more than the reachable text can show
    assert [r.rule.rsplit(".", 1)[1] for r in rows] == [
        "not_mirror_descent", "vanishes", "gd_same_order", "not_thresholded", "sign_flip_breaks", "not_thresholded",
        "vanishes_in_the_limit"]
    assert rows[0].thresholds == {"FD_FLOOR": 1e-8} and rows[6].thresholds == {"VANISH_MIN_SLOPE": 0.5}
    assert rows[3].thresholds == {}


def test_the_width_m_limit_reads_equal_delta_and_flags_unequal_delta_only_when_its_gap_stays():
    norms = [1.0, 0.1, 0.01]
    falls, stays = [1e-1, 1e-2, 1e-3], [0.16, 0.13, 0.13]
    assert claims.vanishes_in_the_limit({"equal δ": (norms, falls)}).verdict is Verdict.YES
    assert claims.vanishes_in_the_limit({"equal δ": (norms, falls), "unequal δ": (norms, falls)}).verdict is Verdict.YES
    assert claims.vanishes_in_the_limit({"equal δ": (norms, falls), "unequal δ": (norms, stays)}).text == (
        "yes; not with unequal δ")
    assert claims.vanishes_in_the_limit({"equal δ": (norms, stays)}).verdict is Verdict.NO


def test_a_gap_vanishes_when_it_falls_at_every_smaller_norm_with_a_slope_of_at_least_a_half():
    norms, eps = [1.0, 0.1, 0.01], 1e-6

    def power(slope):
        return [n**slope for n in norms]

    assert claims.gap_vanishes(norms, power(0.5 + eps)).verdict is Verdict.YES
    assert claims.gap_vanishes(norms, power(0.5 - eps)).verdict is Verdict.NO
    assert claims.gap_vanishes(norms, power(1.1)).verdict is Verdict.YES
    # steep, but not falling every step
    assert claims.gap_vanishes([0.01, 1.0, 0.1], [1e-4, 1.0, 1e-5]).verdict is Verdict.NO
    with pytest.raises(ValueError, match="at least two"):
        claims.gap_vanishes([1.0], [1.0])


def test_gd_is_close_below_five_percent_of_the_curve_range_and_ranges_agree_within_a_decade():
    errors = np.array([0.0, 1.0])  # range 1: the threshold is 0.05
    assert claims.gd_close([0.01, 0.05 * DOWN], errors, [True, True]).verdict is Verdict.YES
    assert claims.gd_close([0.05 * UP], errors, [True]).verdict is Verdict.NO
    assert claims.gd_close([0.01, 0.01, 0.01], errors, [True, False, False]).text == (
        "not tested: 2 of 3 GD runs reached the step cap before the training MSE fell below 1e-4")
    with pytest.raises(ValueError, match="one stop flag per gap"):
        claims.gd_close([0.01], errors, [True, True])
    assert claims.same_order((222 * 10 * DOWN, 2816 / 10 * UP), (222, 2816)).text == "yes (same order)"
    assert claims.same_order((222 * 10 * UP, 2816), (222, 2816)).verdict is Verdict.NO
    assert claims.same_order((222, 2816 / 10 * DOWN), (222, 2816)).verdict is Verdict.NO


def test_gd_is_of_the_papers_order_only_when_both_its_steps_and_its_distances_are():
    steps, dists = [222 * 10 * DOWN, 2816], [1e-5, 1e-4 * 10 * DOWN]
    assert claims.gd_same_order(steps, dists).text == "yes (same order)"
    assert claims.gd_same_order([222 * 10 * UP, 2816 * 10 * UP], dists).verdict is Verdict.NO
    assert claims.gd_same_order(steps, [1e-5 * 10 * UP, 1e-4 * 10 * UP]).verdict is Verdict.NO
    assert claims.gd_same_order(steps, [1e-5 / 10 * DOWN, 1e-4]).verdict is Verdict.NO


def test_a_verdict_without_a_threshold_may_only_report_or_be_our_own():
    branch = Finding(Verdict.CONSISTENT, " on that branch")
    assert not_thresholded(branch) is branch and branch.text == "consistent on that branch"
    assert not_thresholded(Finding(Verdict.OWN, " observation")).text == "our own observation"
    for claimed in (Finding(Verdict.YES), Finding(Verdict.NO, " (worse)"), Finding(Verdict.NOT_RESOLVED)):
        with pytest.raises(ValueError, match="decide it with a tested rule"):
            not_thresholded(claimed)
