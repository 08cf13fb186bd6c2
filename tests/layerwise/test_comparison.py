"""The paired comparison of a schedule against a baseline (:mod:`fibook.layerwise.comparison`): its interval and
its verdict at the edges of ``SAME_TOL`` and of the interval, and divergence deciding a comparison."""

import numpy as np
import pytest
from synthetic import schedule_run as run

from fibook.layerwise import comparison

EPS = 1e-6  # a nudge well above rounding and well below any printed digit
T1 = 12.706204736174707  # Student t quantile 0.975 with 1 degree of freedom


def test_paired_intervals_decide_better_worse_within_noise_and_same_at_their_edges():
    def twice(x):  # two draws with one difference: no spread, so the interval is that difference itself
        return comparison.paired(run([x, x]), run([0.0, 0.0]))

    assert comparison.paired_verdict(twice(1e-9 * (1 - EPS))) == "same"
    assert comparison.paired_verdict(twice(1e-9 * (1 + EPS))) == "worse"
    assert comparison.paired_verdict(twice(-1e-9 * (1 + EPS))) == "better"
    # per-draw differences m + (-0.01, 0.01): sd 0.01414, se 0.01, half-width t_{0.975,1} * 0.01
    base = np.array([1.0, 5.0])  # large draw-to-draw spread that pairing removes
    half = T1 * 0.01
    for m, verdict in ((-half - EPS, "better"), (-half + EPS, "within noise"), (half + EPS, "worse"),
                       (half - EPS, "within noise")):
        p = comparison.paired(run(base + m + np.array([-0.01, 0.01])), run(base))
        assert comparison.paired_verdict(p) == verdict
    p = comparison.paired(run(base + 0.3 + np.array([-0.01, 0.01])), run(base))
    assert (p.mean, p.low, p.high, p.n, p.worse) == pytest.approx((0.3, 0.3 - half, 0.3 + half, 2, 2))
    assert p.text() == f"+0.3000 [{0.3 - half:+.4f}, {0.3 + half:+.4f}]"
    assert comparison.paired(run(base + np.array([-1e-12, 1e-12])), run(base)).text() == "0 (same)"
    # an end that would print -0.0000 keeps its sign and two digits (the interval lies below 0: "better")
    three = np.array([1.0, 5.0, 3.0])
    tiny = comparison.paired(run(three + np.array([-2e-4, -1e-4, -1.2e-4])), run(three))
    assert tiny.high < 0 and "-0.0000" not in tiny.text() and tiny.text().endswith(f"{tiny.high:+.1e}]")
    with pytest.raises(ValueError, match="same draws"):
        comparison.paired(run([1.0, 2.0]), run([1.0, 2.0, 3.0]))


def test_divergence_is_left_out_of_the_pairs_and_decides_the_verdict_when_counts_differ():
    method = run([0.1, np.nan, 0.1], diverged=[False, True, False])
    baseline = run([0.5, 0.5, 0.5])
    p = comparison.paired(method, baseline)
    assert (p.n, p.diverged, p.baseline_diverged) == (2, 1, 0) and p.mean == pytest.approx(-0.4)
    assert comparison.paired_verdict(p) == "worse (diverges more)"
    assert comparison.paired_verdict(comparison.paired(baseline, method)) == "better (diverges less)"
    both = run([0.5, np.nan, 0.5], diverged=[False, True, False])
    assert comparison.paired_verdict(comparison.paired(method, both)) == "better"
    none = comparison.paired(run(np.nan, diverged=[True]), run(0.5))
    assert none.n == 0 and none.text() == "no pair (every draw diverged under one of the two)"
    assert comparison.paired_verdict(none) == "worse (diverges more)"
    gone = run(np.nan, diverged=[True])
    assert comparison.paired_verdict(comparison.paired(gone, gone)) == "not compared (no pair)"
    one = comparison.paired(run([0.9, np.nan], diverged=[False, True]), run([0.5, np.nan], diverged=[False, True]))
    assert (one.n, one.mean, one.low, one.high) == (1, pytest.approx(0.4), -np.inf, np.inf)
    assert one.text() == "+0.4000 (one pair: no interval)" and comparison.paired_verdict(one) == "within noise"


def test_a_family_held_together_widens_each_interval_by_bonferroni():
    assert comparison.bonferroni_level(1) == pytest.approx(0.95)
    assert comparison.bonferroni_level(6) == pytest.approx(1 - 0.05 / 6)
    with pytest.raises(ValueError, match="at least one comparison"):
        comparison.bonferroni_level(0)
    # d = -0.2, -0.3, -0.4: mean -0.3, se 0.1/sqrt(3); t(0.975, 2) = 4.3027 puts the 95 % interval's top at
    # -0.052, t(0.9875, 2) = 6.2053 puts the interval held over two comparisons at +0.058
    base = np.array([1.0, 1.0, 1.0])
    method, baseline = run(base + np.array([-0.2, -0.3, -0.4])), run(base)
    alone = comparison.paired(method, baseline)
    held = comparison.paired(method, baseline, comparison.bonferroni_level(2))
    assert alone.high == pytest.approx(-0.3 + 4.302653 * 0.1 / np.sqrt(3))
    assert held.high == pytest.approx(-0.3 + 6.205347 * 0.1 / np.sqrt(3))
    assert comparison.paired_verdict(alone) == "better"
    assert comparison.paired_verdict(held) == "within noise"
