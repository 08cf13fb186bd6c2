"""The book's verdicts on synthetic arms with known answers, just above and just below each threshold."""

import dataclasses

import pytest
from synthetic import rec

from fibook.forgetting import analysis, claims
from fibook.forgetting.analysis import Finished, NoiseFloor

EPS = 1e-6  # a nudge in pp well above rounding and well below any printed digit
# one-seed arms borrow a spread std of 0.5 pp: the difference of two has std hypot(0.5, 0.5) = 0.5 sqrt 2
NOISE = NoiseFloor(seed_std_pp=0.3, spread_std_pp=0.5, n_test=3000, seeds=3)
TWO_STD = 2 * 0.5 * 2**0.5


def arm(spread_pp, optimizer="sgd", lr=0.01, wd=0.0, radial=1.0, final_spread_pp=None, tau=1, seeds=(0,),
        **config):
    """One arm over sigma_w = 1 and e: test accuracy 0.9 and 0.9 - spread / 100 (``spread_pp`` a number, or one
    per seed), final norm 10 sigma^R; every selected checkpoint interpolates unless ``tau`` is None."""
    sigmas = (1.0, 2.718281828459045)
    per_seed = spread_pp if isinstance(spread_pp, tuple) else (spread_pp,) * len(seeds)
    records = []
    for seed, spread in zip(seeds, per_seed, strict=True):
        accs = (0.9, 0.9 - spread / 100)
        finals = (0.9, 0.9 - (spread if final_spread_pp is None else final_spread_pp) / 100)
        for s, a, fa in zip(sigmas, accs, finals, strict=True):
            records.append(rec(s, seed, a, tau, 10.0 * s**radial, optimizer=optimizer, lr=lr, wd=wd, final_acc=fa,
                               **config))
    (a,) = analysis.arms(records, show=("lr", "weight_decay"))
    return a


def finished(*arms):
    return Finished("x", "smoke", list(arms), 2 * len(arms), 2 * len(arms), len(arms))


def test_erasing_means_a_spread_below_half_of_sgds_beyond_noise_with_every_selected_predictor_interpolating():
    sgd = arm(10.0)
    assert sgd.spread_pp == pytest.approx(10.0)
    assert claims.erases(arm(5.0 - EPS, "adam"), sgd, NOISE) == "qualitatively"
    assert claims.erases(arm(5.0 + EPS, "adam"), sgd, NOISE) == "no"
    # below half, but the difference is within 2 std of it: no evidence either way
    small = arm(2 * TWO_STD - 4 * EPS)
    assert claims.erases(arm(TWO_STD - 3 * EPS, "adam"), small, NOISE).startswith(
        "not resolved: below 0.5 of SGD's spread, but the difference (+1.4 ± 0.7 pp) is within noise")
    assert claims.erases(arm(0.0, "adam"), arm(TWO_STD + EPS), NOISE) == "qualitatively"
    assert claims.erases(arm(1.0, "adam", tau=None), sgd, NOISE).startswith(
        "not tested: Adam (η = 0.01)'s selected predictor does not interpolate at 2 of 2 σ_w")


def test_a_common_norm_means_every_adaptive_radial_memory_below_a_half():
    assert claims.common_norm([arm(1, "adam", radial=0.5 - EPS), arm(1, "adamw", radial=0.1)]) == "qualitatively"
    assert claims.common_norm([arm(1, "adam", radial=0.5 + EPS), arm(1, "adamw", radial=0.1)]) == "no"


