"""The verdicts of the clocks chapter (:mod:`fibook.forgetting.claims.clocks`): the clock trend, equal-clock
pairs by the equivalence test against the margin, and the fixed-clock ladder, each from both sides of its
threshold and with too little data."""

import dataclasses
import math

import pytest
from known_arms import (
    DF,
    EPS,
    H1,
    H3,
    NOISE,
    R3,
    SE,
    SE1,
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
from scipy.stats import spearmanr
from synthetic import t95, t975

from fibook import stats
from fibook.claims import Verdict
from fibook.forgetting.arms import arms
from fibook.forgetting.claims import (
    clocks,
    conditions,
)
from fibook.forgetting.collapse import ClockPoint, clock_point, equal_clock_pairs
from fibook.forgetting.noise import Difference, spread_difference, spread_estimate


def test_a_clock_claim_needs_a_drop_beyond_noise_and_rho_at_most_minus_a_half():
    drop = Difference(H + EPS, SE, DF)
    assert clocks.falls_with_clock(-0.5, drop).verdict is Verdict.QUALITATIVELY
    assert clocks.falls_with_clock(-0.5 + EPS, drop).text.startswith("weakly (ρ = -0.50 > -0.5")
    assert clocks.falls_with_clock(-1.0, Difference(H - EPS, SE, DF)).text.startswith(
        "not resolved: smallest − largest clock is")
    assert clocks.falls_with_clock(-1.0, Difference(-H + EPS, SE, DF)).verdict is Verdict.NOT_RESOLVED
    assert clocks.falls_with_clock(-1.0, Difference(-H - EPS, SE, DF)).verdict is Verdict.NO
    assert clocks.falls_with_clock(-1.0, Difference(H + EPS, SE, 1)).verdict is Verdict.NOT_RESOLVED
    no_bar = clocks.falls_with_clock(-1.0, Difference(5.0, math.nan, math.nan))
    assert no_bar.text.startswith("not tested: no error bar")
    assert clocks.falls_with_clock(None, None).text.startswith("not tested: no rank correlation")

MARGIN = conditions.EQUIVALENCE_PP


def test_equal_clock_arms_collapse_when_their_difference_lies_within_the_margin_by_two_one_sided_tests():
    assert MARGIN == 2.0
    b = flat(5.0)
    # d = m - 5 paired over three seeds; equal when |d| + t_{0.95, 2} SE < 2
    assert clocks.collapses(scattered(5.0 + MARGIN - R3 - EPS), b, NOISE).text == "yes: equal within ±2 pp"
    assert clocks.collapses(scattered(5.0 - MARGIN + R3 + EPS), b, NOISE).text == "yes: equal within ±2 pp"
    assert MARGIN - R3 < H3  # just outside the equivalence bound and not different from zero either
    # d = 0.988, its 95 % interval 0.988 -+ 1.491
    assert clocks.collapses(scattered(5.0 + MARGIN - R3 + EPS), b, NOISE).text.startswith(
        "not resolved: +1.0 pp, 95 % [-0.5, +2.5] (paired over 3 seeds) is neither shown within ±2 pp nor away "
        "from 0")
    assert clocks.collapses(scattered(5.0 + H3 - EPS), b, NOISE).verdict is Verdict.NOT_RESOLVED
    assert clocks.collapses(scattered(5.0 + H3 + EPS), b, NOISE) .text.startswith("no: the spreads differ, ")
    assert clocks.collapses(scattered(5.0 - H3 - EPS), b, NOISE) .text.startswith("no: the spreads differ, ")
    assert clocks.collapses(scattered(8.0), b, NOISE) .text.startswith("no: the spreads differ, ")  # beyond the margin


def test_a_difference_within_the_margin_is_equal_even_when_it_also_differs_from_zero():
    tight = scattered(6.5, delta=0.1)
    assert stats.differs(spread_difference(tight, flat(5.0), NOISE))
    assert clocks.collapses(tight, flat(5.0), NOISE).text == "yes: equal within ±2 pp"


def test_equal_clock_arms_with_too_little_data_are_not_resolved_not_equal():
    # two seeds, a difference of 0.5 pp: inside the margin, but 0.5 + t_{0.95, 1} SE lies beyond it
    assert 0.5 + t95(1) * SE2 > MARGIN and 0.5 + R3 < MARGIN
    assert clocks.collapses(scattered(5.5), flat(5.0), NOISE).text == "yes: equal within ±2 pp"
    two_seeds = clocks.collapses(scattered(5.5, seeds=(0, 1)), flat(5.0, seeds=(0, 1)), NOISE)
    assert two_seeds.verdict is Verdict.NOT_RESOLVED
    # beyond the margin but not different from zero either
    apart = clocks.collapses(scattered(7.5, seeds=(0, 1)), flat(5.0, seeds=(0, 1)), NOISE)
    assert apart.verdict is Verdict.NOT_RESOLVED
    assert clocks.collapses(arm(5.0), arm(5.0), None).text.startswith("not tested: no error bar")
    assert clocks.collapses(flat(5.0, tau=None), flat(5.0), NOISE).verdict is Verdict.NOT_TESTED
    assert clocks.collapses(scattered(5.5, collapse=True), flat(5.0), NOISE).text == (
        f"yes: equal within ±2 pp; unstable: SGD (η = 0.01) {UNSTABLE_NOTE}")


LADDER = (1e-2, 5e-3, 2.5e-3, 1e-3)  # rates spanning a decade, largest first


def ladder(*offsets, tau=1, first_seeds=UP):
    """Adam rungs at the rates of LADDER: the largest rate's seeds scattered ``first_seeds`` around 5 pp, the
    others' spreads 5 + offset at every seed (each rung's difference from the first carries the SE ``SE3``)."""
    rungs = [arm(tuple(5.0 + p for p in first_seeds), "adam", lr=LADDER[0], seeds=SEEDS, epochs=4)]
    rungs += [flat(5.0 + o, "adam", lr=lr, epochs=4 * (k + 2), tau=tau if k == len(offsets) - 1 else 1)
              for k, (o, lr) in enumerate(zip(offsets, LADDER[1:], strict=False))]
    return rungs


def test_a_flat_ladder_says_the_clock_forgets():
    inside = MARGIN - R3 - EPS
    assert clocks.clock_or_rate(ladder(0.0, inside, -inside), NOISE).text == (
        "yes: the clock (every rung within ±2 pp of the largest rate's)")
    assert clocks.clock_or_rate(ladder(0.0, MARGIN - R3 + EPS, 0.0), NOISE).text.startswith(
        "not resolved: smallest − largest rate is")


def test_a_ladder_whose_spread_rises_as_the_rate_falls_says_the_rate_forgets():
    assert clocks.clock_or_rate(ladder(1.0, H3 + EPS), NOISE).text == (
        "no: the rate (the spread rises as η falls, ρ = -1.00)")
    assert clocks.clock_or_rate(ladder(1.0, H3 - EPS), NOISE).verdict is Verdict.NOT_RESOLVED  # H3 > the margin's reach


@pytest.mark.parametrize(("offsets", "rate"), [((-0.5, 0.5, 5.0), True), ((0.5, -0.5, 5.0), False)])
def test_the_rate_needs_a_rank_correlation_of_spread_with_the_rate_at_most_minus_a_half(offsets, rate):
    rho = spearmanr(LADDER, [5.0] + [5.0 + o for o in offsets]).statistic
    assert bool(rho <= clocks.CLOCK_RHO) is rate and rho == pytest.approx(-0.8 if rate else -0.4)
    verdict = clocks.clock_or_rate(ladder(*offsets), NOISE)
    assert verdict.text == "no: the rate (the spread rises as η falls, ρ = -0.80)" if rate else verdict.text.startswith(
        "not resolved")


def test_a_ladder_with_a_rung_that_does_not_interpolate_or_no_error_bar_is_not_tested():
    assert clocks.clock_or_rate(ladder(0.0, 0.0, tau=None), NOISE).text.startswith(
        "not tested: Adam (η = 0.0025)'s selected predictor does not interpolate")  # the last rung given
    one_seed = [arm(5.0, "adam", lr=lr, epochs=4 * (k + 1)) for k, lr in enumerate(LADDER)]
    assert clocks.clock_or_rate(one_seed, None).text.startswith("not tested: no error bar")
    assert clocks.clock_or_rate(ladder(0.0, 0.0)[:1], NOISE).text == "not tested: a ladder needs two rungs or more"
    assert clocks.clock_or_rate([*ladder(0.0, 0.0), flat(5.0, "adam", lr=1e-3, epochs=40, collapse=True)],
                                NOISE).text.endswith(f"unstable: Adam (η = 0.001) {UNSTABLE_NOTE}")


def unfit_first(*offsets):
    """A ladder whose largest rate's selected predictors do not fit the training set, followed by rungs as
    :func:`ladder`'s from the second rate on (the second rung scattered around 5 pp, the others 5 + offset)."""
    rest = ladder(*offsets)[1:]
    second = arm(tuple(5.0 + p for p in UP), "adam", lr=LADDER[1], seeds=SEEDS, epochs=8)
    return [flat(5.0, "adam", lr=LADDER[0], epochs=4, tau=None), second, *rest[1:]]


def test_the_ladder_is_read_again_over_the_rungs_that_fit_when_one_does_not():
    inside = MARGIN - R3 - EPS
    flat_rest = unfit_first(0.0, inside, -inside)  # rungs 2-4 within the margin of rung 2
    assert clocks.clock_or_rate(flat_rest, NOISE).text.startswith(
        "not tested: Adam (η = 0.01)'s selected predictor does not interpolate")
    assert clocks.clock_or_rate_where_fitting(flat_rest, NOISE).text == (
        "yes: the clock (every rung within ±2 pp of the largest rate's)")  # the largest rate that fits: 0.005
    rising = unfit_first(0.0, 1.0, H3 + EPS)
    assert clocks.clock_or_rate_where_fitting(rising, NOISE).text == clocks.clock_or_rate(rising[1:], NOISE).text == (
        "no: the rate (the spread rises as η falls, ρ = -1.00)")
    assert clocks.clock_or_rate_where_fitting(unfit_first(0.0, 0.0)[:3], NOISE).text == (
        "not tested: 2 rung(s) fit the training set, a trend needs three")
    assert clocks.clock_or_rate_where_fitting(ladder(0.0, 0.0, 0.0), NOISE).text == (
        "not tested: every rung fits, so the ladder's own row decides")


def test_ladder_rows_wait_until_every_arm_has_finished_on_every_seed():
    rungs = ladder(0.0, 0.5, -0.5)  # every rung within 0.5 pp of the first: 0.5 + t_{0.95, 2} SE < 2
    pair = [scattered(5.0, batch_size=64), flat(5.5, batch_size=128, epochs=12)]
    waiting = clocks.ladder_claims(finished(*rungs[:2], total_arms=4), finished(pair[0], total_arms=2), NOISE,
                                   "smoke")
    assert [r.agrees for r in waiting] == ["not tested yet"] * 3
    assert [r.rule for r in waiting] == ["fibook.forgetting.claims.clocks.clock_or_rate",
                                         "fibook.forgetting.claims.clocks.clock_or_rate_where_fitting",
                                         "fibook.forgetting.claims.clocks.collapses"]
    assert waiting[0].ours == "not finished (12 of 12 runs finished, 2 of 4 arms complete)"
    assert set(waiting[0].runs) == {r.id for a in rungs[:2] for r in a.records}
    shuffled = [rungs[2], rungs[0], rungs[3], rungs[1]]  # read largest rate first whatever the order
    done = clocks.ladder_claims(finished(*shuffled), finished(*reversed(pair)), NOISE, "smoke")
    assert [r.agrees for r in done] == ["yes: the clock (every rung within ±2 pp of the largest rate's)",
                                        "not tested: every rung fits, so the ladder's own row decides",
                                        "yes: equal within ±2 pp"]
    assert done[0].ours.startswith("T_adapt = 0.667 over each run; η = 0.01 × 4:")
    assert done[0].ours.index("η = 0.01 ×") < done[0].ours.index("η = 0.005 ×") < done[0].ours.index("η = 0.001 ×")
    assert "(3 of 3 σ_w fit)" not in done[0].ours and "(2 of 2 σ_w fit)" in done[0].ours
    assert done[2].ours.startswith("SGD (η = 0.01): 5.0 ± 0.3 pp") and done[2].ours.endswith("(smoke)")
    assert "Σ η 0.5 vs 2" in done[2].ours  # T_adapt records sum eta: 3 and 12 epochs

def point(spread, value, run_value=None, optimizer="adam", lr=1e-3, epochs=3, tau=1, wd=0.0, experiment="x",
          collapse=False, precision="fp32"):
    """A ClockPoint of a one-seed arm of ``spread`` pp on T_adapt, read at ``value`` (the whole run:
    ``run_value``); unstable with ``collapse``."""
    a = arm(spread, optimizer, lr=lr, wd=wd, epochs=epochs, tau=tau, collapse=collapse, precision=precision)
    return ClockPoint(experiment, a, "T_adapt", value, value, value,
                      value if run_value is None else run_value, spread_estimate(a, NOISE))


def test_the_clock_trend_counts_only_arms_whose_selected_predictors_interpolate():
    pts = [point(9.0, 1.0, lr=1e-3), point(5.0, 2.0, lr=2e-3), point(1.0, 3.0, lr=3e-3),
           point(20.0, 4.0, lr=4e-3, tau=None)]
    included, rho, drop = clocks.trend(pts, "T_adapt", NOISE)
    assert [p.value for p in included] == [1.0, 2.0, 3.0] and rho == pytest.approx(-1.0)
    assert drop.value == pytest.approx(8.0) and not drop.paired and drop.se == pytest.approx(SE1)
    (row,) = [r for r in clocks.clock_claims(pts, NOISE, "smoke") if r.claim.startswith("a larger T_adapt")]
    assert row.verdict is Verdict.QUALITATIVELY
    assert row.ours.startswith("3 arms (1 left out: selected predictor does not interpolate); ρ = -1.00")
    assert len(row.runs) == 8  # the arm left out was read too


def test_a_trend_with_unstable_arms_is_shown_again_over_the_stable_ones():
    pts = [point(9.0, 1.0, lr=1e-3), point(5.0, 2.0, lr=2e-3), point(6.0, 3.0, lr=3e-3),
           point(0.5, 4.0, lr=4e-3, collapse=True)]
    rows = [r for r in clocks.clock_claims(pts, NOISE, "smoke") if r.claim.startswith("a larger T_adapt")]
    assert [r.claim for r in rows] == ["a larger T_adapt leaves a smaller spread",
                                       "a larger T_adapt leaves a smaller spread, unstable arms left out (a check "
                                       "added 2026-12-06)"]
    everything, stable = rows
    assert everything.ours.startswith("4 arms (none left out); ρ = -0.80") and "unstable" in everything.agrees
    assert stable.ours.startswith("3 arms (1 left out: unstable); ρ = -0.50")
    assert stable.rule == everything.rule and len(stable.runs) == len(everything.runs) == 8


def test_each_rows_verdict_is_given_under_every_reading():
    late = [point(9.0, 1.0, lr=1e-3), point(5.0, 2.0, lr=2e-3), point(1.0, 3.0, lr=3e-3)]
    last = [point(9.0, 1.0, lr=1e-3), point(5.0, 2.0, lr=2e-3), point(1.0, 3.0, lr=3e-3, tau=None)]
    rows = clocks.reading_verdicts({"best": (late[:1], NOISE), "late": (late, NOISE), "last": (last, NOISE)}, "smoke")
    trend = {r["row"]: r for r in rows}["a larger T_adapt leaves a smaller spread"]
    assert list(trend) == ["row", "best", "late (the book's)", "last"]
    assert trend["late (the book's)"] == "qualitatively"  # three arms, falling beyond noise
    assert trend["best"] == trend["last"] == "not tested"  # one arm; two that count
    assert [r["row"] for r in rows] == [c.key for c in clocks.clock_claims(late, NOISE, "smoke")]


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
    rows = {r.claim: r for r in clocks.clock_claims(effective, NOISE, "smoke", raw_points=raw)}
    counted = rows["a larger T_SGD leaves a smaller spread"]
    assert counted.ours.startswith("3 arms (none left out); ρ = -1.00")  # momentum SGD's clock is the largest
    assert counted.verdict is Verdict.QUALITATIVELY
    before = rows["a larger T_SGD leaves a smaller spread, momentum SGD read at its raw η and left out (the reading "
                  "before 2026-12-05)"]
    assert before.ours.startswith("2 arms (1 left out: momentum SGD: not a mechanism T_SGD is defined for); ρ = n/a")
    assert before.agrees.startswith("not tested: no rank correlation")
    assert not any("raw η" in r.claim for r in clocks.clock_claims(effective, NOISE, "smoke"))


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
        (row,) = [r for r in clocks.clock_claims(pts, NOISE, "smoke") if r.claim.startswith("equal")]
        assert row.agrees.startswith(verdict)
        assert "T_adapt = 2 over each run (1 and 1.5 at the selected checkpoints)" in row.ours
    fixed = [dataclasses.replace(p, experiment="clock_ladder") for p in same]  # judged by rows of their own
    assert not any(r.claim.startswith("equal") for r in clocks.clock_claims(fixed, NOISE, "smoke"))

def test_an_equal_clock_pair_is_read_again_on_its_twins_at_another_precision():
    def pair(experiment, precision, spreads=(5.0, 1.0)):
        return [point(spreads[0], 1.0, run_value=2.0, lr=1e-3, epochs=3, experiment=experiment, precision=precision),
                point(spreads[1], 1.5, run_value=2.0, lr=5e-4, epochs=6, experiment=experiment, precision=precision)]

    bf16, fp32 = pair("adaptive_clock", "bf16"), pair("clock_ladder", "fp32", spreads=(5.0, 5.0))
    rows = [r for r in clocks.clock_claims(bf16 + fp32[::-1], NOISE, "smoke") if r.claim.startswith("equal")]
    assert [r.agrees.split(":")[0] for r in rows] == ["no", "yes"]  # the twins, listed in either order, agree
    h = t975(4) * math.hypot(0.5, 0.5)  # two one-seed arms: the pooled std on its 4 degrees of freedom
    assert rows[0].ours.endswith(f"5.0 pp (1 seed, bf16) vs 1.0 pp (1 seed, bf16) (difference +4.0 pp, 95 % "
                                 f"[{4 - h:+.1f}, {4 + h:+.1f}] (unpaired)) (smoke)")
    assert rows[1].claim == (f"{rows[0].claim}, in fp32 (the clock_ladder runs of the same arms; a check added "
                             "2026-12-06, after the bf16 pair's verdict was seen)")
    assert rows[1].key != rows[0].key and len(rows[1].runs) == 4 and set(rows[1].runs).isdisjoint(rows[0].runs)
    for others in (pair("clock_ladder", "bf16"),  # the same precision: not a twin
                   [fp32[0], point(5.0, 1.5, run_value=2.0, lr=2.5e-4, epochs=12, experiment="clock_ladder")],
                   fp32[:1]):  # another pair, or no pair
        assert len([r for r in clocks.clock_claims(bf16 + others, NOISE, "smoke") if r.claim.startswith("equal")]) == 1


def test_an_equal_clock_pair_is_named_by_its_factors_whichever_arm_comes_first():
    from synthetic import grid_records

    (fast,) = arms(grid_records(5.0, (0.1, 2.5), (0,), 40, optimizer="adam", lr=0.01))
    (slow,) = arms(grid_records(5.0, (0.1, 2.5), (0,), 80, optimizer="adam", lr=0.005))
    assert clocks.pair_change(fast, slow) == clocks.pair_change(slow, fast) == "lr ×0.5, epochs ×2"
    assert clocks.pair_change(fast, fast) == "same settings"
