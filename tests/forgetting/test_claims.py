"""The book's verdicts on synthetic arms with known answers: every rule just above and just below each of its
thresholds, and with too little data to decide.

An arm's spread of seed-means is built to be the mean of its per-seed spreads (its smallest sigma_w's accuracy is
the same for every seed), so the seed-bootstrap standard error is computable by hand: three seeds scattered by
-DELTA, 0, +DELTA around m give the bootstrap SE of a mean, computed here by enumerating the 27 resamples
(:func:`synthetic.enumerated_bootstrap`), and scipy gives the t quantile on 2 degrees of freedom. A contrast of a
scattered arm with an arm whose seeds agree (``flat``) is paired and carries that same SE, so each threshold is
reached by moving m by a small EPS either side of it.
"""

import dataclasses
import math
import re

import numpy as np
import pytest
from scipy.stats import linregress, spearmanr
from synthetic import enumerated_bootstrap, rec, t95, t975

from fibook import stats
from fibook.claims import Finding, Verdict
from fibook.forgetting import claims, paper
from fibook.forgetting.arms import arms, seed_std_pp
from fibook.forgetting.collapse import ClockPoint, clock_point, equal_clock_pairs, longest_clock_arms
from fibook.forgetting.loading import Finished
from fibook.forgetting.noise import Difference, NoiseFloor, spread_difference, spread_estimate

EPS = 1e-6  # a nudge in pp well above rounding and well below any printed digit
SEEDS = (0, 1, 2)
DELTA = 0.6  # the per-seed scatter of a scattered arm's spread (pp)
SCATTER = {2: (-1.0, 1.0), 3: (-1.0, 0.0, 1.0)}
SE3 = enumerated_bootstrap([-DELTA, 0.0, DELTA])  # the bootstrap SE of a mean of three seeds scattered +-DELTA
H3 = t975(2) * SE3  # the half-width of its two-sided 95 % interval (2 degrees of freedom)
R3 = t95(2) * SE3  # the reach of one one-sided test at 5 % (the equivalence test and "under")
SE2 = enumerated_bootstrap([-DELTA, DELTA])  # two seeds: 1 degree of freedom
# one-seed arms borrow a spread std of 0.5 pp on 4 degrees of freedom; their unpaired difference adds two of them
NOISE = NoiseFloor(seed_std_pp=0.3, spread_std_pp=0.5, n_test=3000, seeds=3, spread_arms=2, spread_df=4)
SE1 = math.hypot(0.5, 0.5)
H1 = t975(4) * SE1
UNSTABLE_NOTE = "(a run fell out of its fit, see the stability table)"


def arm(spread_pp, optimizer="sgd", lr=0.01, wd=0.0, radial=1.0, final_spread_pp=None, tau=1, seeds=(0,),
        collapse=False, **config):
    """One arm over sigma_w = 1 and e: test accuracy 0.9 and 0.9 - spread / 100 (``spread_pp`` a number, or one
    per seed), final norm 10 sigma^R; every selected checkpoint interpolates unless ``tau`` is None; every run
    falls to 50 % train accuracy at its last epoch with ``collapse`` (an unstable arm)."""
    sigmas = (1.0, 2.718281828459045)
    per_seed = spread_pp if isinstance(spread_pp, tuple) else (spread_pp,) * len(seeds)
    records = []
    for seed, spread in zip(seeds, per_seed, strict=True):
        accs = (0.9, 0.9 - spread / 100)
        finals = (0.9, 0.9 - (spread if final_spread_pp is None else final_spread_pp) / 100)
        for s, a, fa in zip(sigmas, accs, finals, strict=True):
            records.append(rec(s, seed, a, tau, 10.0 * s**radial, optimizer=optimizer, lr=lr, wd=wd, final_acc=fa,
                               collapse_to=0.5 if collapse else None, **config))
    (a,) = arms(records, show=("lr", "weight_decay"))
    return a


def scattered(m, optimizer="sgd", seeds=SEEDS, delta=DELTA, **kw):
    """An arm whose seeds' spreads are m - delta, (m,) m + delta: seed-mean spread m."""
    return arm(tuple(m + delta * k for k in SCATTER[len(seeds)]), optimizer, seeds=seeds, **kw)


def flat(s, optimizer="sgd", seeds=SEEDS, **kw):
    """An arm whose seeds agree: spread s at every seed."""
    return arm((s,) * len(seeds), optimizer, seeds=seeds, **kw)


def finished(*arms, total_arms=None):
    runs = sum(len(a.records) for a in arms)
    return Finished("x", "smoke", list(arms), runs, runs, len(arms) if total_arms is None else total_arms)


def test_the_hand_computed_error_bars_are_the_closed_forms():
    assert SE3 == pytest.approx(DELTA * math.sqrt(2) / 3)  # (1/n)(1/n) sum dev^2 = 2 delta^2 / 9
    assert SE2 == pytest.approx(DELTA / math.sqrt(2))
    d = spread_difference(scattered(4.0, "adam"), flat(10.0), NOISE, weight=0.5)
    assert d.paired and d.df == 2 and d.value == pytest.approx(-1.0) and d.se == pytest.approx(SE3)


def test_erasing_means_a_spread_below_half_of_sgds_beyond_noise():
    sgd = flat(10.0)
    # c = spread - 0.5 x SGD's = m - 5, paired over three seeds
    assert claims.erases(scattered(5.0 - H3 - EPS, "adam"), sgd, NOISE).verdict is Verdict.QUALITATIVELY
    assert claims.erases(scattered(5.0 - H3 + EPS, "adam"), sgd, NOISE).text.startswith(
        "not resolved: spread − 0.5 × SGD's is -1.2 pp, 95 % [-2.4, +0.0] (paired over 3 seeds)")
    assert claims.erases(scattered(5.0 + H3 - EPS, "adam"), sgd, NOISE).verdict is Verdict.NOT_RESOLVED
    assert claims.erases(scattered(5.0 + H3 + EPS, "adam"), sgd, NOISE).verdict is Verdict.NO


def test_erasing_one_seed_arms_reads_the_borrowed_std_on_its_degrees_of_freedom():
    h = t975(4) * math.hypot(0.5, 0.5 * 0.5)  # unpaired: se = hypot(0.5, 0.5 x 0.5) on the pool's 4 dof
    assert claims.erases(arm(5.0 - h - EPS, "adam"), arm(10.0), NOISE).verdict is Verdict.QUALITATIVELY
    assert claims.erases(arm(5.0 - h + EPS, "adam"), arm(10.0), NOISE).verdict is Verdict.NOT_RESOLVED
    assert claims.erases(arm(5.0 + h + EPS, "adam"), arm(10.0), NOISE).verdict is Verdict.NO


def test_erasing_with_too_little_data_is_not_resolved_or_not_tested():
    sgd = flat(10.0)
    m = 5.0 - H3 - 1.0  # below half of SGD's beyond the noise of three seeds
    assert claims.erases(scattered(m, "adam"), sgd, NOISE).verdict is Verdict.QUALITATIVELY
    # two seeds: the same contrast, but a t quantile of 12.7 on 1 degree of freedom
    assert 5.0 - m < t975(1) * SE2
    assert claims.erases(scattered(m, "adam", seeds=(0, 1)), flat(10.0, seeds=(0, 1)), NOISE).text.startswith(
        "not resolved")
    assert claims.erases(arm(0.0, "adam"), arm(10.0), None).text.startswith(
        "not tested: no error bar (one seed and no pooled seed std at this preset)")
    assert claims.erases(scattered(1.0, "adam", tau=None), sgd, NOISE).text.startswith(
        "not tested: Adam (η = 0.01)'s selected predictor does not interpolate at 2 of 2 σ_w")