def test_optimizer_rows_name_missing_arms_and_read_each_clock():
    rows = claims.optimizer_claims([arm(10.0), arm(4.0, "adam", lr=1e-3, radial=0.2), arm(6.0, "muon", lr=0.02),
                                    arm(3.0, "msgd")], "smoke", NOISE, long_clock=[arm(1.0, "adam", epochs=6)],
                                   quick_sgd=arm(9.0))
    by_claim = {r.claim: r for r in rows}
    assert by_claim["Adam largely erases the σ_w dependence"].agrees == "qualitatively"
    # the clock at the selected checkpoint (epoch 1 of 3), not the whole run's 0.5
    assert by_claim["Adam largely erases the σ_w dependence"].ours.startswith(
        "4.0 ± 0.5 pp (1 seed; pooled seed std) (T_adapt = 0.167 at the selected checkpoints; 2 of 2 σ_w")
    long = by_claim["Adam at a longer clock largely erases it (η = 0.01, 6 epochs: T_adapt = 1 over the run; quick "
                    "σ_w grid)"]
    assert "vs SGD 9.0 ± 0.5 pp (1 seed; pooled seed std)" in long.ours and long.agrees == "qualitatively"
    same = claims.optimizer_claims([arm(10.0), arm(4.0, "adam", lr=1e-3)], "smoke", NOISE,
                                   long_clock=[arm(1.0, "adam", lr=1e-3)], quick_sgd=arm(9.0))
    assert not any("longer clock" in r.claim for r in same)  # not longer than the arm above: left out, R too
    assert by_claim["Muon leaves a small spread"].agrees == "no"
    assert by_claim["AdamW largely erases it too"].agrees == "not tested yet"
    momentum = by_claim["momentum SGD at the same raw η"].ours
    assert "T_SGD = 0.001 over the run at the raw η, as SGD's 0.001, or 0.1 at its effective step η/(1−μ) = 0.1" \
        in momentum
    assert by_claim["adaptive methods drive the weights to a common norm"].ours == \
        "R: Adam (η = 0.001, 3 epochs) 0.20; SGD 1.00"
    longer = by_claim["adaptive methods drive the weights to a common norm, at the longer clocks above"]
    assert longer.ours == "R on the quick σ_w grid: Adam (η = 0.01, 6 epochs) 1.00; SGD 1.00" and longer.agrees == "no"
    assert "T_adapt = 93.6 in the book's reconstruction" in long.paper
    steps = 312 * 300  # the digest's reconstruction: 300 epochs of floor(40,000 / 128) steps
    assert claims.reconstructed_clock("muon") == ("T_adapt", pytest.approx(0.02 * steps))
    assert claims.reconstructed_clock("adamw") == ("T_adapt", pytest.approx(93.6))
    assert claims.reconstructed_clock("sgd+L2") == ("T_L2", pytest.approx(1e-2 * 1e-2 * steps))
    assert claims.reconstructed_clock("msgd") == ("T_SGD", pytest.approx(7.3125e-4))
    assert claims.arm_key(arm(1.0, wd=0.06)) == "sgd+L2" and claims.arm_key(arm(1.0, "adamw", wd=0.01)) == "adamw"


def test_a_method_with_seeds_on_the_quick_grid_is_judged_there_with_paired_seeds():
    seeds = (0, 1, 2)
    main = [arm(10.0), arm(4.0, "adam", lr=1e-3)]
    # on the quick grid over three seeds: SGD 9, 9.2, 9.4 pp; Adam 4.4 pp below it at every seed (below half)
    quick_sgd = arm((9.0, 9.2, 9.4), seeds=seeds)
    below = arm((4.6 - EPS, 4.6 - EPS, 4.6 - EPS), "adam", lr=1e-3, seeds=seeds)
    row = {r.claim: r for r in claims.optimizer_claims(main, "smoke", NOISE, quick_sgd=quick_sgd, quick=[below])}
    adam = row["Adam largely erases the σ_w dependence"]
    assert adam.ours.startswith("quick σ_w grid: 4.6 ± 0.0 pp (3 seeds; std over seeds)")
    assert "vs SGD 9.2 ± 0.2 pp (3 seeds; std over seeds)" in adam.ours
    assert adam.ours.endswith("4.0 pp on the main σ_w grid (1 seed)") and adam.agrees == "qualitatively"
    above = arm((4.6 + EPS, 4.6 + EPS, 4.6 + EPS), "adam", lr=1e-3, seeds=seeds)  # not below half of 9.2
    row = {r.claim: r for r in claims.optimizer_claims(main, "smoke", NOISE, quick_sgd=quick_sgd, quick=[above])}
    assert row["Adam largely erases the σ_w dependence"].agrees == "no"
    one_seed = arm(1.0, "adam", lr=1e-3)  # one seed on the quick grid: the main grid's arm decides
    row = {r.claim: r for r in claims.optimizer_claims(main, "smoke", NOISE, quick_sgd=quick_sgd, quick=[one_seed])}
    assert row["Adam largely erases the σ_w dependence"].ours.startswith("4.0 ± 0.5 pp (1 seed")
    other = arm((1.0, 1.0, 1.0), "adam", lr=2e-3, seeds=seeds)  # another learning rate: not the same arm
    assert claims.seeded_twin(main[1], [other]) is None


