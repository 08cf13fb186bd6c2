"""The verdicts of the time, learning rate, L2 and batch size chapter
(:mod:`fibook.forgetting.claims.time_lr_l2_batch`) on arms with known spreads: just above and below each
threshold, with too little data, and rows that wait for unfinished experiments.

``rules`` is the module under test."""

import math

import pytest
from known_arms import (
    DELTA,
    DF,
    DOWN,
    EPS,
    H3,
    NOISE,
    R3,
    SE,
    SE2,
    SEEDS,
    UNSTABLE_NOTE,
    UP,
    H,
    arm,
    finished,
    flat,
    scattered,
)
from synthetic import enumerated_bootstrap, t95, t975

from fibook.claims import Verdict
from fibook.forgetting.claims import time_lr_l2_batch as rules
from fibook.forgetting.experiments import grids, l2_control_arm
from fibook.forgetting.loading import Finished
from fibook.forgetting.noise import Difference


def test_longer_training_keeps_the_spread_when_the_longer_arm_keeps_more_than_half_beyond_noise():
    short = flat(10.0)
    # c = spread(long) - 0.5 x spread(short) = m - 5
    assert rules.keeps_spread(short, scattered(5.0 + H3 + EPS, epochs=6), NOISE).verdict is Verdict.QUALITATIVELY
    assert rules.keeps_spread(short, scattered(5.0 + H3 - EPS, epochs=6), NOISE).text.startswith(
        "not resolved: spread − 0.5 × the shorter arm's is")
    assert rules.keeps_spread(short, scattered(5.0 - H3 + EPS, epochs=6), NOISE).verdict is Verdict.NOT_RESOLVED
    assert rules.keeps_spread(short, scattered(5.0 - H3 - EPS, epochs=6), NOISE).verdict is Verdict.NO
    assert rules.keeps_spread(flat(10.0, seeds=(0, 1)), scattered(7.0, seeds=(0, 1), epochs=6), NOISE).text.startswith(
        "not resolved")  # 2 above the contrast's zero, but two seeds: 12.7 x its SE
    assert rules.keeps_spread(arm(10.0), arm(10.0, epochs=6), None).text.startswith("not tested: no error bar")
    assert rules.keeps_spread(short, scattered(10.0, tau=None, epochs=6), NOISE).verdict is Verdict.NOT_TESTED


def test_l2_erases_outright_when_the_l2_spread_lies_under_the_margin_by_the_one_sided_test():
    base = flat(10.0)
    # d = 10 - m far above zero; the L2 arm's 95 % one-sided bound m + t_{0.95, 2} SE against 2 pp
    assert rules.l2_erases(base, scattered(2.0 - R3 - EPS, lr=0.1, wd=0.06), NOISE).verdict is Verdict.YES
    assert rules.l2_erases(base, scattered(2.0 - R3 + EPS, lr=0.1, wd=0.06), NOISE).text == (
        "qualitatively: below 0.5 of the baseline's, not shown below 2 pp")


def test_l2_erases_outright_only_when_the_drop_from_the_baseline_is_beyond_noise():
    m = 0.9
    assert m + R3 < 2.0  # the L2 arm alone is shown under the margin
    both = scattered(m, lr=0.1, wd=0.06)
    assert rules.l2_erases(flat(m + H3 + EPS), both, NOISE).verdict is Verdict.YES
    # the baseline hardly above it: erased "outright" cannot be told from a baseline that had nothing to erase
    assert rules.l2_erases(flat(m + H3 - EPS), both, NOISE).text.startswith(
        "not resolved: spread − 0.5 × the baseline's is")


def test_l2_erases_qualitatively_below_half_of_the_baseline_and_no_above_it():
    base = flat(10.0)
    # c = m - 0.5 x 10
    assert rules.l2_erases(base, scattered(5.0 - H3 - EPS, lr=0.1, wd=0.06), NOISE).verdict is Verdict.QUALITATIVELY
    assert rules.l2_erases(base, scattered(5.0 - H3 + EPS, lr=0.1, wd=0.06), NOISE).verdict is Verdict.NOT_RESOLVED
    assert rules.l2_erases(base, scattered(5.0 + H3 - EPS, lr=0.1, wd=0.06), NOISE).verdict is Verdict.NOT_RESOLVED
    assert rules.l2_erases(base, scattered(5.0 + H3 + EPS, lr=0.1, wd=0.06), NOISE).verdict is Verdict.NO


