"""fibook.stats against independent computations: scipy's t and normal quantiles and linear regression, an exact
bootstrap enumerated here with itertools, and the closed form of the exact bootstrap variance of a mean."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats
from synthetic import enumerated_bootstrap, t95, t975

from fibook import stats
from fibook.stats import Estimate

EPS = 1e-9


@pytest.mark.parametrize("df", [1, 2, 3, 4.5, 30])
@pytest.mark.parametrize("p", [0.025, 0.5, 0.95, 0.975])
def test_t_quantiles_are_scipys(p, df):
    assert stats.t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-12)


def test_the_t_quantile_on_infinite_degrees_of_freedom_is_the_normals_and_bad_arguments_are_refused():
    assert stats.t_quantile(0.975, math.inf) == pytest.approx(1.959963984540054)
    assert stats.t_quantile(0.975, 2) == pytest.approx(4.302652729911275)  # the cost of 3 seeds: 4.30 SE
    for p in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="0 < p < 1"):
            stats.t_quantile(p, 2)
    for df in (0, -1, math.nan):
        with pytest.raises(ValueError, match="degrees of freedom must be > 0"):
            stats.t_quantile(0.975, df)


def test_an_estimates_interval_is_value_plus_minus_the_t_quantile_times_its_standard_error():
    e = Estimate(3.0, 0.5, 2)
    h = t975(2) * 0.5
    assert e.half_width() == pytest.approx(h) and e.interval() == (pytest.approx(3.0 - h), pytest.approx(3.0 + h))
    assert e.half_width(0.9) == pytest.approx(t95(2) * 0.5)  # a 90 % interval reaches the 0.95 quantile
    assert str(e) == f"+3.0 [{3.0 - h:+.1f}, {3.0 + h:+.1f}]"
    shifted = e - 1.0  # a threshold subtracted: the error bar is unchanged
    assert (shifted.value, shifted.se, shifted.df) == (2.0, 0.5, 2)


def test_a_signed_number_that_rounds_to_zero_prints_plus_zero():
    assert [stats.signed(x) for x in (-0.04, -0.0, 0.04, -0.06, 1.26, -3.0)] == \
        ["+0.0", "+0.0", "+0.0", "-0.1", "+1.3", "-3.0"]
    assert stats.signed(-0.004, 2) == "+0.00" and stats.signed(-0.006, 2) == "-0.01"
    assert str(Estimate(0.5, 0.2, 4)).startswith("+0.5 [-0.1,")  # a bound below zero keeps its sign


@pytest.mark.parametrize("e", [Estimate(1.0, math.nan, 2), Estimate(math.nan, 1.0, 2), Estimate(1.0, 1.0, math.nan),
                               Estimate(1.0, 1.0, 0)])
def test_an_estimate_without_a_standard_error_or_degrees_of_freedom_has_no_error_bar_and_decides_nothing(e):
    assert not e.has_error_bar and math.isnan(e.half_width())
    assert not stats.differs(e) and not stats.above(e) and not stats.below(e)
    assert not stats.equivalent(e, 100.0) and not stats.under(e, 100.0)  # however wide the margin
    if math.isnan(e.se) or not e.df > 0:  # even a difference of exactly zero is not shown equal without one
        assert not stats.equivalent(Estimate(0.0, e.se, e.df), 100.0)


def test_a_known_standard_deviation_has_an_interval_of_1_96_standard_errors():
    h = scipy_stats.norm.ppf(0.975) * 2.0
    assert stats.above(Estimate(h + EPS, 2.0, math.inf)) and not stats.above(Estimate(h - EPS, 2.0, math.inf))


@pytest.mark.parametrize("df", [1, 2, 4])
def test_the_two_sided_test_rejects_zero_just_beyond_the_t_half_width(df):
    se = 0.7
    h = t975(df) * se
    assert stats.differs(Estimate(h + EPS, se, df)) and stats.above(Estimate(h + EPS, se, df))
    assert not stats.differs(Estimate(h - EPS, se, df))
    assert stats.below(Estimate(-h - EPS, se, df)) and not stats.above(Estimate(-h - EPS, se, df))
    assert not stats.below(Estimate(-h + EPS, se, df))
    assert not stats.below(Estimate(h + EPS, se, df))  # above is not below


@pytest.mark.parametrize("df", [1, 2, 4])
def test_the_two_sided_test_at_another_level_reads_that_levels_quantile(df):
    h90 = t95(df) * 1.0
    assert stats.differs(Estimate(h90 + EPS, 1.0, df), level=0.9)
    assert not stats.differs(Estimate(h90 + EPS, 1.0, df))  # not at 95 %: its half-width is wider


@pytest.mark.parametrize("df", [2, 4])
def test_equivalence_needs_the_whole_90_percent_interval_inside_the_margin(df):
    se, margin = 0.3, 2.0
    reach = t95(df) * se  # each one-sided test at 5 %
    for sign in (1, -1):
        assert stats.equivalent(Estimate(sign * (margin - reach - EPS), se, df), margin)  # just inside
        assert not stats.equivalent(Estimate(sign * (margin - reach + EPS), se, df), margin)  # crosses the margin
    assert stats.equivalent(Estimate(0.0, se, df), margin)  # tight interval around zero
    assert not stats.equivalent(Estimate(margin + 0.5, se, df), margin)  # beyond the margin


def test_equivalence_is_not_the_absence_of_a_difference():
    # a point estimate of 0.5 pp inside a 2 pp margin, not different from zero, but so imprecise on 1 degree of
    # freedom that the interval crosses the margin: not shown equal
    wide = Estimate(0.5, 0.5, 1)
    assert not stats.differs(wide) and not stats.equivalent(wide, 2.0)
    assert 0.5 + t95(1) * 0.5 > 2.0  # the reason, independently
    # and a difference shown different from zero can still be shown to lie within the margin
    tight = Estimate(1.5, 0.05, 2)
    assert stats.differs(tight) and stats.equivalent(tight, 2.0)


def test_an_equivalence_margin_must_be_positive():
    for margin in (0.0, -1.0):
        with pytest.raises(ValueError, match="margin must be > 0"):
            stats.equivalent(Estimate(0.0, 1.0, 2), margin)


@pytest.mark.parametrize("df", [1, 2, math.inf])
def test_under_is_the_one_sided_test_below_a_bound(df):
    se, bound = 0.4, 2.0
    reach = (scipy_stats.norm.ppf(0.95) if math.isinf(df) else t95(df)) * se
    assert stats.under(Estimate(bound - reach - EPS, se, df), bound)
    assert not stats.under(Estimate(bound - reach + EPS, se, df), bound)
    assert not stats.under(Estimate(bound + 1.0, se, df), bound)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_small_bootstraps_enumerate_every_resample_once(n):
    idx = stats.bootstrap_indices(n)
    assert idx.shape == (n**n, n)
    assert sorted(map(tuple, idx.tolist())) == sorted(itertools.product(range(n), repeat=n))


def test_the_largest_exact_bootstrap_is_six_units_and_larger_ones_draw_seeded_resamples():
    assert stats.bootstrap_indices(6).shape == (6**6, 6)  # 46,656 <= 50,000
    assert 6**6 <= stats.EXACT_BOOTSTRAP < 7**7
    drawn = stats.bootstrap_indices(7)
    assert drawn.shape == (stats.BOOTSTRAP_DRAWS, 7) and drawn.min() == 0 and drawn.max() == 6
    assert np.array_equal(drawn, stats.bootstrap_indices(7))  # seeded: the same draws every time
    with pytest.raises(ValueError, match="at least one unit"):
        stats.bootstrap_indices(0)


@pytest.mark.parametrize("x", [[4.0, 5.0, 6.5], [1.0, 1.0, 1.6, 2.2], [3.0, 7.0]])
def test_the_bootstrap_se_of_a_mean_is_the_closed_form_and_an_enumeration_done_here(x):
    x = np.array(x)
    n = len(x)
    b = stats.bootstrap(lambda idx: float(x[idx].mean()), n)
    # the exact bootstrap variance of a mean is (1/n) (1/n) sum (x - mean)^2; times n / (n - 1), the usual sd^2 / n
    closed = math.sqrt(((x - x.mean()) ** 2).sum() / n / n * n / (n - 1))
    assert b.se == pytest.approx(closed, rel=1e-12) == pytest.approx(np.std(x, ddof=1) / math.sqrt(n), rel=1e-12)
    assert b.se == pytest.approx(enumerated_bootstrap(x), rel=1e-12)
    assert b.value == pytest.approx(x.mean()) and b.n == n
    means = [x[list(i)].mean() for i in itertools.product(range(n), repeat=n)]
    assert (b.low, b.high) == (pytest.approx(np.quantile(means, 0.025)), pytest.approx(np.quantile(means, 0.975)))
    e = b.estimate()
    assert (e.value, e.se, e.df) == (b.value, b.se, n - 1)


def test_a_bootstrap_of_a_nonlinear_statistic_matches_an_enumeration_done_here():
    # the spread of column means of a (seeds x sigma_w) matrix: max - min of the means
    m = np.array([[90.0, 85.0, 80.0], [91.0, 84.0, 83.0], [89.0, 88.0, 79.0]])

    def spread(rows):
        means = rows.mean(axis=0)
        return float(means.max() - means.min())

    b = stats.bootstrap(lambda idx: spread(m[idx]), 3)
    assert b.value == pytest.approx(spread(m)) and b.se == pytest.approx(enumerated_bootstrap(m, spread))


def test_a_paired_statistic_resamples_both_arms_with_the_same_units():
    a, b = np.array([4.0, 5.0, 6.5]), np.array([3.0, 4.5, 5.0])
    paired = stats.bootstrap(lambda idx: float(a[idx].mean() - b[idx].mean()), 3)
    assert paired.se == pytest.approx(enumerated_bootstrap(a - b))  # the bootstrap of the per-unit differences
    assert paired.se < math.hypot(enumerated_bootstrap(a), enumerated_bootstrap(b))  # a and b move together


def test_one_unit_has_no_bootstrap_error_bar():
    b = stats.bootstrap(lambda idx: 3.0, 1)
    assert b.se == 0.0 and not b.estimate().has_error_bar


def test_the_slope_and_its_standard_error_are_linregress():
    x = np.array([0.0, 1.0, 2.0, 3.0, 5.0])
    y = np.array([0.1, 0.9, 2.3, 2.8, 5.2])
    fit = scipy_stats.linregress(x, y)
    e = stats.slope(x, y)
    assert (e.value, e.se, e.df) == (pytest.approx(fit.slope), pytest.approx(fit.stderr), 3)
    exact = stats.slope([0, 1, 2], [1, 3, 5])  # on a line: no residual
    assert exact.value == pytest.approx(2.0) and exact.se == pytest.approx(0.0) and exact.df == 1


def test_two_points_give_a_slope_without_an_error_bar_and_bad_input_is_refused():
    two = stats.slope([1.0, 3.0], [2.0, 6.0])
    assert two.value == pytest.approx(2.0) and not two.has_error_bar
    with pytest.raises(ValueError, match="two or more"):
        stats.slope([1.0], [2.0])
    with pytest.raises(ValueError, match="equal length"):
        stats.slope([1.0, 2.0, 3.0], [2.0, 3.0])
    with pytest.raises(ValueError, match="distinct x"):
        stats.slope([1.0, 1.0, 1.0], [2.0, 3.0, 4.0])


def test_the_family_wise_error_is_the_bonferroni_bound_capped_at_one():
    assert stats.family_wise_error(0) == 0.0
    assert stats.family_wise_error(1) == pytest.approx(0.05)
    assert stats.family_wise_error(7) == pytest.approx(0.35)
    assert stats.family_wise_error(20) == pytest.approx(1.0) and stats.family_wise_error(21) == 1.0
    assert stats.family_wise_error(3, level=0.99) == pytest.approx(0.03)
    with pytest.raises(ValueError, match=">= 0"):
        stats.family_wise_error(-1)


def test_log_slope_recovers_a_power_law_and_widens_its_interval_with_curvature():
    h = 256 * 2 ** (np.arange(5) / 2)  # equally spaced in log h, so a square term is orthogonal to the line
    exact = stats.log_slope(h, 3.0 * h**-0.75)
    assert exact.slope == pytest.approx(-0.75, abs=1e-12) and exact.half < 1e-12 and exact.n == 5
    x = np.log(h)
    bent = stats.log_slope(h, -np.exp(-0.75 * x + 0.05 * (x - x.mean()) ** 2))  # the sign is ignored
    resid = 0.05 * ((x - x.mean()) ** 2 - ((x - x.mean()) ** 2).mean())  # curvature left after the line
    se = np.sqrt((resid**2).sum() / 3 / ((x - x.mean()) ** 2).sum())
    assert bent.half == pytest.approx(3.182446305284263 * se, rel=1e-9)  # t quantile 0.975, 3 degrees of freedom
    with pytest.raises(ValueError, match="three or more points, got 2"):
        stats.log_slope(h[:2], h[:2])


def test_mean_of_paired_differences_has_its_t_interval():
    d = np.array([0.1, 0.3, 0.2, 0.6])
    e = stats.mean(d)
    assert e.value == pytest.approx(0.3) and e.df == 3
    assert e.half_width() == pytest.approx(scipy_stats.t.ppf(0.975, 3) * d.std(ddof=1) / 2)
    assert not stats.mean([0.4]).has_error_bar
    with pytest.raises(ValueError, match="at least one value"):
        stats.mean([])


def test_bonferroni_z_bounds_n_z_scores_at_the_family_wise_level():
    assert stats.bonferroni_z(1, 0.05) == pytest.approx(1.959963984540054)
    assert stats.bonferroni_z(16, 0.05) == pytest.approx(scipy_stats.norm.ppf(1 - 0.05 / 32))
    with pytest.raises(ValueError, match="at least one z-score"):
        stats.bonferroni_z(0, 0.05)