def test_longer_training_keeps_the_spread_when_both_spreads_keep_more_than_half():
    short = arm(10.0, final_spread_pp=8.0, epochs=40)
    assert claims.keeps_spread(short, arm(5.0 + EPS, final_spread_pp=4.0 + EPS)) == "qualitatively"
    assert claims.keeps_spread(short, arm(5.0 - EPS, final_spread_pp=8.0)) == "no"
    assert claims.keeps_spread(short, arm(10.0, final_spread_pp=4.0 - EPS)) == "no"
    assert claims.keeps_spread(short, arm(10.0, tau=None)).startswith("not tested")


def test_l2_erases_outright_below_one_pp_and_qualitatively_below_half_beyond_noise():
    base = arm(10.0)
    assert claims.l2_erases(base, arm(1.0 - EPS), NOISE) == "yes"
    assert claims.l2_erases(base, arm(1.0 + EPS), NOISE) == "qualitatively: 10.0× smaller, not ≈ 0.3 pp"
    assert claims.l2_erases(base, arm(5.0 - EPS), NOISE).startswith("qualitatively: 2.0× smaller")
    assert claims.l2_erases(base, arm(5.0 + EPS), NOISE) == "no"
    # below 1 pp, but the baseline exceeds it by less than 2 standard errors of the difference
    assert claims.l2_erases(arm(TWO_STD + 0.5 - EPS), arm(0.5), NOISE) == "not resolved: within noise"
    assert claims.l2_erases(arm(TWO_STD + 0.5 + EPS), arm(0.5), NOISE) == "yes"
    assert claims.l2_erases(arm(0.5), arm(TWO_STD + 0.5 + EPS), NOISE) == "no: L2 raised the spread"


def test_more_l2_must_lower_the_spread_beyond_noise_along_every_row_without_rising_beyond_it():
    falling = [arm(3.0), arm(3.0 - TWO_STD / 2), arm(3.0 - TWO_STD - EPS)]
    within = [arm(3.0), arm(3.0), arm(3.0 - TWO_STD + EPS)]
    rising = [arm(3.0), arm(3.0 + TWO_STD + EPS), arm(0.0)]
    assert claims.falls(falling, NOISE) and not claims.falls(within, NOISE) and not claims.falls(rising, NOISE)
    assert claims.falls([arm(3.0), arm(3.0 + TWO_STD - EPS), arm(0.0)], NOISE)  # a rise within noise is allowed
    assert claims.falls_with_l2({"a": falling, "b": falling}, NOISE) == "qualitatively"
    assert claims.falls_with_l2({"a": falling, "b": within}, NOISE) == "partly: only a"
    assert claims.falls_with_l2({"b": within}, NOISE) == "no"
    assert claims.falls_with_l2({"a": falling + [arm(0.0, tau=None)]}, NOISE).startswith("not tested")


def test_the_l2_term_lowers_the_spread_when_its_control_is_higher_beyond_noise():
    control = arm(5.0)
    assert claims.l2_lowers(control, arm(5.0 - TWO_STD - EPS, wd=0.1), NOISE) == "yes"
    assert claims.l2_lowers(control, arm(5.0 - TWO_STD + EPS, wd=0.1), NOISE) == "not resolved: within noise"
    assert claims.l2_lowers(control, arm(5.0 + TWO_STD + EPS, wd=0.1), NOISE) == "no: L2 raised the spread"
    assert claims.l2_lowers(arm(5.0, tau=None), arm(0.0, wd=0.1), NOISE).startswith("not tested")