def test_a_verdict_an_unstable_arm_enters_names_it():
    verdict = claims.erases(scattered(5.0 - H3 - EPS, "adam", collapse=True), flat(10.0), NOISE)
    assert verdict.verdict is Verdict.QUALITATIVELY
    assert verdict.text == f"qualitatively; unstable: Adam (η = 0.01) {UNSTABLE_NOTE}"
    stable, unstable = arm(1.0), arm(1.0, "adam", collapse=True)
    assert unstable.label.endswith(" [unstable]") and not stable.unstable
    yes, no = Finding(Verdict.YES), Finding(Verdict.NO)
    assert claims.noted(yes, stable, None) is yes
    one = claims.noted(no, stable, unstable, None)
    assert one.verdict is Verdict.NO and one.text == f"no; unstable: Adam (η = 0.01) {UNSTABLE_NOTE}"
    two = claims.noted(no, unstable, arm(1.0, "muon", collapse=True))
    assert two.text == f"no; unstable: Adam (η = 0.01), Muon (η = 0.01) {UNSTABLE_NOTE}"


def test_an_unstable_one_seed_arm_borrows_only_the_unstable_pool():
    unstable_pool = dataclasses.replace(NOISE, unstable_spread_std_pp=1.0, unstable_spread_arms=1,
                                        unstable_spread_df=2)
    h = t975(2) * math.hypot(1.0, 0.5 * 0.5)  # its own std 1.0 on 2 dof; SGD's 0.5 on 4: the smaller dof
    shaky = arm(5.0 - h - EPS, "adam", collapse=True)
    assert claims.erases(shaky, arm(10.0), unstable_pool).text.startswith("qualitatively; unstable: Adam")
    assert claims.erases(arm(5.0 - h + EPS, "adam", collapse=True), arm(10.0), unstable_pool).text.startswith(
        "not resolved")
    # no unstable arm has two seeds at this preset: no error bar, not the stable arms'
    assert claims.erases(shaky, arm(10.0), NOISE).text.startswith("not tested: no error bar")


def test_contrasts_and_missing_error_bars():
    h = t975(3) * 1.0
    yes, no = Finding(Verdict.YES), Finding(Verdict.NO)
    assert claims.contrast_verdict(Difference(-h - EPS, 1.0, 3), yes, no, "x") is yes
    assert claims.contrast_verdict(Difference(h + EPS, 1.0, 3), yes, no, "x") is no
    unsure = claims.contrast_verdict(Difference(h - EPS, 1.0, 3), yes, no, "x")
    assert unsure.verdict is Verdict.NOT_RESOLVED and unsure.text.startswith("not resolved: x is +")
    assert claims.unjudged(Difference(1.0, 1.0, 3), None) is None
    assert claims.unjudged(Difference(1.0, 1.0, 3), Difference(1.0, math.nan, math.nan)).text.startswith(
        "not tested: no error bar")


LOG_SIGMAS = np.arange(4.0)  # sigma_w = e^0 .. e^3
WOBBLE = 0.05 * np.array([1.0, -1.0, -1.0, 1.0])  # log-norm residuals orthogonal to 1 and log sigma: slope exact
R_SE = linregress(LOG_SIGMAS, WOBBLE).stderr
R_H = t975(2) * R_SE  # four sigma_w: 2 degrees of freedom


def radial_arm(r, optimizer="adam", lr=1e-3, sigmas=LOG_SIGMAS, wobble=WOBBLE):
    """An arm whose log final norm is r log sigma_w + ``wobble``: radial memory R = r with the standard error
    ``R_SE``."""
    norms = np.exp(r * sigmas + wobble)
    records = [rec(float(np.exp(x)), 0, 0.9, 1, float(n), optimizer=optimizer, lr=lr)
               for x, n in zip(sigmas, norms, strict=True)]
    (a,) = arms(records)
    return a


def test_the_radial_memory_of_the_test_arms_has_the_hand_computed_interval():
    e = radial_arm(0.3).radial_memory_estimate()
    fit = linregress(LOG_SIGMAS, 0.3 * LOG_SIGMAS + WOBBLE)
    assert e.value == pytest.approx(0.3) == pytest.approx(fit.slope) and e.se == pytest.approx(R_SE) and e.df == 2


def test_a_common_norm_means_every_adaptive_radial_memory_below_a_half_beyond_noise():
    other = radial_arm(0.1, "adamw")
    assert claims.common_norm([radial_arm(0.5 - R_H - EPS), other]).verdict is Verdict.QUALITATIVELY
    assert claims.common_norm([radial_arm(0.5 - R_H + EPS), other]).text.startswith("not resolved: R − 0.5 is")
    assert claims.common_norm([radial_arm(0.5 + R_H - EPS), other]).verdict is Verdict.NOT_RESOLVED
    assert claims.common_norm([radial_arm(0.5 + R_H + EPS), other]).verdict is Verdict.NO
    two = radial_arm(0.0, sigmas=LOG_SIGMAS[:2], wobble=WOBBLE[:2])  # two sigma_w: no interval on R
    assert claims.common_norm([two, other]).text == (
        "not tested: no interval on R (fewer than three σ_w that did not diverge)")
    wide = radial_arm(0.1, wobble=10 * WOBBLE)  # R far below a half, but its interval too wide to show it
    assert 0.5 - 0.1 < t975(2) * linregress(LOG_SIGMAS, 10 * WOBBLE).stderr
    assert claims.common_norm([wide, other]).verdict is Verdict.NOT_RESOLVED


def test_the_norm_stays_tied_to_sigma_when_r_exceeds_0_8_beyond_noise():
    assert claims.radial_kept(radial_arm(0.8 + R_H + EPS, "sgd")).verdict is Verdict.YES
    assert claims.radial_kept(radial_arm(0.8 + R_H - EPS, "sgd")).text.startswith("not resolved: R − 0.8 is")
    assert claims.radial_kept(radial_arm(0.8 - R_H + EPS, "sgd")).verdict is Verdict.NOT_RESOLVED
    assert claims.radial_kept(radial_arm(0.8 - R_H - EPS, "sgd")).verdict is Verdict.NO
    assert claims.radial_kept(arm(8.0)).text.startswith("not tested: no interval on R")  # two sigma_w
    assert 0.95 - 0.8 < t975(2) * linregress(LOG_SIGMAS, 3 * WOBBLE).stderr
    assert claims.radial_kept(radial_arm(0.95, "sgd", wobble=3 * WOBBLE)).verdict is Verdict.NOT_RESOLVED  # too noisy