def test_l2_that_raises_the_spread_beyond_noise_is_a_no_of_its_own():
    base = flat(2.0)
    assert rules.l2_erases(base, scattered(2.0 + H3 + EPS, lr=0.1, wd=0.06), NOISE).text == "no: L2 raised the spread"
    # above half of it
    assert rules.l2_erases(base, scattered(2.0 + H3 - EPS, lr=0.1, wd=0.06), NOISE).verdict is Verdict.NO


def test_l2_erasing_with_too_little_data_is_never_yes():
    # two seeds: the L2 arm's one-sided bound m + t_{0.95, 1} SE lies above 2 pp, where three seeds lay under it,
    # and its contrast with half the baseline, 0.9 - 5, lies within t_{0.975, 1} SE of zero
    assert rules.l2_erases(flat(10.0), scattered(0.9, lr=0.1, wd=0.06), NOISE).verdict is Verdict.YES
    assert 0.9 + R3 < 2.0 < 0.9 + t95(1) * SE2 and 5.0 - 0.9 < t975(1) * SE2
    verdict = rules.l2_erases(flat(10.0, seeds=(0, 1)), scattered(0.9, seeds=(0, 1), lr=0.1, wd=0.06), NOISE)
    assert verdict.text.startswith("not resolved: spread − 0.5 × the baseline's is")
    assert rules.l2_erases(arm(10.0), arm(0.0, lr=0.1, wd=0.06), None).text.startswith("not tested: no error bar")
    assert rules.l2_erases(flat(10.0), scattered(0.9, lr=0.1, wd=0.06, tau=None), NOISE).verdict is Verdict.NOT_TESTED


def l2_row(first, middle, last):
    """Arms in rising lambda whose steps first -> middle and middle -> last carry the SE of three seeds scattered
    +-DELTA (``SE3``) and whose drop first -> last carries twice it (per-seed drops scattered +-2 DELTA)."""
    return [arm(tuple(first + p for p in UP), seeds=SEEDS), flat(middle, wd=0.01),
            arm(tuple(last + p for p in DOWN), seeds=SEEDS, wd=0.06)]


def test_the_spread_falls_along_a_row_when_its_drop_is_beyond_noise_and_no_step_rises_beyond_it():
    drop_h = t975(2) * enumerated_bootstrap([-2 * DELTA, 0.0, 2 * DELTA])
    assert drop_h == pytest.approx(2 * H3)
    assert rules.falls(l2_row(6.0, 6.0 - H3, 6.0 - drop_h - EPS), NOISE) == "falls"
    assert rules.falls(l2_row(6.0, 6.0 - H3, 6.0 - drop_h + EPS), NOISE) == "unresolved"
    assert rules.falls(l2_row(6.0, 6.0 + H3 - EPS, 1.0), NOISE) == "falls"  # a rise within noise is allowed
    assert rules.falls(l2_row(6.0, 6.0 + H3 + EPS, 1.0), NOISE) == "unresolved"  # a step rises beyond it
    assert rules.falls(l2_row(2.0, 2.0, 2.0 + drop_h + EPS), NOISE) == "rises"
    assert rules.falls(l2_row(2.0, 2.0, 2.0 + drop_h - EPS), NOISE) == "unresolved"


def test_more_l2_leaves_a_smaller_spread_when_every_row_falls():
    falling, level = l2_row(6.0, 4.0, 1.0), l2_row(3.0, 3.0, 3.0)
    rising = l2_row(1.0, 3.0, 6.0)
    assert rules.falls_with_l2({"a": falling, "b": falling}, NOISE).verdict is Verdict.QUALITATIVELY
    assert rules.falls_with_l2({"a": falling, "b": level}, NOISE).text == "partly: only a"
    assert rules.falls_with_l2({"a": rising, "b": level}, NOISE).verdict is Verdict.NO
    assert rules.falls_with_l2({"a": level}, NOISE).text == (
        "not resolved: no row's first and last spreads differ beyond noise")
    assert rules.falls_with_l2({"a": falling + [flat(0.5, tau=None)]}, NOISE).verdict is Verdict.NOT_TESTED
    assert rules.falls_with_l2({"a": [arm(6.0), arm(1.0, wd=0.06)]}, None).text.startswith("not tested: no error bar")
    two = {"a": [scattered(6.0, seeds=(0, 1)), flat(3.5, seeds=(0, 1), wd=0.06)]}  # a drop of 2.5, 2 seeds
    assert rules.falls_with_l2(two, NOISE).verdict is Verdict.NOT_RESOLVED