def test_batch_size_rank_correlation_must_exceed_a_half_with_a_rise_beyond_noise():
    rise = claims.spread_difference(arm(TWO_STD + EPS), arm(0.0), NOISE)
    assert claims.rises_with_batch(0.5 + EPS, rise) == "qualitatively"
    assert claims.rises_with_batch(0.5, rise) == "no"
    within = claims.spread_difference(arm(TWO_STD - EPS), arm(0.0), NOISE)
    assert claims.rises_with_batch(1.0, within) == "no"
    for rho, d in ((None, rise), (1.0, None)):  # fewer than three interpolating batch sizes
        assert claims.rises_with_batch(rho, d).startswith("not tested: no rank correlation")


def test_time_l2_batch_rows_wait_for_unfinished_experiments():
    empty = Finished("long_training", "smoke", [], 1, 4, 2)
    l2 = finished(arm(10.0, lr=0.01), arm(2.0, lr=0.1), arm(1.5, lr=0.1, wd=0.06), arm(5.0, lr=0.01, wd=0.06))
    l2_clock = finished(arm(10.0), arm(9.5, wd=0.01), arm(5.0, wd=0.06), arm(8.0, epochs=6), arm(7.9, wd=0.1, epochs=6))
    batch = finished(*(arm(s, batch_size=b) for s, b in ((3.0, 16), (5.0, 64), (8.0, 128))))
    rows = claims.time_l2_batch_claims(empty, l2, l2_clock, batch, lrs=[0.01, 0.1], wds=[0.0, 0.06], scale="smoke",
                                       noise=NOISE)
    assert rows[0].ours == "not finished (1 of 4 runs finished, 0 of 2 arms complete)"
    assert rows[0].agrees == "not tested yet"
    assert [r.agrees for r in rows[1:]] == ["qualitatively: 6.7× smaller, not ≈ 0.3 pp",
                                            "partly: only η = 0.01, 3 epochs", "yes", "qualitatively"]
    assert rows[2].ours.startswith("η = 0.01, 3 epochs: 10.0 → 9.5 → 5.0 pp at λ = 0, 0.01, 0.06; "
                                   "η = 0.01, 6 epochs: 8.0 → 7.9 pp")
    assert "rank correlation +1.00" in rows[4].ours


CONSISTENT = "consistent (η and N were inferred from these figures)"  # not a confirmation: circular by design


def test_a_recomputed_clock_agrees_when_it_rounds_to_the_quoted_digits():
    assert claims.matches_quoted(7.26e-4, "7.3e-4") == claims.matches_quoted(7.34e-4, "7.3e-4") == CONSISTENT
    assert claims.matches_quoted(7.24e-4, "7.3e-4") == claims.matches_quoted(7.36e-4, "7.3e-4") == "no"


def test_scale_invariance_needs_loss_and_cosine_below_the_tolerance():
    tol = claims.INVARIANCE_TOL
    assert claims.scale_invariant([2.0, 2.0 + 0.5 * tol, 2.0 - 0.5 * tol], [0.0, 0.9 * tol, -0.9 * tol]) == "yes"
    assert claims.scale_invariant([2.0, 2.0 + 2 * tol], [0.0, 0.0]) == "no"
    assert claims.scale_invariant([2.0, 2.0], [0.0, 1.1 * tol]) == "no"


def test_sigma_scales_the_logits_below_the_floor():
    assert claims.scales_logits(claims.LOGIT_FLOOR * (1 - EPS)) == "yes"
    assert claims.scales_logits(claims.LOGIT_FLOOR * (1 + EPS)) == "no"


