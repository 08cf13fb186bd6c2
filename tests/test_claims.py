"""The book's verdicts on synthetic arms with known answers, just above and just below each threshold."""

import pytest
from synthetic import rec

from fibook.forgetting import analysis, claims
from fibook.forgetting.analysis import Finished

EPS = 1e-6  # a nudge in pp well above rounding and well below any printed digit


def arm(spread_pp, optimizer="sgd", lr=0.01, wd=0.0, radial=1.0, final_spread_pp=None, **config):
    """One arm over sigma_w = 1 and e: test accuracy 0.9 and 0.9 - spread / 100, final norm 10 sigma^R."""
    sigmas = (1.0, 2.718281828459045)
    accs = (0.9, 0.9 - spread_pp / 100)
    finals = (0.9, 0.9 - (spread_pp if final_spread_pp is None else final_spread_pp) / 100)
    records = []
    for s, a, fa in zip(sigmas, accs, finals, strict=True):
        records.append(rec(s, 0, a, 1, 10.0 * s**radial, optimizer=optimizer, lr=lr, wd=wd, final_acc=fa, **config))
    (a,) = analysis.arms(records, show=("lr", "weight_decay"))
    return a


def finished(*arms):
    return Finished("x", "smoke", list(arms), 2 * len(arms), 2 * len(arms), len(arms))


def test_erasing_means_a_spread_below_half_of_sgds():
    sgd = arm(10.0)
    assert sgd.spread_pp == pytest.approx(10.0)
    assert claims.erases(arm(5.0 - EPS, "adam"), sgd) == "qualitatively"
    assert claims.erases(arm(5.0 + EPS, "adam"), sgd) == "no"


def test_a_common_norm_means_every_adaptive_radial_memory_below_a_half():
    assert claims.common_norm([arm(1, "adam", radial=0.5 - EPS), arm(1, "adamw", radial=0.1)]) == "qualitatively"
    assert claims.common_norm([arm(1, "adam", radial=0.5 + EPS), arm(1, "adamw", radial=0.1)]) == "no"


def test_optimizer_rows_name_missing_arms_and_read_each_clock():
    rows = claims.optimizer_claims([arm(10.0), arm(4.0, "adam", lr=1e-3, radial=0.2), arm(6.0, "muon", lr=0.02),
                                    arm(3.0, "msgd")], "smoke")
    by_claim = {r.claim: r for r in rows}
    assert by_claim["Adam largely erases the σ_w dependence"].agrees == "qualitatively"
    assert by_claim["Adam largely erases the σ_w dependence"].ours.startswith("4.0 pp (T_adapt = 0.5; 2 of 2 σ_w")
    assert by_claim["Muon leaves a small spread"].agrees == "no"
    assert by_claim["AdamW largely erases it too"].agrees == "not tested"
    assert "η/(1−μ) = 0.1" in by_claim["momentum SGD at the same raw η"].ours
    assert by_claim["adaptive methods drive the weights to a common norm"].ours == "R: Adam 0.20; SGD 1.00"
    assert claims.arm_key(arm(1.0, wd=0.06)) == "sgd+L2" and claims.arm_key(arm(1.0, "adamw", wd=0.01)) == "adamw"


def test_longer_training_keeps_the_spread_when_both_spreads_keep_more_than_half():
    short = arm(10.0, final_spread_pp=8.0, epochs=40)
    assert claims.keeps_spread(short, arm(5.0 + EPS, final_spread_pp=4.0 + EPS)) == "qualitatively"
    assert claims.keeps_spread(short, arm(5.0 - EPS, final_spread_pp=8.0)) == "no"
    assert claims.keeps_spread(short, arm(10.0, final_spread_pp=4.0 - EPS)) == "no"


def test_l2_erases_outright_below_one_pp_and_qualitatively_below_half():
    base = arm(10.0)
    assert claims.l2_erases(base, arm(1.0 - EPS)) == "yes"
    assert claims.l2_erases(base, arm(1.0 + EPS)) == "qualitatively: 10.0× smaller, not ≈ 0.3 pp"
    assert claims.l2_erases(base, arm(5.0 - EPS)).startswith("qualitatively: 2.0× smaller")
    assert claims.l2_erases(base, arm(5.0 + EPS)) == "no"


def test_more_l2_must_lower_the_spread_along_every_learning_rate():
    falling, flat = [arm(3.0), arm(2.0), arm(1.0)], [arm(3.0), arm(3.0), arm(1.0)]
    assert claims.falls_with_l2({0.01: falling, 0.1: falling}) == "qualitatively"
    assert claims.falls_with_l2({0.01: falling, 0.1: flat}) == "partly: only at η = 0.01"
    assert claims.falls_with_l2({0.01: flat}) == "no"


def test_l2_not_the_rate_when_adding_l2_lowers_the_spread_more_than_the_rate_did():
    base = arm(10.0)
    assert claims.l2_not_lr(base, arm(6.0), arm(2.0 - EPS)) == "yes"  # rate 4 pp, L2 4 pp + eps
    assert claims.l2_not_lr(base, arm(6.0), arm(2.0 + EPS)).startswith("no")


def test_batch_size_rank_correlation_must_exceed_a_half():
    assert claims.rises_with_batch(0.5 + EPS) == "qualitatively"
    assert claims.rises_with_batch(0.5) == "no" and claims.rises_with_batch(None) == "no"