def test_optimizer_rows_name_missing_arms_and_read_each_clock():
    rows = claims.optimizer_claims([arm(10.0), arm(2.0, "adam", lr=1e-3, radial=0.2), arm(8.0, "muon", lr=0.02),
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
    same = claims.optimizer_claims([arm(10.0), arm(4.0, "adam", lr=1e-3)], "smoke", NOISE,
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
    assert claims.reconstructed_clock("muon") == ("T_adapt", pytest.approx(0.02 * steps))
    assert claims.reconstructed_clock("adamw") == ("T_adapt", pytest.approx(93.6))
    assert claims.reconstructed_clock("sgd+L2") == ("T_L2", pytest.approx(1e-2 * 1e-2 * steps))
    assert claims.reconstructed_clock("msgd") == ("T_SGD", pytest.approx(7.3125e-4))
    assert claims.arm_key(arm(1.0, wd=0.06)) == "sgd+L2" and claims.arm_key(arm(1.0, "adamw", wd=0.01)) == "adamw"


def test_a_method_with_seeds_on_the_quick_grid_is_judged_there_with_paired_seeds():
    main = [arm(10.0), arm(4.0, "adam", lr=1e-3)]
    quick_sgd = flat(10.0)
    twin = scattered(5.0 - H3 - EPS, "adam", lr=1e-3)
    row = {r.claim: r for r in claims.optimizer_claims(main, "smoke", NOISE, quick_sgd=quick_sgd, quick=[twin])}
    adam = row["Adam largely erases the σ_w dependence"]
    assert adam.ours.startswith("quick σ_w grid: 3.8 ± 0.3 pp (3 seeds; seed bootstrap")
    assert "vs SGD 10.0 ± 0.0 pp (3 seeds; seed bootstrap 10.0–10.0)" in adam.ours
    assert adam.ours.endswith("4.0 pp on the main σ_w grid (1 seed)") and adam.verdict is Verdict.QUALITATIVELY
    assert set(adam.runs) == {r.id for a in (twin, quick_sgd, main[1]) for r in a.records}
    above = scattered(5.0 + H3 + EPS, "adam", lr=1e-3)  # above half of SGD's, beyond noise
    row = {r.claim: r for r in claims.optimizer_claims(main, "smoke", NOISE, quick_sgd=quick_sgd, quick=[above])}
    assert row["Adam largely erases the σ_w dependence"].verdict is Verdict.NO
    one_seed = arm(1.0, "adam", lr=1e-3)  # one seed on the quick grid: the main grid's arm decides
    row = {r.claim: r for r in claims.optimizer_claims(main, "smoke", NOISE, quick_sgd=quick_sgd, quick=[one_seed])}
    assert row["Adam largely erases the σ_w dependence"].ours.startswith("4.0 ± 0.5 pp (1 seed")
    other = flat(1.0, "adam", lr=2e-3)  # another learning rate: not the same arm
    assert claims.seeded_twin(main[1], [other]) is None and claims.seeded_twin(main[1], [twin]) is twin


def test_longer_training_keeps_the_spread_when_the_longer_arm_keeps_more_than_half_beyond_noise():
    short = flat(10.0)
    # c = spread(long) - 0.5 x spread(short) = m - 5
    assert claims.keeps_spread(short, scattered(5.0 + H3 + EPS, epochs=6), NOISE).verdict is Verdict.QUALITATIVELY
    assert claims.keeps_spread(short, scattered(5.0 + H3 - EPS, epochs=6), NOISE).text.startswith(
        "not resolved: spread − 0.5 × the shorter arm's is")
    assert claims.keeps_spread(short, scattered(5.0 - H3 + EPS, epochs=6), NOISE).verdict is Verdict.NOT_RESOLVED
    assert claims.keeps_spread(short, scattered(5.0 - H3 - EPS, epochs=6), NOISE).verdict is Verdict.NO
    assert claims.keeps_spread(flat(10.0, seeds=(0, 1)), scattered(7.0, seeds=(0, 1), epochs=6), NOISE).text.startswith(
        "not resolved")  # 2 above the contrast's zero, but two seeds: 12.7 x its SE
    assert claims.keeps_spread(arm(10.0), arm(10.0, epochs=6), None).text.startswith("not tested: no error bar")
    assert claims.keeps_spread(short, scattered(10.0, tau=None, epochs=6), NOISE).verdict is Verdict.NOT_TESTED


def test_l2_erases_outright_when_the_l2_spread_lies_under_the_margin_by_the_one_sided_test():
    base = flat(10.0)
    # d = 10 - m far above zero; the L2 arm's 95 % one-sided bound m + t_{0.95, 2} SE against 2 pp
    assert claims.l2_erases(base, scattered(2.0 - R3 - EPS, lr=0.1, wd=0.06), NOISE).verdict is Verdict.YES
    assert claims.l2_erases(base, scattered(2.0 - R3 + EPS, lr=0.1, wd=0.06), NOISE).text == (
        "qualitatively: below 0.5 of the baseline's, not shown below 2 pp")


def test_l2_erases_outright_only_when_the_drop_from_the_baseline_is_beyond_noise():
    m = 0.9
    assert m + R3 < 2.0  # the L2 arm alone is shown under the margin
    both = scattered(m, lr=0.1, wd=0.06)
    assert claims.l2_erases(flat(m + H3 + EPS), both, NOISE).verdict is Verdict.YES
    # the baseline hardly above it: erased "outright" cannot be told from a baseline that had nothing to erase
    assert claims.l2_erases(flat(m + H3 - EPS), both, NOISE).text.startswith(
        "not resolved: spread − 0.5 × the baseline's is")


def test_l2_erases_qualitatively_below_half_of_the_baseline_and_no_above_it():
    base = flat(10.0)
    # c = m - 0.5 x 10
    assert claims.l2_erases(base, scattered(5.0 - H3 - EPS, lr=0.1, wd=0.06), NOISE).verdict is Verdict.QUALITATIVELY
    assert claims.l2_erases(base, scattered(5.0 - H3 + EPS, lr=0.1, wd=0.06), NOISE).verdict is Verdict.NOT_RESOLVED
    assert claims.l2_erases(base, scattered(5.0 + H3 - EPS, lr=0.1, wd=0.06), NOISE).verdict is Verdict.NOT_RESOLVED
    assert claims.l2_erases(base, scattered(5.0 + H3 + EPS, lr=0.1, wd=0.06), NOISE).verdict is Verdict.NO


def test_l2_that_raises_the_spread_beyond_noise_is_a_no_of_its_own():
    base = flat(2.0)
    assert claims.l2_erases(base, scattered(2.0 + H3 + EPS, lr=0.1, wd=0.06), NOISE).text == "no: L2 raised the spread"
    # above half of it
    assert claims.l2_erases(base, scattered(2.0 + H3 - EPS, lr=0.1, wd=0.06), NOISE).verdict is Verdict.NO


def test_l2_erasing_with_too_little_data_is_never_yes():
    # two seeds: the L2 arm's one-sided bound m + t_{0.95, 1} SE lies above 2 pp, where three seeds lay under it,
    # and its contrast with half the baseline, 0.9 - 5, lies within t_{0.975, 1} SE of zero
    assert claims.l2_erases(flat(10.0), scattered(0.9, lr=0.1, wd=0.06), NOISE).verdict is Verdict.YES
    assert 0.9 + R3 < 2.0 < 0.9 + t95(1) * SE2 and 5.0 - 0.9 < t975(1) * SE2
    verdict = claims.l2_erases(flat(10.0, seeds=(0, 1)), scattered(0.9, seeds=(0, 1), lr=0.1, wd=0.06), NOISE)
    assert verdict.text.startswith("not resolved: spread − 0.5 × the baseline's is")
    assert claims.l2_erases(arm(10.0), arm(0.0, lr=0.1, wd=0.06), None).text.startswith("not tested: no error bar")
    assert claims.l2_erases(flat(10.0), scattered(0.9, lr=0.1, wd=0.06, tau=None), NOISE).verdict is Verdict.NOT_TESTED


UP, DOWN = (-DELTA, 0.0, DELTA), (DELTA, 0.0, -DELTA)


def l2_row(first, middle, last):
    """Arms in rising lambda whose steps first -> middle and middle -> last carry the SE of three seeds scattered
    +-DELTA (``SE3``) and whose drop first -> last carries twice it (per-seed drops scattered +-2 DELTA)."""
    return [arm(tuple(first + p for p in UP), seeds=SEEDS), flat(middle, wd=0.01),
            arm(tuple(last + p for p in DOWN), seeds=SEEDS, wd=0.06)]


def test_the_spread_falls_along_a_row_when_its_drop_is_beyond_noise_and_no_step_rises_beyond_it():
    drop_h = t975(2) * enumerated_bootstrap([-2 * DELTA, 0.0, 2 * DELTA])
    assert drop_h == pytest.approx(2 * H3)
    assert claims.falls(l2_row(6.0, 6.0 - H3, 6.0 - drop_h - EPS), NOISE) == "falls"
    assert claims.falls(l2_row(6.0, 6.0 - H3, 6.0 - drop_h + EPS), NOISE) == "unresolved"
    assert claims.falls(l2_row(6.0, 6.0 + H3 - EPS, 1.0), NOISE) == "falls"  # a rise within noise is allowed
    assert claims.falls(l2_row(6.0, 6.0 + H3 + EPS, 1.0), NOISE) == "unresolved"  # a step rises beyond it
    assert claims.falls(l2_row(2.0, 2.0, 2.0 + drop_h + EPS), NOISE) == "rises"
    assert claims.falls(l2_row(2.0, 2.0, 2.0 + drop_h - EPS), NOISE) == "unresolved"


def test_more_l2_leaves_a_smaller_spread_when_every_row_falls():
    falling, level = l2_row(6.0, 4.0, 1.0), l2_row(3.0, 3.0, 3.0)
    rising = l2_row(1.0, 3.0, 6.0)
    assert claims.falls_with_l2({"a": falling, "b": falling}, NOISE).verdict is Verdict.QUALITATIVELY
    assert claims.falls_with_l2({"a": falling, "b": level}, NOISE).text == "partly: only a"
    assert claims.falls_with_l2({"a": rising, "b": level}, NOISE).verdict is Verdict.NO
    assert claims.falls_with_l2({"a": level}, NOISE).text == (
        "not resolved: no row's first and last spreads differ beyond noise")
    assert claims.falls_with_l2({"a": falling + [flat(0.5, tau=None)]}, NOISE).verdict is Verdict.NOT_TESTED
    assert claims.falls_with_l2({"a": [arm(6.0), arm(1.0, wd=0.06)]}, None).text.startswith("not tested: no error bar")
    two = {"a": [scattered(6.0, seeds=(0, 1)), flat(3.5, seeds=(0, 1), wd=0.06)]}  # a drop of 2.5, 2 seeds
    assert claims.falls_with_l2(two, NOISE).verdict is Verdict.NOT_RESOLVED


def test_the_l2_term_lowers_the_spread_when_its_control_is_higher_beyond_noise():
    control = flat(5.0)
    assert claims.l2_lowers(control, scattered(5.0 - H3 - EPS, wd=0.1), NOISE).verdict is Verdict.YES
    assert claims.l2_lowers(control, scattered(5.0 - H3 + EPS, wd=0.1), NOISE).text.startswith(
        "not resolved: control − L2 arm is")
    assert claims.l2_lowers(control, scattered(5.0 + H3 - EPS, wd=0.1), NOISE).verdict is Verdict.NOT_RESOLVED
    assert claims.l2_lowers(control, scattered(5.0 + H3 + EPS, wd=0.1), NOISE).text == "no: L2 raised the spread"
    assert claims.l2_lowers(flat(5.0, seeds=(0, 1)), scattered(5.0 - H3 - EPS, seeds=(0, 1), wd=0.1),
                            NOISE).text.startswith("not resolved")  # the same drop, two seeds
    assert claims.l2_lowers(arm(5.0), arm(0.0, wd=0.1), None).text.startswith("not tested: no error bar")
    assert claims.l2_lowers(flat(5.0, tau=None), flat(0.0, wd=0.1), NOISE).verdict is Verdict.NOT_TESTED


SE, DF = 0.4, 2
H = t975(DF) * SE


def test_batch_size_needs_a_rise_beyond_noise_and_a_rank_correlation_above_a_half():
    rise = Difference(H + EPS, SE, DF)
    assert claims.rises_with_batch(0.5 + EPS, rise).verdict is Verdict.QUALITATIVELY
    assert claims.rises_with_batch(0.5, rise).text == "weakly (ρ = +0.50 ≤ 0.5)"
    assert claims.rises_with_batch(1.0, Difference(H - EPS, SE, DF)).text.startswith(
        "not resolved: largest − smallest b is")
    assert claims.rises_with_batch(1.0, Difference(-H + EPS, SE, DF)).verdict is Verdict.NOT_RESOLVED
    assert claims.rises_with_batch(1.0, Difference(-H - EPS, SE, DF)).verdict is Verdict.NO
    assert claims.rises_with_batch(1.0, Difference(H + EPS, SE, 1)).verdict is Verdict.NOT_RESOLVED  # fewer seeds
    assert claims.rises_with_batch(1.0, Difference(5.0, math.nan, math.nan)).text.startswith("not tested: no error bar")
    for rho, d in ((None, rise), (1.0, None)):  # fewer than three interpolating batch sizes
        assert claims.rises_with_batch(rho, d).text.startswith("not tested: no rank correlation")


def test_a_clock_claim_needs_a_drop_beyond_noise_and_rho_at_most_minus_a_half():
    drop = Difference(H + EPS, SE, DF)
    assert claims.falls_with_clock(-0.5, drop).verdict is Verdict.QUALITATIVELY
    assert claims.falls_with_clock(-0.5 + EPS, drop).text.startswith("weakly (ρ = -0.50 > -0.5")
    assert claims.falls_with_clock(-1.0, Difference(H - EPS, SE, DF)).text.startswith(
        "not resolved: smallest − largest clock is")
    assert claims.falls_with_clock(-1.0, Difference(-H + EPS, SE, DF)).verdict is Verdict.NOT_RESOLVED
    assert claims.falls_with_clock(-1.0, Difference(-H - EPS, SE, DF)).verdict is Verdict.NO
    assert claims.falls_with_clock(-1.0, Difference(H + EPS, SE, 1)).verdict is Verdict.NOT_RESOLVED
    no_bar = claims.falls_with_clock(-1.0, Difference(5.0, math.nan, math.nan))
    assert no_bar.text.startswith("not tested: no error bar")
    assert claims.falls_with_clock(None, None).text.startswith("not tested: no rank correlation")


def test_low_lr_sgd_keeps_a_large_spread_from_5_pp_up_beyond_noise():
    assert claims.large_spread(scattered(5.0 + H3 + EPS), NOISE).verdict is Verdict.QUALITATIVELY
    assert claims.large_spread(scattered(5.0 + H3 - EPS), NOISE).text.startswith("not resolved: spread − 5 pp is")
    assert claims.large_spread(scattered(5.0 - H3 + EPS), NOISE).verdict is Verdict.NOT_RESOLVED
    assert claims.large_spread(scattered(5.0 - H3 - EPS), NOISE).verdict is Verdict.NO
    h = t975(4) * 0.5  # one seed: the borrowed std on the pool's 4 degrees of freedom
    assert claims.large_spread(arm(5.0 + h + EPS), NOISE).verdict is Verdict.QUALITATIVELY
    assert claims.large_spread(arm(5.0 + h - EPS), NOISE).verdict is Verdict.NOT_RESOLVED
    assert claims.large_spread(scattered(7.0, seeds=(0, 1)), NOISE).verdict is Verdict.NOT_RESOLVED  # 2 above, 2 seeds
    assert claims.large_spread(arm(20.0), None).text.startswith("not tested: no error bar")
    assert claims.large_spread(scattered(20.0, tau=None), NOISE).verdict is Verdict.NOT_TESTED
    assert claims.large_spread(scattered(20.0, collapse=True), NOISE).text == (
        f"qualitatively; unstable: SGD (η = 0.01) {UNSTABLE_NOTE}")


SEED_SHIFT = 1.0  # the seed effect on both sigma_w of a noise arm (pp): its seed std, 1 pp at each sigma_w


def noise_arm(m, seeds=SEEDS, delta=DELTA, shift=SEED_SHIFT, tau=1):
    """An arm run over several seeds: seed k's accuracy is shifted by shift x (-1, 0, 1)[k] pp at both sigma_w
    (a seed std of ``shift`` at sigma_w = 1) and its spread is m + delta x (-1, 0, 1)[k] (a seed std of
    |shift - delta| at sigma_w = e): the spread of seed-means is m with the SE of a mean of seeds scattered
    +-delta."""
    k = SCATTER[len(seeds)]
    records = [rec(s, seed, acc / 100, tau, 10.0 * s) for seed, u, p in zip(seeds, k, k, strict=True)
               for s, acc in ((1.0, 90.0 + shift * u), (2.0, 90.0 + shift * u - (m + delta * p)))]
    (a,) = arms(records)
    return a


def test_far_above_seed_noise_means_the_spread_above_three_times_the_largest_seed_std_beyond_noise():
    largest = max(np.std([-SEED_SHIFT, 0.0, SEED_SHIFT], ddof=1),
                  np.std([-(SEED_SHIFT - DELTA), 0.0, SEED_SHIFT - DELTA], ddof=1))
    assert largest == pytest.approx(SEED_SHIFT) and seed_std_pp(noise_arm(5.0))[1.0] == pytest.approx(1.0)
    threshold = 3 * largest
    assert claims.above_seed_noise(noise_arm(threshold + H3 + EPS)).verdict is Verdict.YES
    assert claims.above_seed_noise(noise_arm(threshold + H3 - EPS)).text.startswith(
        "not resolved: spread − 3 × the largest seed std is")
    assert claims.above_seed_noise(noise_arm(threshold - H3 + EPS)).verdict is Verdict.NOT_RESOLVED
    assert claims.above_seed_noise(noise_arm(threshold - H3 - EPS)).verdict is Verdict.NO


def test_far_above_seed_noise_needs_seeds_enough_to_tell():
    # two seeds -+1 pp apart at both sigma_w: a seed std of sqrt 2, and spreads m -+ delta with 1 degree of freedom
    two = 3 * SEED_SHIFT * math.sqrt(2)
    assert 3.0 < t975(1) * SE2 and 3.0 > H3
    assert claims.above_seed_noise(noise_arm(two + 3.0, seeds=(0, 1))).verdict is Verdict.NOT_RESOLVED
    assert claims.above_seed_noise(arm(8.0)).text.startswith("not tested: fewer than two seeds")
    assert claims.above_seed_noise(noise_arm(8.0, tau=None)).text.startswith(
        "not tested: SGD (η = 0.01)'s selected predictor does not interpolate")


MARGIN = claims.EQUIVALENCE_PP


def test_equal_clock_arms_collapse_when_their_difference_lies_within_the_margin_by_two_one_sided_tests():
    assert MARGIN == 2.0
    b = flat(5.0)
    # d = m - 5 paired over three seeds; equal when |d| + t_{0.95, 2} SE < 2
    assert claims.collapses(scattered(5.0 + MARGIN - R3 - EPS), b, NOISE).text == "yes: equal within ±2 pp"
    assert claims.collapses(scattered(5.0 - MARGIN + R3 + EPS), b, NOISE).text == "yes: equal within ±2 pp"
    assert MARGIN - R3 < H3  # just outside the equivalence bound and not different from zero either
    # d = 1.174, its 95 % interval 1.174 -+ 1.217: a lower end that rounds to zero prints +0.0
    assert claims.collapses(scattered(5.0 + MARGIN - R3 + EPS), b, NOISE).text.startswith(
        "not resolved: +1.2 pp, 95 % [+0.0, +2.4] (paired over 3 seeds) is neither shown within ±2 pp nor away "
        "from 0")
    assert claims.collapses(scattered(5.0 + H3 - EPS), b, NOISE).verdict is Verdict.NOT_RESOLVED
    assert claims.collapses(scattered(5.0 + H3 + EPS), b, NOISE) .text.startswith("no: the spreads differ, ")
    assert claims.collapses(scattered(5.0 - H3 - EPS), b, NOISE) .text.startswith("no: the spreads differ, ")
    assert claims.collapses(scattered(8.0), b, NOISE) .text.startswith("no: the spreads differ, ")  # beyond the margin


def test_a_difference_within_the_margin_is_equal_even_when_it_also_differs_from_zero():
    tight = scattered(6.5, delta=0.1)
    assert stats.differs(spread_difference(tight, flat(5.0), NOISE))
    assert claims.collapses(tight, flat(5.0), NOISE).text == "yes: equal within ±2 pp"


def test_equal_clock_arms_with_too_little_data_are_not_resolved_not_equal():
    # two seeds, a difference of 0.5 pp: inside the margin, but 0.5 + t_{0.95, 1} SE lies beyond it
    assert 0.5 + t95(1) * SE2 > MARGIN and 0.5 + R3 < MARGIN
    assert claims.collapses(scattered(5.5), flat(5.0), NOISE).text == "yes: equal within ±2 pp"
    two_seeds = claims.collapses(scattered(5.5, seeds=(0, 1)), flat(5.0, seeds=(0, 1)), NOISE)
    assert two_seeds.verdict is Verdict.NOT_RESOLVED
    # beyond the margin but not different from zero either
    apart = claims.collapses(scattered(7.5, seeds=(0, 1)), flat(5.0, seeds=(0, 1)), NOISE)
    assert apart.verdict is Verdict.NOT_RESOLVED
    assert claims.collapses(arm(5.0), arm(5.0), None).text.startswith("not tested: no error bar")
    assert claims.collapses(flat(5.0, tau=None), flat(5.0), NOISE).verdict is Verdict.NOT_TESTED
    assert claims.collapses(scattered(5.5, collapse=True), flat(5.0), NOISE).text == (
        f"yes: equal within ±2 pp; unstable: SGD (η = 0.01) {UNSTABLE_NOTE}")


LADDER = (1e-2, 5e-3, 2.5e-3, 1e-3)  # rates a decade apart, largest first


def ladder(*offsets, tau=1, first_seeds=UP):
    """Adam rungs at the rates of LADDER: the largest rate's seeds scattered ``first_seeds`` around 5 pp, the
    others' spreads 5 + offset at every seed (each rung's difference from the first carries the SE ``SE3``)."""
    rungs = [arm(tuple(5.0 + p for p in first_seeds), "adam", lr=LADDER[0], seeds=SEEDS, epochs=4)]
    rungs += [flat(5.0 + o, "adam", lr=lr, epochs=4 * (k + 2), tau=tau if k == len(offsets) - 1 else 1)
              for k, (o, lr) in enumerate(zip(offsets, LADDER[1:], strict=False))]
    return rungs


def test_a_flat_ladder_says_the_clock_forgets():
    inside = MARGIN - R3 - EPS
    assert claims.clock_or_rate(ladder(0.0, inside, -inside), NOISE).text == (
        "yes: the clock (every rung within ±2 pp of the largest rate's)")
    assert claims.clock_or_rate(ladder(0.0, MARGIN - R3 + EPS, 0.0), NOISE).text.startswith(
        "not resolved: smallest − largest rate is")


def test_a_ladder_whose_spread_rises_as_the_rate_falls_says_the_rate_forgets():
    assert claims.clock_or_rate(ladder(1.0, H3 + EPS), NOISE).text == (
        "no: the rate (the spread rises as η falls, ρ = -1.00)")
    assert claims.clock_or_rate(ladder(1.0, H3 - EPS), NOISE).verdict is Verdict.NOT_RESOLVED  # H3 > the margin's reach


@pytest.mark.parametrize(("offsets", "rate"), [((-0.5, 0.5, 5.0), True), ((0.5, -0.5, 5.0), False)])
def test_the_rate_needs_a_rank_correlation_of_spread_with_the_rate_at_most_minus_a_half(offsets, rate):
    rho = spearmanr(LADDER, [5.0] + [5.0 + o for o in offsets]).statistic
    assert bool(rho <= claims.CLOCK_RHO) is rate and rho == pytest.approx(-0.8 if rate else -0.4)
    verdict = claims.clock_or_rate(ladder(*offsets), NOISE)
    assert verdict.text == "no: the rate (the spread rises as η falls, ρ = -0.80)" if rate else verdict.text.startswith(
        "not resolved")


def test_a_ladder_with_a_rung_that_does_not_interpolate_or_no_error_bar_is_not_tested():
    assert claims.clock_or_rate(ladder(0.0, 0.0, tau=None), NOISE).text.startswith(
        "not tested: Adam (η = 0.0025)'s selected predictor does not interpolate")  # the last rung given
    one_seed = [arm(5.0, "adam", lr=lr, epochs=4 * (k + 1)) for k, lr in enumerate(LADDER)]
    assert claims.clock_or_rate(one_seed, None).text.startswith("not tested: no error bar")
    assert claims.clock_or_rate(ladder(0.0, 0.0)[:1], NOISE).text == "not tested: a ladder needs two rungs or more"
    assert claims.clock_or_rate([*ladder(0.0, 0.0), flat(5.0, "adam", lr=1e-3, epochs=40, collapse=True)],
                                NOISE).text.endswith(f"unstable: Adam (η = 0.001) {UNSTABLE_NOTE}")


def test_ladder_rows_wait_until_every_arm_has_finished_on_every_seed():
    rungs = ladder(0.0, 0.5, -0.5)  # every rung within 0.5 pp of the first: 0.5 + t_{0.95, 2} SE < 2
    pair = [scattered(5.0, batch_size=64), flat(5.5, batch_size=128, epochs=12)]
    waiting = claims.ladder_claims(finished(*rungs[:2], total_arms=4), finished(pair[0], total_arms=2), NOISE,
                                   "smoke")
    assert [r.agrees for r in waiting] == ["not tested yet", "not tested yet"]
    assert [r.rule for r in waiting] == ["fibook.forgetting.claims.clock_or_rate", "fibook.forgetting.claims.collapses"]
    assert waiting[0].ours == "not finished (12 of 12 runs finished, 2 of 4 arms complete)"
    assert set(waiting[0].runs) == {r.id for a in rungs[:2] for r in a.records}
    shuffled = [rungs[2], rungs[0], rungs[3], rungs[1]]  # read largest rate first whatever the order
    done = claims.ladder_claims(finished(*shuffled), finished(*reversed(pair)), NOISE, "smoke")
    assert [r.agrees for r in done] == ["yes: the clock (every rung within ±2 pp of the largest rate's)",
                                        "yes: equal within ±2 pp"]
    assert done[0].ours.startswith("T_adapt = 0.667 over each run; η = 0.01 × 4:")
    assert done[0].ours.index("η = 0.01 ×") < done[0].ours.index("η = 0.005 ×") < done[0].ours.index("η = 0.001 ×")
    assert done[1].ours.startswith("SGD (η = 0.01): 5.0 ± 0.3 pp") and done[1].ours.endswith("(smoke)")
    assert "Σ η 0.5 vs 2" in done[1].ours  # T_adapt records sum eta: 3 and 12 epochs


def test_time_l2_batch_rows_wait_for_unfinished_experiments():
    empty = Finished("long_training", "smoke", [], 1, 4, 2)
    l2 = finished(arm(10.0, lr=0.01), arm(2.0, lr=0.1), arm(1.5, lr=0.1, wd=0.06), arm(5.0, lr=0.01, wd=0.06))
    l2_clock = finished(arm(10.0), arm(9.5, wd=0.01), arm(5.0, wd=0.06), arm(8.0, epochs=6), arm(7.9, wd=0.1, epochs=6))
    batch = finished(*(arm(s, batch_size=b) for s, b in ((3.0, 16), (5.0, 64), (8.0, 128))))
    rows = claims.time_l2_batch_claims(empty, l2, l2_clock, batch, lrs=[0.01, 0.1], wds=[0.0, 0.06], preset="smoke",
                                       noise=NOISE)
    assert rows[0].ours == "not finished (1 of 4 runs finished, 0 of 2 arms complete)"
    assert rows[0].agrees == "not tested yet"
    # L2 at the large rate: 10 -> 1.5 pp is a drop beyond noise, below half beyond noise, but 1.5 pp is not shown
    # under 2 pp (1.5 + t_{0.95, 4} 0.5 > 2)
    assert 1.5 + t95(4) * 0.5 > 2.0
    assert [r.agrees for r in rows[1:]] == ["qualitatively: below 0.5 of the baseline's, not shown below 2 pp",
                                            "partly: only η = 0.01, 3 epochs", "yes", "qualitatively"]
    assert rows[2].ours.startswith("η = 0.01, 3 epochs: 10.0 → 9.5 → 5.0 pp at λ = 0, 0.01, 0.06; "
                                   "η = 0.01, 6 epochs: 8.0 → 7.9 pp")
    assert "rank correlation +1.00" in rows[4].ours


CONSISTENT = Finding(Verdict.CONSISTENT, " (η and N were inferred from these figures)")  # circular by design


def test_a_recomputed_clock_agrees_when_it_rounds_to_the_quoted_digits():
    quoted = paper.HEADLINE_T_SGD
    assert quoted.value == 7.3e-4 and str(quoted) == "7.3e-4"
    assert claims.matches_quoted(7.26e-4, quoted) == claims.matches_quoted(7.34e-4, quoted) == CONSISTENT
    assert claims.matches_quoted(7.24e-4, quoted) == claims.matches_quoted(7.36e-4, quoted) == Finding(Verdict.NO)


def test_every_quoted_number_says_where_the_paper_states_it_and_prints_as_its_value():
    import dataclasses

    from fibook.claims import Quoted
    from fibook.shape import paper as shape_paper

    for module in (paper, shape_paper):
        quoted = [v for v in vars(module).values() if isinstance(v, Quoted)]
        assert quoted, module.__name__
        for q in quoted:
            assert q.source and q.text == str(q), q
            values = q.value if isinstance(q.value, tuple) else (q.value,)
            shown = {float(x) for x in re.findall(r"\d+(?:\.\d+)?(?:e-?\d+)?", q.text.replace(",", ""))}
            assert set(values) <= shown, q  # the text shows the number
        with pytest.raises(dataclasses.FrozenInstanceError):
            quoted[0].value = 0.0


def test_scale_invariance_needs_loss_and_cosine_below_the_tolerance():
    tol = claims.INVARIANCE_TOL
    invariant = claims.scale_invariant([2.0, 2.0 + 0.5 * tol, 2.0 - 0.5 * tol], [0.0, 0.9 * tol, -0.9 * tol])
    assert invariant.verdict is Verdict.YES
    assert claims.scale_invariant([2.0, 2.0 + 2 * tol], [0.0, 0.0]).verdict is Verdict.NO
    assert claims.scale_invariant([2.0, 2.0], [0.0, 1.1 * tol]).verdict is Verdict.NO


def test_sigma_scales_the_logits_below_the_floor():
    assert claims.scales_logits(claims.LOGIT_FLOOR * (1 - EPS)).verdict is Verdict.YES
    assert claims.scales_logits(claims.LOGIT_FLOOR * (1 + EPS)).verdict is Verdict.NO


def test_question_rows_read_the_logit_floor():
    floor = claims.LOGIT_FLOOR
    below_floor = claims.question_claims(7.31e-4, 1.22e-2, [1.0, 1.0], [0.0, 0.0], 0.9 * floor, "smoke", 4)
    assert [r.finding for r in below_floor] == [CONSISTENT, CONSISTENT, Finding(Verdict.YES), Finding(Verdict.YES)]
    assert "to < 1e-4 relative" in below_floor[3].ours and "smoke ResNet-9 w4" in below_floor[3].ours
    above = claims.question_claims(7.31e-4, 1.22e-2, [1.0, 1.1], [0.0, 0.0], 1.1 * floor, "smoke", 4)
    assert [r.finding for r in above] == [CONSISTENT, CONSISTENT, Finding(Verdict.NO), Finding(Verdict.NO)]
    assert "1.1e-04" in above[3].ours


def sgd_rows(a, noise=None, late=None, late_noise=None, floor=NOISE):
    """The sgd_remembers rows by key, the late reading defaulting to ``a`` and the noise to none finished."""
    empty = Finished("seed_noise", "smoke", [], 0, 6, 1)
    rows = claims.sgd_remembers_claims(a, noise or empty, late or a, late_noise or empty, "smoke", floor)
    return {r.key: r for r in rows}


HEADLINE, LATE = claims.HEADLINE, claims.HEADLINE + claims.LATE_READING
SEEDS_ROW, LATE_SEEDS = claims.SEED_NOISE, claims.SEED_NOISE + claims.LATE_READING
FITS = "every σ_w's selected predictor interpolates"
RADIAL = "the final weight norm stays tied to σ_w under SGD"


def test_the_sgd_remembers_rows_read_the_second_half_first_and_the_papers_reading_beside_it():
    a = arm(8.0)
    rows = claims.sgd_remembers_claims(a, finished(flat(8.0)), a, finished(flat(8.0)), "smoke", NOISE)
    assert [r.key for r in rows] == [LATE, HEADLINE, FITS, RADIAL, LATE_SEEDS, SEEDS_ROW]
    assert rows[0].rule == rows[1].rule == "fibook.forgetting.claims.large_spread"
    assert rows[0].thresholds == {"LARGE_SPREAD_PP": 5.0, "CONFIDENCE": 0.95}


def test_the_headline_spread_of_one_seed_is_judged_on_the_floors_borrowed_std():
    h = t975(4) * 0.5
    assert sgd_rows(arm(5.0 + h + EPS))[HEADLINE].verdict is Verdict.QUALITATIVELY
    assert sgd_rows(arm(5.0 + h - EPS))[HEADLINE].verdict is Verdict.NOT_RESOLVED
    assert sgd_rows(arm(5.0 - h - EPS))[HEADLINE].verdict is Verdict.NO
    assert sgd_rows(arm(20.0), floor=None)[HEADLINE].agrees.startswith("not tested: no error bar")
    assert sgd_rows(arm(20.0))[HEADLINE].ours.startswith("20.0 ± 0.5 pp (1 seed; pooled std of a one-seed spread)")


def test_the_radial_row_reads_the_whole_run_arm_and_the_seed_rows_wait_for_the_noise_arm():
    assert sgd_rows(radial_arm(0.8 + R_H + EPS, "sgd"), late=arm(8.0))[RADIAL].verdict is Verdict.YES
    assert sgd_rows(radial_arm(0.8 - R_H - EPS, "sgd"), late=arm(8.0))[RADIAL].verdict is Verdict.NO
    rows = sgd_rows(arm(8.0))
    assert rows[SEEDS_ROW].agrees == rows[LATE_SEEDS].agrees == "not tested yet"
    assert rows[FITS].verdict is Verdict.YES


def test_the_interpolation_row_reads_the_second_half_and_the_headline_applies_the_condition():
    early = arm(8.0, tau=2)  # interpolates at epoch 2, selected at epoch 1
    rows = sgd_rows(early, late=arm(8.0))
    assert rows[FITS].verdict is Verdict.YES
    assert rows[FITS].ours == ("2 of 2 σ_w at the checkpoint selected over the second half (0 at the paper's "
                               "whole-run selection; 2 reach 99.5 % at some epoch)")
    assert rows[HEADLINE].agrees.startswith("not tested: SGD (η = 0.01)'s selected predictor does not interpolate "
                                            "at 2 of 2 σ_w")
    assert rows[LATE].verdict is Verdict.QUALITATIVELY and rows[LATE].ours.startswith("8.0 ± 0.5 pp (1 seed")
    late_early = sgd_rows(arm(8.0), late=early)
    assert late_early[FITS].agrees == "no: selected before it fits the training set at σ_w = 1, 2.71828"
    assert late_early[LATE].verdict is Verdict.NOT_TESTED


def test_the_seed_noise_row_reads_every_seed_of_the_noise_arm():
    noise_arm = scattered(3 * DELTA + H3 + EPS)
    row = sgd_rows(arm(8.0), noise=finished(noise_arm))[SEEDS_ROW]
    assert row.verdict is Verdict.YES
    assert row.ours.startswith("spread 3.0 ± 0.3 pp (3 seeds; seed bootstrap")
    assert f"vs per-σ_w seed std ≤ {DELTA:.2f} pp (quick grid; 2 of 2 σ_w interpolate" in row.ours
    assert set(row.runs) == {r.id for r in noise_arm.records}
    # two seeds: spreads 10 and 12 pp (mean 11) against 3 x their seed std at sigma_w = e, sqrt 2: 11 - 4.24
    # is 6.8 pp above it, but on 1 degree of freedom the interval is 12.7 bootstrap SEs (0.71) wide each way
    records = [rec(s, seed, acc, 1, 10.0 * s) for seed, accs in ((0, (0.90, 0.80)), (1, (0.92, 0.80)))
               for s, acc in zip((1.0, 2.0), accs, strict=True)]
    (two_seeds,) = arms(records)
    assert 11 - 3 * math.sqrt(2) < t975(1) * enumerated_bootstrap([10.0, 12.0])
    assert sgd_rows(arm(8.0), noise=finished(two_seeds))[SEEDS_ROW].verdict is Verdict.NOT_RESOLVED


def depth_arm(arch, interpolated_last):
    records = [rec(s, 0, 0.9, 1 if (s < 2 or interpolated_last) else None, 10.0 * s, arch=arch) for s in (1.0, 2.0)]
    (a,) = arms(records, show=("arch",))
    return a


def test_deep_nets_fail_when_none_interpolates_at_the_largest_sigma():
    shallow = depth_arm("resnet9", True)
    failing, fitting = depth_arm("resnet20", False), depth_arm("resnet32", True)
    assert claims.deep_nets_fail([failing]).verdict is Verdict.QUALITATIVELY
    assert claims.deep_nets_fail([failing, fitting]).verdict is Verdict.NO
    for rise, verdict in ((1.0 - EPS, "qualitatively"), (1.0 + EPS, "not tested: train accuracy still rising")):
        r = failing.records[-1]  # sigma_w = 2: train accuracy 0.9 at epoch 2, then + rise at epoch 3
        history = dict(r.history, train_acc=r.history["train_acc"][:3] + [0.9 + rise / 100])
        records = failing.records[:-1] + [dataclasses.replace(r, history=history)]
        (a,) = arms(records, show=("arch",))
        assert claims.late_rise_pp(a) == pytest.approx(rise)
        assert claims.deep_nets_fail([a]).text.startswith(verdict)
    (row,) = claims.depth_claims(finished(failing, shallow), "smoke")  # listed from the shallowest
    assert row.ours.startswith("resnet9: reaches 99.5 % train accuracy at some epoch at 2 of 2 σ_w (at the selected "
                               "checkpoint: 2); resnet20: reaches 99.5 % train accuracy at some epoch at 1 of 2 σ_w "
                               "(at the selected checkpoint: 1)")
    assert row.verdict is Verdict.QUALITATIVELY
    (waiting,) = claims.depth_claims(finished(shallow), "smoke")
    assert waiting.agrees == "not tested yet"


def point(spread, value, run_value=None, optimizer="adam", lr=1e-3, epochs=3, tau=1, wd=0.0, experiment="x"):
    """A ClockPoint of a one-seed arm of ``spread`` pp on T_adapt, read at ``value`` (the whole run:
    ``run_value``)."""
    a = arm(spread, optimizer, lr=lr, wd=wd, epochs=epochs, tau=tau)
    return ClockPoint(experiment, a, "T_adapt", value, value, value,
                      value if run_value is None else run_value, spread_estimate(a, NOISE))


def test_the_clock_trend_counts_only_arms_whose_selected_predictors_interpolate():
    pts = [point(9.0, 1.0, lr=1e-3), point(5.0, 2.0, lr=2e-3), point(1.0, 3.0, lr=3e-3),
           point(20.0, 4.0, lr=4e-3, tau=None)]
    included, rho, drop = claims.trend(pts, "T_adapt", NOISE)
    assert [p.value for p in included] == [1.0, 2.0, 3.0] and rho == pytest.approx(-1.0)
    assert drop.value == pytest.approx(8.0) and not drop.paired and drop.se == pytest.approx(SE1)
    (row,) = [r for r in claims.clock_claims(pts, NOISE, "smoke") if r.claim.startswith("a larger T_adapt")]
    assert row.verdict is Verdict.QUALITATIVELY
    assert row.ours.startswith("3 arms (1 left out: selected predictor does not interpolate); ρ = -1.00")
    assert len(row.runs) == 8  # the arm left out was read too


def timed(a, factor):
    """``a`` with every recorded T_SGD (each epoch's and the run's) ``factor`` times as large."""
    records = [dataclasses.replace(r, history={**r.history, "T_SGD": [factor * v for v in r.history["T_SGD"]]},
                                   summary=dataclasses.replace(r.summary, clocks={**r.summary.clocks,
                                                                                  "T_SGD": factor * r.summary.clocks[
                                                                                      "T_SGD"]}))
               for r in a.records]
    (b,) = arms(records, show=("lr", "weight_decay"))
    return b


def test_the_t_sgd_trend_counts_momentum_sgd_at_its_effective_step_and_shows_the_raw_reading_beside_it():
    # T_SGD at the selected checkpoints: c, 4c for the SGD arms; c raw and 100 c effective for momentum SGD
    arm_list = [arm(9.0, lr=0.01), timed(arm(5.0, lr=0.02), 4.0), arm(1.0, "msgd", lr=0.01)]
    effective = [clock_point("x", a, NOISE) for a in arm_list]
    raw = [clock_point("x", a, NOISE, momentum="raw") for a in arm_list]
    rows = {r.claim: r for r in claims.clock_claims(effective, NOISE, "smoke", raw_points=raw)}
    counted = rows["a larger T_SGD leaves a smaller spread"]
    assert counted.ours.startswith("3 arms (none left out); ρ = -1.00")  # momentum SGD's clock is the largest
    assert counted.verdict is Verdict.QUALITATIVELY
    before = rows["a larger T_SGD leaves a smaller spread, momentum SGD read at its raw η and left out (the reading "
                  "before 2026-12-05)"]
    assert before.ours.startswith("2 arms (1 left out: momentum SGD: not a mechanism T_SGD is defined for); ρ = n/a")
    assert before.agrees.startswith("not tested: no rank correlation")
    assert not any("raw η" in r.claim for r in claims.clock_claims(effective, NOISE, "smoke"))


def test_equal_clock_pairs_collapse_when_their_spreads_lie_within_the_margin():
    equal_d = MARGIN - t95(4) * SE1  # two one-seed arms: unpaired, se = hypot(0.5, 0.5) on 4 dof
    same = [point(5.0, 1.0, run_value=2.0, lr=1e-3, epochs=3),
            point(5.0 - equal_d + EPS, 1.5, run_value=2.0, lr=5e-4, epochs=6)]
    unresolved = [same[0], point(5.0 - equal_d - EPS, 1.5, run_value=2.0, lr=5e-4, epochs=6)]
    apart = [same[0], point(5.0 - H1 - EPS, 1.5, run_value=2.0, lr=5e-4, epochs=6)]
    other = [same[0], point(1.0, 1.0, run_value=2.0 * (1 + 1e-6), lr=5e-4, epochs=6)]
    assert len(equal_clock_pairs(same)) == 1 and equal_clock_pairs(other) == []
    decay = [point(5.0, 1.0, run_value=2.0, optimizer="adamw", wd=0.01),  # the same sum of eta, another decay
             point(4.0, 1.0, run_value=2.0, optimizer="adamw", wd=0.03)]
    assert equal_clock_pairs(decay) == []
    assert len(equal_clock_pairs([decay[0], point(4.0, 1.0, run_value=2.0, optimizer="adamw", wd=0.01,
                                                 lr=5e-4, epochs=6)])) == 1
    for pts, verdict in ((same, "yes: equal within ±2 pp"), (unresolved, "not resolved"), (apart, "no")):
        (row,) = [r for r in claims.clock_claims(pts, NOISE, "smoke") if r.claim.startswith("equal")]
        assert row.agrees.startswith(verdict)
        assert "T_adapt = 2 over each run (1 and 1.5 at the selected checkpoints)" in row.ours
    fixed = [dataclasses.replace(p, experiment="clock_ladder") for p in same]  # judged by rows of their own
    assert not any(r.claim.startswith("equal") for r in claims.clock_claims(fixed, NOISE, "smoke"))


def test_the_longest_clock_arm_of_each_mechanism_is_the_longest_that_interpolates():
    pts = [point(5.0, 1.0, run_value=2.0, lr=1e-3), point(3.0, 2.0, run_value=4.0, lr=2e-3),
           point(1.0, 3.0, run_value=8.0, lr=4e-3, tau=None), point(2.0, 1.0, run_value=9.0, optimizer="muon")]
    longest = longest_clock_arms(pts)
    assert [(a.config.optimizer, a.config.lr) for a in longest] == [("adam", 2e-3), ("muon", 1e-3)]
    assert longest_clock_arms(pts, mechanisms=("AdamW",)) == []


def test_a_grid_too_short_for_a_row_says_so_rather_than_waiting():
    two = finished(*(arm(s, batch_size=b) for s, b in ((3.0, 16), (8.0, 128))))  # finished: 4 of 4 runs
    rows = claims.time_l2_batch_claims(two, two, two, two, lrs=[0.01], wds=[0.0], preset="smoke", noise=NOISE)
    assert rows[-1].agrees == "not tested: the grid of this preset lacks three batch sizes (a trend needs three)"
    assert rows[-1].rule == "fibook.forgetting.claims.rises_with_batch" and len(rows[-1].runs) == 4
    assert rows[-1].ours == "x at preset 'smoke': 4 of 4 runs finished, 2 of 2 arms complete"


def test_an_equal_clock_pair_is_named_by_its_factors_whichever_arm_comes_first():
    from synthetic import grid_records

    (fast,) = arms(grid_records(5.0, (0.1, 2.5), (0,), 40, optimizer="adam", lr=0.01))
    (slow,) = arms(grid_records(5.0, (0.1, 2.5), (0,), 80, optimizer="adam", lr=0.005))
    assert claims.pair_change(fast, slow) == claims.pair_change(slow, fast) == "lr ×0.5, epochs ×2"
    assert claims.pair_change(fast, fast) == "same settings"


def test_every_rule_of_part_one_says_when_it_was_fixed():
    marked = {name for name, fn in vars(claims).items() if callable(fn) and hasattr(fn, "thresholds")}
    assert {"erases", "collapses", "clock_or_rate", "large_spread", "every_sigma_interpolates"} <= marked
    rows = claims.fixed_rows()
    named = {r["rule"]: r["fixed"] for r in rows}
    assert marked <= set(named)
    assert all(r["fixed"] for r in rows) and all(r["fixed"] in claims.FIXED.values() for r in rows)
    assert {name for name in marked if named[name] == claims.FIXED["ladder"]} == {"clock_or_rate"}  # before its data
    assert {name for name in marked if "CONFIDENCE" in getattr(claims, name).thresholds} >= {
        "erases", "keeps_spread", "l2_erases", "falls_with_l2", "l2_lowers", "rises_with_batch", "large_spread",
        "above_seed_noise", "falls_with_clock", "collapses", "clock_or_rate", "common_norm", "radial_kept"}