def test_question_rows_read_the_logit_floor():
    floor = claims.LOGIT_FLOOR
    below_floor = claims.question_claims(7.31e-4, 1.22e-2, [1.0, 1.0], [0.0, 0.0], 0.9 * floor, "smoke", 4)
    assert [r.agrees for r in below_floor] == [CONSISTENT, CONSISTENT, "yes", "yes"]
    assert "to < 1e-4 relative" in below_floor[3].ours and "smoke ResNet-9 w4" in below_floor[3].ours
    above = claims.question_claims(7.31e-4, 1.22e-2, [1.0, 1.1], [0.0, 0.0], 1.1 * floor, "smoke", 4)
    assert [r.agrees for r in above] == [CONSISTENT, CONSISTENT, "no", "no"] and "1.1e-04" in above[3].ours


def sgd_rows(a, noise=None, late=None, late_noise=None):
    """The sgd_remembers rows by claim, the late reading defaulting to ``a`` and the noise to none finished."""
    empty = Finished("seed_noise", "smoke", [], 0, 6, 1)
    rows = claims.sgd_remembers_claims(a, noise or empty, late or a, late_noise or empty, "smoke")
    return {r.key: r for r in rows}


HEADLINE, LATE = claims.HEADLINE, claims.HEADLINE + claims.LATE_READING
SEEDS, LATE_SEEDS = claims.SEED_NOISE, claims.SEED_NOISE + claims.LATE_READING


def test_sgd_remembers_thresholds_on_spread_radial_memory_and_seed_noise():
    assert sgd_rows(arm(5.0 + EPS))[HEADLINE].agrees == "qualitatively"
    assert sgd_rows(arm(5.0 - EPS))[HEADLINE].agrees == "no"
    radial = "the final weight norm stays tied to σ_w under SGD"
    assert sgd_rows(arm(8.0, radial=0.8 + EPS))[radial].agrees == "yes"
    assert sgd_rows(arm(8.0, radial=0.8 - EPS))[radial].agrees == "no"
    assert sgd_rows(arm(8.0))[SEEDS].agrees == sgd_rows(arm(8.0))[LATE_SEEDS].agrees == "not tested yet"
    assert sgd_rows(arm(8.0))["every σ_w's selected predictor interpolates"].agrees == "yes"


def test_the_headline_applies_the_interpolation_rule_and_the_late_reading_is_its_own_row():
    early = arm(8.0, tau=2)  # interpolates at epoch 2, selected at epoch 1
    rows = sgd_rows(early, late=arm(6.0))
    fits = rows["every σ_w's selected predictor interpolates"]
    assert fits.agrees == "no: selected before it fits the training set at σ_w = 1, 2.71828"
    assert fits.ours == "0 of 2 σ_w at the selected checkpoint (2 reach 99.5 % at some epoch)"
    assert rows[HEADLINE].agrees.startswith("not tested: SGD (η = 0.01)'s selected predictor does not interpolate "
                                            "at 2 of 2 σ_w")
    assert rows[LATE].agrees == "qualitatively" and rows[LATE].ours.startswith("6.0 pp (smoke: fashion_mnist")
    assert rows[HEADLINE].rule == rows[LATE].rule == "fibook.forgetting.claims.large_spread"
    assert rows[HEADLINE].thresholds == {"LARGE_SPREAD_PP": 5.0}


def test_far_above_seed_noise_means_the_mean_spread_above_three_times_the_largest_seed_std():
    # seed spreads s and s + 2 pp: seed std at sigma_w = e is sqrt(2) pp, at sigma_w = 1 zero
    threshold = 3 * 2**0.5 - 1  # mean spread s + 1 against 3 sqrt 2
    assert claims.above_seed_noise(arm((threshold + EPS, threshold + 2 + EPS), seeds=(0, 1))) == "yes"
    assert claims.above_seed_noise(arm((threshold - EPS, threshold + 2 - EPS), seeds=(0, 1))) == "no"
    assert claims.above_seed_noise(arm(8.0)).startswith("not tested: fewer than two seeds")
    assert claims.above_seed_noise(arm((8.0, 9.0), seeds=(0, 1), tau=None)).startswith(
        "not tested: SGD (η = 0.01)'s selected predictor does not interpolate")