def test_the_l2_term_lowers_the_spread_when_its_control_is_higher_beyond_noise():
    control = flat(5.0)
    assert rules.l2_lowers(control, scattered(5.0 - H3 - EPS, wd=0.1), NOISE).verdict is Verdict.YES
    assert rules.l2_lowers(control, scattered(5.0 - H3 + EPS, wd=0.1), NOISE).text.startswith(
        "not resolved: control − L2 arm is")
    assert rules.l2_lowers(control, scattered(5.0 + H3 - EPS, wd=0.1), NOISE).verdict is Verdict.NOT_RESOLVED
    assert rules.l2_lowers(control, scattered(5.0 + H3 + EPS, wd=0.1), NOISE).text == "no: L2 raised the spread"
    assert rules.l2_lowers(flat(5.0, seeds=(0, 1)), scattered(5.0 - H3 - EPS, seeds=(0, 1), wd=0.1),
                            NOISE).text.startswith("not resolved")  # the same drop, two seeds
    assert rules.l2_lowers(arm(5.0), arm(0.0, wd=0.1), None).text.startswith("not tested: no error bar")
    assert rules.l2_lowers(flat(5.0, tau=None), flat(0.0, wd=0.1), NOISE).verdict is Verdict.NOT_TESTED


def test_batch_size_needs_a_rise_beyond_noise_and_a_rank_correlation_above_a_half():
    rise = Difference(H + EPS, SE, DF)
    assert rules.rises_with_batch(0.5 + EPS, rise).verdict is Verdict.QUALITATIVELY
    assert rules.rises_with_batch(0.5, rise).text == "weakly (ρ = +0.50 ≤ 0.5)"
    assert rules.rises_with_batch(1.0, Difference(H - EPS, SE, DF)).text.startswith(
        "not resolved: largest − smallest b is")
    assert rules.rises_with_batch(1.0, Difference(-H + EPS, SE, DF)).verdict is Verdict.NOT_RESOLVED
    assert rules.rises_with_batch(1.0, Difference(-H - EPS, SE, DF)).verdict is Verdict.NO
    assert rules.rises_with_batch(1.0, Difference(H + EPS, SE, 1)).verdict is Verdict.NOT_RESOLVED  # fewer seeds
    assert rules.rises_with_batch(1.0, Difference(5.0, math.nan, math.nan)).text.startswith("not tested: no error bar")
    for rho, d in ((None, rise), (1.0, None)):  # fewer than three interpolating batch sizes
        assert rules.rises_with_batch(rho, d).text.startswith("not tested: no rank correlation")

