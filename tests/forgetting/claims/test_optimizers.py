"""The verdicts of the optimizers chapter (:mod:`fibook.forgetting.claims.optimizers`) on arms with known
spreads and radial memories: just above and below each threshold, and with too little data to decide."""

import math

import pytest
from known_arms import (
    EPS,
    H3,
    LOG_SIGMAS,
    NOISE,
    R_H,
    R_SE,
    SE2,
    WOBBLE,
    arm,
    flat,
    radial_arm,
    scattered,
)
from scipy.stats import linregress
from synthetic import t975

from fibook.claims import Verdict
from fibook.forgetting import paper
from fibook.forgetting.claims import (
    conditions,
    optimizers,
)


def test_erasing_means_a_spread_below_half_of_sgds_beyond_noise():
    sgd = flat(10.0)
    # c = spread - 0.5 x SGD's = m - 5, paired over three seeds
    assert optimizers.erases(scattered(5.0 - H3 - EPS, "adam"), sgd, NOISE).verdict is Verdict.QUALITATIVELY
    assert optimizers.erases(scattered(5.0 - H3 + EPS, "adam"), sgd, NOISE).text.startswith(
        "not resolved: spread − 0.5 × SGD's is -1.5 pp, 95 % [-3.0, +0.0] (paired over 3 seeds)")  # upper end -EPS
    assert optimizers.erases(scattered(5.0 + H3 - EPS, "adam"), sgd, NOISE).verdict is Verdict.NOT_RESOLVED
    assert optimizers.erases(scattered(5.0 + H3 + EPS, "adam"), sgd, NOISE).verdict is Verdict.NO


def test_erasing_one_seed_arms_reads_the_borrowed_std_on_its_degrees_of_freedom():
    h = t975(4) * math.hypot(0.5, 0.5 * 0.5)  # unpaired: se = hypot(0.5, 0.5 x 0.5) on the pool's 4 dof
    assert optimizers.erases(arm(5.0 - h - EPS, "adam"), arm(10.0), NOISE).verdict is Verdict.QUALITATIVELY
    assert optimizers.erases(arm(5.0 - h + EPS, "adam"), arm(10.0), NOISE).verdict is Verdict.NOT_RESOLVED
    assert optimizers.erases(arm(5.0 + h + EPS, "adam"), arm(10.0), NOISE).verdict is Verdict.NO


def test_erasing_with_too_little_data_is_not_resolved_or_not_tested():
    sgd = flat(10.0)
    m = 5.0 - H3 - 1.0  # below half of SGD's beyond the noise of three seeds
    assert optimizers.erases(scattered(m, "adam"), sgd, NOISE).verdict is Verdict.QUALITATIVELY
    # two seeds: the same contrast, but a t quantile of 12.7 on 1 degree of freedom
    assert 5.0 - m < t975(1) * SE2
    assert optimizers.erases(scattered(m, "adam", seeds=(0, 1)), flat(10.0, seeds=(0, 1)), NOISE).text.startswith(
        "not resolved")
    assert optimizers.erases(arm(0.0, "adam"), arm(10.0), None).text.startswith(
        "not tested: no error bar (one seed and no pooled seed std at this preset)")
    assert optimizers.erases(scattered(1.0, "adam", tau=None), sgd, NOISE).text.startswith(
        "not tested: Adam (η = 0.01)'s selected predictor does not interpolate at 2 of 2 σ_w")

def test_the_radial_memory_of_the_test_arms_has_the_hand_computed_interval():
    e = radial_arm(0.3).radial_memory_estimate()
    fit = linregress(LOG_SIGMAS, 0.3 * LOG_SIGMAS + WOBBLE)
    assert e.value == pytest.approx(0.3) == pytest.approx(fit.slope) and e.se == pytest.approx(R_SE) and e.df == 2


def test_a_common_norm_means_every_adaptive_radial_memory_below_a_half_beyond_noise():
    other = radial_arm(0.1, "adamw")
    assert optimizers.common_norm([radial_arm(0.5 - R_H - EPS), other]).verdict is Verdict.QUALITATIVELY
    assert optimizers.common_norm([radial_arm(0.5 - R_H + EPS), other]).text.startswith("not resolved: R − 0.5 is")
    assert optimizers.common_norm([radial_arm(0.5 + R_H - EPS), other]).verdict is Verdict.NOT_RESOLVED
    assert optimizers.common_norm([radial_arm(0.5 + R_H + EPS), other]).verdict is Verdict.NO
    two = radial_arm(0.0, sigmas=LOG_SIGMAS[:2], wobble=WOBBLE[:2])  # two sigma_w: no interval on R
    assert optimizers.common_norm([two, other]).text == (
        "not tested: no interval on R (fewer than three σ_w that did not diverge)")
    wide = radial_arm(0.1, wobble=10 * WOBBLE)  # R far below a half, but its interval too wide to show it
    assert 0.5 - 0.1 < t975(2) * linregress(LOG_SIGMAS, 10 * WOBBLE).stderr
    assert optimizers.common_norm([wide, other]).verdict is Verdict.NOT_RESOLVED