def test_the_seed_noise_row_reads_every_seed_of_the_noise_arm():
    records = [rec(s, seed, acc, 1, 10.0 * s) for seed, accs in ((0, (0.90, 0.80)), (1, (0.92, 0.80)))
               for s, acc in zip((1.0, 2.0), accs, strict=True)]
    (noise_arm,) = analysis.arms(records)
    row = sgd_rows(arm(8.0), noise=finished(noise_arm))[SEEDS]
    # spreads 10 and 12 pp (mean 11); seed std at sigma 1: std(90, 92) = 1.41 pp, so 11 > 3 x 1.41
    assert row.ours.startswith("spread 11.0 pp (mean of 2 seeds) vs per-σ_w seed std ≤ 1.41 pp")
    assert row.agrees == "yes"


def depth_arm(arch, interpolated_last):
    records = [rec(s, 0, 0.9, 1 if (s < 2 or interpolated_last) else None, 10.0 * s, arch=arch) for s in (1.0, 2.0)]
    (a,) = analysis.arms(records, show=("arch",))
    return a


def test_deep_nets_fail_when_none_interpolates_at_the_largest_sigma():
    shallow = depth_arm("resnet9", True)
    failing, fitting = depth_arm("resnet20", False), depth_arm("resnet32", True)
    assert claims.deep_nets_fail([failing]) == "qualitatively"
    assert claims.deep_nets_fail([failing, fitting]).startswith("no")
    for rise, verdict in ((1.0 - EPS, "qualitatively"), (1.0 + EPS, "not tested: train accuracy still rising")):
        r = failing.records[-1]  # sigma_w = 2: train accuracy 0.9 at epoch 2, then + rise at epoch 3
        history = dict(r.history, train_acc=r.history["train_acc"][:3] + [0.9 + rise / 100])
        records = failing.records[:-1] + [dataclasses.replace(r, history=history)]
        (a,) = analysis.arms(records, show=("arch",))
        assert claims.late_rise_pp(a) == pytest.approx(rise)
        assert claims.deep_nets_fail([a]).startswith(verdict)
    (row,) = claims.depth_claims(finished(failing, shallow), "smoke")  # listed from the shallowest
    assert row.ours.startswith("resnet9: interpolates at 2 of 2 σ_w; resnet20: interpolates at 1 of 2 σ_w")
    assert row.agrees == "qualitatively"
    (waiting,) = claims.depth_claims(finished(shallow), "smoke")
    assert waiting.agrees == "not tested yet"


def point(spread, value, run_value=None, optimizer="adam", lr=1e-3, epochs=3, tau=1, wd=0.0):
    """A ClockPoint of an arm of ``spread`` pp on T_adapt, read at ``value`` (the whole run: ``run_value``)."""
    a = arm(spread, optimizer, lr=lr, wd=wd, epochs=epochs, tau=tau)
    return analysis.ClockPoint("x", a, "T_adapt", value, value, value, value if run_value is None else run_value,
                               analysis.spread_estimate(a, NOISE))


def test_a_clock_claim_needs_rho_at_most_minus_a_half_and_a_drop_beyond_noise():
    drop = analysis.Difference(1.0, 0.5 - EPS, False)
    assert claims.falls_with_clock(-0.5, drop) == "qualitatively"
    assert claims.falls_with_clock(-0.5 + EPS, drop).startswith("weakly (ρ = -0.50 > −0.5")
    assert claims.falls_with_clock(-1.0, analysis.Difference(1.0, 0.5 + EPS, False)).startswith("weakly")
    assert claims.falls_with_clock(-1.0, analysis.Difference(-1.0, 0.1, False)).startswith("weakly")
    assert claims.falls_with_clock(-EPS, drop).startswith("weakly") and claims.falls_with_clock(0.0, drop) == "no"
    assert claims.falls_with_clock(None, None).startswith("not tested: no rank correlation")