def test_time_l2_batch_rows_wait_for_unfinished_experiments():
    empty = Finished("long_training", "smoke", [], 1, 4, 2)
    l2 = finished(arm(10.0, lr=0.01), arm(2.0, lr=0.1), arm(1.5, lr=0.1, wd=0.06), arm(5.0, lr=0.01, wd=0.06))
    l2_clock = finished(arm(10.0), arm(9.5, wd=0.01), arm(5.0, wd=0.06), arm(8.0, epochs=6), arm(7.9, wd=0.1, epochs=6))
    batch = finished(*(arm(s, batch_size=b) for s, b in ((3.0, 16), (5.0, 64), (8.0, 128))))
    rows = rules.time_l2_batch_claims(empty, l2, l2_clock, batch, lrs=[0.01, 0.1], wds=[0.0, 0.06], preset="smoke",
                                       noise=NOISE)
    assert rows[0].ours == "not finished (1 of 4 runs finished, 0 of 2 arms complete)"
    assert rows[0].agrees == "not tested yet"
    # L2 at the large rate: 10 -> 1.5 pp is a drop beyond noise, below half beyond noise, but 1.5 pp is not shown
    # under 2 pp (1.5 + t_{0.95, 4} 0.5 > 2)
    assert 1.5 + t95(4) * 0.5 > 2.0
    assert [r.agrees for r in rows[1:]] == ["qualitatively: below 0.5 of the baseline's, not shown below 2 pp",
                                            "partly: only η = 0.01, 3 epochs", "yes", "qualitatively"]
    # every spread in a list carries the error bar a one-seed arm borrows (NOISE: 0.5 pp)
    assert rows[2].ours.startswith("η = 0.01, 3 epochs: 10.0 ± 0.5 pp → 9.5 ± 0.5 pp → 5.0 ± 0.5 pp at λ = 0, 0.01, "
                                   "0.06; η = 0.01, 6 epochs: 8.0 ± 0.5 pp → 7.9 ± 0.5 pp at λ = 0, 0.1 (± one "
                                   "standard error")
    assert rows[4].ours.startswith("b = 16: 3.0 ± 0.5 pp, b = 64: 5.0 ± 0.5 pp, b = 128: 8.0 ± 0.5 pp; rank "
                                   "correlation +1.00") and rows[4].agrees == "qualitatively"
    shaky = finished(*(arm(s, batch_size=b, collapse=b == 64) for s, b in ((3.0, 16), (5.0, 64), (8.0, 128))))
    shaky_row = rules.time_l2_batch_claims(empty, l2, l2_clock, shaky, lrs=[0.01, 0.1], wds=[0.0, 0.06],
                                           preset="smoke", noise=NOISE)[4]
    assert shaky_row.agrees == f"qualitatively; unstable: SGD (η = 0.01) {UNSTABLE_NOTE}"
    # no unstable arm has two seeds, so the unstable one has nothing to borrow, and says so
    assert "b = 64: 5.0 pp [unstable] (no error bar), b = 128: 8.0 ± 0.5 pp" in shaky_row.ours

def test_an_unstable_arm_is_marked_once_after_its_spread():
    empty = Finished("long_training", "smoke", [], 1, 4, 2)
    l2 = finished(arm(10.0, lr=0.01), arm(1.5, lr=0.1, wd=0.06, collapse=True))
    l2_clock = finished(arm(10.0), arm(5.0, wd=0.06, collapse=True))
    batch = finished(*(arm(s, batch_size=b) for s, b in ((3.0, 16), (5.0, 64), (8.0, 128))))
    rows = rules.time_l2_batch_claims(empty, l2, l2_clock, batch, lrs=[0.01, 0.1], wds=[0.0, 0.06], preset="smoke",
                                       noise=NOISE)
    for row in rows[1:4]:
        assert row.ours.count("[unstable]") == 1
    assert rows[3].ours.startswith("SGD (η = 0.01) → SGD + L2 (η = 0.01, λ = 0.06): 10.0 ± 0.5 pp → 5.0 pp "
                                   "[unstable] (no error bar)")


def test_a_grid_too_short_for_a_row_says_so_rather_than_waiting():
    two = finished(*(arm(s, batch_size=b) for s, b in ((3.0, 16), (8.0, 128))))  # finished: 4 of 4 runs
    rows = rules.time_l2_batch_claims(two, two, two, two, lrs=[0.01], wds=[0.0], preset="smoke", noise=NOISE)
    assert rows[-1].agrees == "not tested: the grid of this preset lacks three batch sizes (a trend needs three)"
    assert rows[-1].rule == "fibook.forgetting.claims.time_lr_l2_batch.rises_with_batch" and len(rows[-1].runs) == 4
    assert rows[-1].ours == "x at preset 'smoke': 4 of 4 runs finished, 2 of 2 arms complete"


@pytest.mark.parametrize("preset", ["smoke", "book", "gpu"])
def test_the_l2_control_row_reads_the_arm_that_seeds_repeats(preset):
    """The L2-control verdict compares the first row's strongest lambda with its control
    (:func:`rules.l2_rows`); ``seeds`` repeats that arm on the noise seeds
    (:func:`fibook.forgetting.experiments.l2_control_arm`): the two must name the same arm."""
    rows = rules.l2_rows(finished(*(arm(1.0, lr=lr, wd=wd, epochs=e) for lr, wd, e in grids(preset).l2_clock)))
    strongest = next(iter(rows.values()))[-1].config
    assert (strongest.lr, strongest.weight_decay, strongest.epochs) == l2_control_arm(grids(preset))