def test_optimizer_rows_name_missing_arms_and_read_each_clock():
    rows = optimizers.optimizer_claims([arm(10.0), arm(2.0, "adam", lr=1e-3, radial=0.2), arm(8.0, "muon", lr=0.02),
                                    arm(3.0, "msgd")], "smoke", NOISE, long_clock=[arm(1.0, "adam", epochs=6)],
                                   quick_sgd=arm(9.0))
    by_claim = {r.claim: r for r in rows}
    adam = by_claim["Adam largely erases the σ_w dependence"]
    assert adam.verdict is Verdict.QUALITATIVELY  # 2 - 5 = -3 against a half-width of 1.6
    # the clock at the selected checkpoint (epoch 1 of 3), not the whole run's 0.5
    assert adam.ours.startswith("2.0 ± 0.5 pp (1 seed; pooled std of a one-seed spread) (T_adapt = 0.167 at the "
                                "selected checkpoints; 2 of 2 σ_w")
    assert adam.thresholds == {"ERASES_FRACTION": 0.5, "CONFIDENCE": 0.95}
    long = by_claim["Adam at a longer clock largely erases it (η = 0.01, 6 epochs: T_adapt = 1 over the run; quick "
                    "σ_w grid)"]
    assert "vs SGD 9.0 ± 0.5 pp (1 seed; pooled std of a one-seed spread)" in long.ours
    assert long.verdict is Verdict.QUALITATIVELY
    same = optimizers.optimizer_claims([arm(10.0), arm(4.0, "adam", lr=1e-3)], "smoke", NOISE,
                                   long_clock=[arm(1.0, "adam", lr=1e-3)], quick_sgd=arm(9.0))
    assert not any("longer clock" in r.claim for r in same)  # not longer than the arm above: left out, R too
    assert by_claim["Muon leaves a small spread"].verdict is Verdict.NO  # 8 - 5 = 3 above the half-width
    assert by_claim["AdamW largely erases it too"].agrees == "not tested yet"
    momentum = by_claim["momentum SGD at the same raw η"]
    assert "T_SGD = 0.001 over the run at the raw η, as SGD's 0.001, or 0.1 at its effective step η/(1−μ) = 0.1" \
        in momentum.ours and momentum.agrees == "n/a (not in the paper)"
    common = by_claim["adaptive methods drive the weights to a common norm"]
    assert common.ours == "R: Adam (η = 0.001, 3 epochs) 0.20 (no interval); SGD 1.00"
    assert common.agrees.startswith("not tested: no interval on R")
    longer = by_claim["adaptive methods drive the weights to a common norm, at the longer clocks above"]
    assert longer.ours == "R on the quick σ_w grid: Adam (η = 0.01, 6 epochs) 1.00 (no interval); SGD 1.00"
    assert "T_adapt = 93.6 in the book's reconstruction" in long.paper
    steps = 312 * 300  # the digest's reconstruction: 300 epochs of floor(40,000 / 128) steps
    assert paper.reconstructed_clock("muon") == ("T_adapt", pytest.approx(0.02 * steps))
    assert paper.reconstructed_clock("adamw") == ("T_adapt", pytest.approx(93.6))
    assert paper.reconstructed_clock("sgd+L2") == ("T_L2", pytest.approx(1e-2 * 1e-2 * steps))
    assert paper.reconstructed_clock("msgd") == ("T_SGD", pytest.approx(7.3125e-4))
    assert conditions.arm_key(arm(1.0, wd=0.06)) == "sgd+L2"
    assert conditions.arm_key(arm(1.0, "adamw", wd=0.01)) == "adamw"


def test_a_method_with_seeds_on_the_quick_grid_is_judged_there_with_paired_seeds():
    main = [arm(10.0), arm(4.0, "adam", lr=1e-3)]
    quick_sgd = flat(10.0)
    twin = scattered(5.0 - H3 - EPS, "adam", lr=1e-3)
    row = {r.claim: r for r in optimizers.optimizer_claims(main, "smoke", NOISE, quick_sgd=quick_sgd, quick=[twin])}
    adam = row["Adam largely erases the σ_w dependence"]
    assert adam.ours.startswith("quick σ_w grid: 3.5 ± 0.3 pp (3 seeds; seed bootstrap")  # 5 - H3 - EPS
    assert "vs SGD 10.0 ± 0.0 pp (3 seeds; seed bootstrap 10.0–10.0)" in adam.ours
    assert adam.ours.endswith("4.0 pp on the main σ_w grid (1 seed)") and adam.verdict is Verdict.QUALITATIVELY
    assert set(adam.runs) == {r.id for a in (twin, quick_sgd, main[1]) for r in a.records}
    above = scattered(5.0 + H3 + EPS, "adam", lr=1e-3)  # above half of SGD's, beyond noise
    row = {r.claim: r for r in optimizers.optimizer_claims(main, "smoke", NOISE, quick_sgd=quick_sgd, quick=[above])}
    assert row["Adam largely erases the σ_w dependence"].verdict is Verdict.NO
    one_seed = arm(1.0, "adam", lr=1e-3)  # one seed on the quick grid: the main grid's arm decides
    row = {r.claim: r for r in optimizers.optimizer_claims(main, "smoke", NOISE, quick_sgd=quick_sgd, quick=[one_seed])}
    assert row["Adam largely erases the σ_w dependence"].ours.startswith("4.0 ± 0.5 pp (1 seed")
    other = flat(1.0, "adam", lr=2e-3)  # another learning rate: not the same arm
    assert optimizers.seeded_twin(main[1], [other]) is None and optimizers.seeded_twin(main[1], [twin]) is twin