def test_time_l2_batch_rows_wait_for_unfinished_experiments():
    empty = Finished("long_training", "smoke", [], 1, 4, 2)
    l2 = finished(arm(10.0, lr=0.01), arm(2.0, lr=0.1), arm(1.5, lr=0.1, wd=0.06), arm(5.0, lr=0.01, wd=0.06))
    batch = finished(*(arm(s, batch_size=b) for s, b in ((3.0, 16), (5.0, 64), (8.0, 128))))
    rows = claims.time_l2_batch_claims(empty, l2, batch, lrs=[0.01, 0.1], wds=[0.0, 0.06], scale="smoke")
    assert rows[0].ours == "not finished (1 of 4 runs finished, 0 of 2 arms complete)"
    assert rows[0].agrees == "not tested yet"
    assert [r.agrees for r in rows[1:]] == ["qualitatively: 6.7× smaller, not ≈ 0.3 pp", "qualitatively",
                                            "no: here the larger learning rate alone accounts for the drop",
                                            "qualitatively"]
    assert "rank correlation +1.00" in rows[4].ours


def test_a_recomputed_clock_agrees_when_it_rounds_to_the_quoted_digits():
    assert claims.matches_quoted(7.26e-4, "7.3e-4") == claims.matches_quoted(7.34e-4, "7.3e-4") == "yes"
    assert claims.matches_quoted(7.24e-4, "7.3e-4") == claims.matches_quoted(7.36e-4, "7.3e-4") == "no"


def test_scale_invariance_needs_loss_and_cosine_below_the_tolerance():
    tol = claims.INVARIANCE_TOL
    assert claims.scale_invariant([2.0, 2.0 + 0.5 * tol, 2.0 - 0.5 * tol], [0.0, 0.9 * tol, -0.9 * tol])
    assert not claims.scale_invariant([2.0, 2.0 + 2 * tol], [0.0, 0.0])
    assert not claims.scale_invariant([2.0, 2.0], [0.0, 1.1 * tol])


def test_question_rows_read_the_logit_floor():
    floor = claims.LOGIT_FLOOR
    below_floor = claims.question_claims(7.31e-4, 1.22e-2, [1.0, 1.0], [0.0, 0.0], 0.9 * floor, "smoke", 4)
    assert [r.agrees for r in below_floor] == ["yes", "yes", "yes", "yes"]
    assert "to < 1e-4 relative" in below_floor[3].ours and "smoke ResNet-9 w4" in below_floor[3].ours
    above = claims.question_claims(7.31e-4, 1.22e-2, [1.0, 1.1], [0.0, 0.0], 1.1 * floor, "smoke", 4)
    assert [r.agrees for r in above] == ["yes", "yes", "no", "no"] and "1.1e-04" in above[3].ours


def test_sgd_remembers_thresholds_on_spread_radial_memory_and_seed_noise():
    sgd = claims.sgd_remembers_claims
    empty = Finished("seed_noise", "smoke", [], 0, 6, 1)
    assert sgd(arm(5.0 + EPS), empty, "smoke")[0].agrees == "qualitatively"
    assert sgd(arm(5.0 - EPS), empty, "smoke")[0].agrees == "no"
    assert sgd(arm(8.0, radial=0.8 + EPS), empty, "smoke")[2].agrees == "yes"
    assert sgd(arm(8.0, radial=0.8 - EPS), empty, "smoke")[2].agrees == "no"
    assert sgd(arm(8.0), empty, "smoke")[3].agrees == "not tested yet"
    assert claims.above_seed_noise([3.0 + EPS, 3.0 + EPS], [0.5, 1.0])
    assert not claims.above_seed_noise([3.0 - EPS, 3.0 - EPS], [0.5, 1.0])


def test_the_seed_noise_row_reads_every_seed_of_the_noise_arm():
    records = [rec(s, seed, acc, 1, 10.0 * s) for seed, accs in ((0, (0.90, 0.80)), (1, (0.92, 0.80)))
               for s, acc in zip((1.0, 2.0), accs, strict=True)]
    (noise_arm,) = analysis.arms(records)
    row = claims.sgd_remembers_claims(arm(8.0), finished(noise_arm), "smoke")[3]
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
    (row,) = claims.depth_claims(finished(failing, shallow), "smoke")  # listed from the shallowest
    assert row.ours.startswith("resnet9: interpolates at 2 of 2 σ_w; resnet20: interpolates at 1 of 2 σ_w")
    assert row.agrees == "qualitatively"
    (waiting,) = claims.depth_claims(finished(shallow), "smoke")
    assert waiting.agrees == "not tested yet"


def test_a_clock_claim_needs_rho_at_most_minus_a_half():
    assert claims.falls_with_clock(-0.5) == "qualitatively"
    assert claims.falls_with_clock(-0.5 + EPS).startswith("weakly")
    assert claims.falls_with_clock(-EPS).startswith("weakly") and claims.falls_with_clock(0.0) == "no"
    assert claims.falls_with_clock(None) == "not tested yet"
    rows = claims.clock_claims({"T_SGD": [(1.0, 9.0), (2.0, 5.0), (3.0, 1.0)], "T_L2": [(1.0, 2.0)]}, "smoke")
    assert [r.agrees for r in rows] == ["qualitatively", "not tested yet"]
    assert rows[0].ours == "3 arms; rank correlation of spread with T_SGD: -1.00 (smoke)"