def test_the_clock_trend_counts_only_arms_whose_selected_predictors_interpolate():
    pts = [point(9.0, 1.0, lr=1e-3), point(5.0, 2.0, lr=2e-3), point(1.0, 3.0, lr=3e-3),
           point(20.0, 4.0, lr=4e-3, tau=None)]
    included, rho, drop = claims.trend(pts, "T_adapt", NOISE)
    assert [p.value for p in included] == [1.0, 2.0, 3.0] and rho == pytest.approx(-1.0)
    assert drop.value == pytest.approx(8.0) and not drop.paired
    (row,) = [r for r in claims.clock_claims(pts, NOISE, "smoke") if r.claim.startswith("a larger T_adapt")]
    assert row.agrees == "qualitatively"
    assert row.ours.startswith("3 arms (1 left out: selected predictor does not interpolate); ρ = -1.00")


def test_equal_clock_pairs_collapse_when_their_spreads_agree_within_noise():
    same = [point(5.0, 1.0, run_value=2.0, lr=1e-3, epochs=3), point(5.0 - TWO_STD + EPS, 1.5, run_value=2.0,
                                                                      lr=5e-4, epochs=6)]
    apart = [same[0], point(5.0 - TWO_STD - EPS, 1.5, run_value=2.0, lr=5e-4, epochs=6)]
    other = [same[0], point(1.0, 1.0, run_value=2.0 * (1 + 1e-6), lr=5e-4, epochs=6)]
    assert len(analysis.equal_clock_pairs(same)) == 1 and analysis.equal_clock_pairs(other) == []
    decay = [point(5.0, 1.0, run_value=2.0, optimizer="adamw", wd=0.01),  # the same sum of eta, another decay
             point(4.0, 1.0, run_value=2.0, optimizer="adamw", wd=0.03)]
    assert analysis.equal_clock_pairs(decay) == []
    assert len(analysis.equal_clock_pairs([decay[0], point(4.0, 1.0, run_value=2.0, optimizer="adamw", wd=0.01,
                                                          lr=5e-4, epochs=6)])) == 1
    for pts, verdict in ((same, "not resolved: within noise (no equivalence margin is set)"), (apart, "no")):
        (row,) = [r for r in claims.clock_claims(pts, NOISE, "smoke") if r.claim.startswith("equal")]
        assert row.agrees == verdict and "T_adapt = 2 over each run (1 and 1.5 at the selected checkpoints)" in row.ours


def test_the_longest_clock_arm_of_each_mechanism_is_the_longest_that_interpolates():
    pts = [point(5.0, 1.0, run_value=2.0, lr=1e-3), point(3.0, 2.0, run_value=4.0, lr=2e-3),
           point(1.0, 3.0, run_value=8.0, lr=4e-3, tau=None), point(2.0, 1.0, run_value=9.0, optimizer="muon")]
    longest = analysis.longest_clock_arms(pts)
    assert [(a.config.optimizer, a.config.lr) for a in longest] == [("adam", 2e-3), ("muon", 1e-3)]
    assert analysis.longest_clock_arms(pts, mechanisms=("AdamW",)) == []


def test_a_grid_too_short_for_a_row_says_so_rather_than_waiting():
    two = finished(*(arm(s, batch_size=b) for s, b in ((3.0, 16), (8.0, 128))))  # finished: 4 of 4 runs
    rows = claims.time_l2_batch_claims(two, two, two, two, lrs=[0.01], wds=[0.0], scale="smoke", noise=NOISE)
    assert rows[-1].agrees == "not tested: the grid of this scale lacks three batch sizes (a trend needs three)"
    assert rows[-1].rule == "fibook.forgetting.claims.rises_with_batch" and len(rows[-1].runs) == 4
    assert rows[-1].ours == "x at scale 'smoke': 4 of 4 runs finished, 2 of 2 arms complete"


def test_an_equal_clock_pair_is_named_by_its_factors_whichever_arm_comes_first():
    from synthetic import grid_records

    from fibook.forgetting import analysis

    (fast,) = analysis.arms(grid_records(5.0, (0.1, 2.5), (0,), 40, optimizer="adam", lr=0.01))
    (slow,) = analysis.arms(grid_records(5.0, (0.1, 2.5), (0,), 80, optimizer="adam", lr=0.005))
    assert claims.pair_change(fast, slow) == claims.pair_change(slow, fast) == "lr ×0.5, epochs ×2"
    assert claims.pair_change(fast, fast) == "same settings"
