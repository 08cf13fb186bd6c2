"""Statistics the verdicts of every Part read: an estimate with its standard error and degrees of freedom, Student-t
intervals, the two-sided difference test, the equivalence test (two one-sided tests), a deterministic seed
bootstrap, the mean of paired differences, slope fits (and power laws fitted on log-log axes) with their
intervals, the Bonferroni bound for a table of z-scores, and the family-wise error of a table of tests.

Every test runs at one level, :data:`CONFIDENCE`. With the few seeds a CPU affords (two or three), a standard
error has one or two degrees of freedom, and the t quantile says what that costs: a 95 % two-sided interval is
4.30 standard errors wide on 2 degrees of freedom, 12.7 on 1, against 1.96 for a known standard deviation.

"Not different" is not "equal". :func:`equivalent` shows equality only when the whole (1 - 2 alpha) interval of
the difference lies inside a margin the rule names as a constant (Schuirmann's two one-sided tests), so too little
data gives "not resolved", never "equal". Part I says when its margin was fixed and which results existed then
(:data:`fibook.forgetting.claims.conditions.FIXED`).

Serves the verdicts of every chapter; the appendix "How the verdicts are decided" states its convention for
"beyond noise" once.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _scipy

CONFIDENCE = 0.95
EXACT_BOOTSTRAP = 50_000  # n**n resamples up to this many are enumerated (n <= 6); above, seeded draws
BOOTSTRAP_DRAWS = 20_000


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (the normal's for df = inf)."""
    if not 0 < p < 1:
        raise ValueError(f"a quantile needs 0 < p < 1, got {p!r}")
    if not df > 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df!r}")
    return float(_scipy.norm.ppf(p) if math.isinf(df) else _scipy.t.ppf(p, df))


@dataclass(frozen=True)
class Estimate:
    """A value with its standard error ``se`` on ``df`` degrees of freedom (inf: a known standard deviation; a
    nan ``se``: no error bar)."""

    value: float
    se: float
    df: float

    @property
    def has_error_bar(self) -> bool:
        return not (math.isnan(self.se) or math.isnan(self.value) or math.isnan(self.df) or self.df <= 0)

    def half_width(self, level: float = CONFIDENCE) -> float:
        """t_{(1 + level)/2, df} se: half the two-sided ``level`` interval."""
        return t_quantile((1 + level) / 2, self.df) * self.se if self.has_error_bar else math.nan

    def interval(self, level: float = CONFIDENCE) -> tuple[float, float]:
        """value -+ :meth:`half_width`, the two-sided Student-t interval."""
        h = self.half_width(level)
        return self.value - h, self.value + h

    def __sub__(self, other: float) -> Estimate:
        """The same estimate shifted by a constant (a threshold): its error is unchanged."""
        return Estimate(self.value - other, self.se, self.df)

    def __str__(self) -> str:
        if math.isnan(self.value):
            return "n/a"
        if not self.has_error_bar:
            return f"{signed(self.value)} (no error bar)"
        lo, hi = self.interval()
        return f"{signed(self.value)} [{signed(lo)}, {signed(hi)}]"


def signed(x: float, digits: int = 1) -> str:
    """``x`` with a sign and ``digits`` decimals, a value that rounds to zero printed ``+0.0`` (never ``-0.0``)."""
    r = round(float(x), digits)
    return f"{r + 0.0 if r != 0 else 0.0:+.{digits}f}"


def differs(e: Estimate, level: float = CONFIDENCE) -> bool:
    """The two-sided t test of zero at 1 - ``level``: |value| > t_{(1 + level)/2, df} se. False without an error
    bar."""
    return e.has_error_bar and abs(e.value) > e.half_width(level)


def above(e: Estimate, level: float = CONFIDENCE) -> bool:
    """``e`` is positive by :func:`differs` (its two-sided interval lies above zero)."""
    return differs(e, level) and e.value > 0


def below(e: Estimate, level: float = CONFIDENCE) -> bool:
    """``e`` is negative by :func:`differs` (its two-sided interval lies below zero)."""
    return differs(e, level) and e.value < 0


def equivalent(e: Estimate, margin: float, level: float = CONFIDENCE) -> bool:
    """Two one-sided tests at alpha = 1 - ``level`` (Schuirmann 1987): the difference ``e`` is shown to lie within
    (-margin, margin) when both value - t_{1-alpha, df} se > -margin and value + t_{1-alpha, df} se < margin, i.e.
    the (1 - 2 alpha) interval lies inside the margin. False without an error bar, whatever the value."""
    if margin <= 0:
        raise ValueError(f"an equivalence margin must be > 0, got {margin!r}")
    if not e.has_error_bar:
        return False
    reach = t_quantile(level, e.df) * e.se
    return e.value - reach > -margin and e.value + reach < margin


def under(e: Estimate, bound: float, level: float = CONFIDENCE) -> bool:
    """The one-sided test that ``e`` lies below ``bound``: value + t_{level, df} se < bound (half of
    :func:`equivalent`, for a quantity that cannot be negative, such as a spread)."""
    return e.has_error_bar and e.value + t_quantile(level, e.df) * e.se < bound


def bootstrap_indices(n: int) -> np.ndarray:
    """Resamples of n units with replacement, one per row: all n**n of them (equally likely, so the bootstrap is
    exact and needs no random numbers) when n**n <= :data:`EXACT_BOOTSTRAP`, else :data:`BOOTSTRAP_DRAWS` draws of
    a generator seeded with n."""
    if n < 1:
        raise ValueError(f"a bootstrap needs at least one unit, got {n}")
    if n**n <= EXACT_BOOTSTRAP:
        return np.array(list(itertools.product(range(n), repeat=n)), dtype=int)
    return np.random.default_rng(n).integers(0, n, size=(BOOTSTRAP_DRAWS, n))


@dataclass(frozen=True)
class Bootstrap:
    """A statistic over n units (seeds) and its bootstrap distribution: ``value`` on the units as they are,
    ``se`` the standard deviation over resamples times sqrt(n / (n - 1)), ``low``/``high`` the percentile range at
    ``level`` (descriptive: for a statistic such as max - min it need not cover the value).

    The factor makes ``se`` of a mean the usual sd / sqrt(n) (sd with ddof = 1), the standard error that Student's t
    on n - 1 degrees of freedom assumes; the plain bootstrap's is sqrt((n - 1) / n) of it (0.71 at n = 2, 0.82 at
    n = 3), which would make every interval on a few seeds too narrow."""

    value: float
    se: float
    low: float
    high: float
    n: int

    def estimate(self) -> Estimate:
        """As an :class:`Estimate` on n - 1 degrees of freedom (nan se for one unit: no error bar)."""
        return Estimate(self.value, self.se if self.n >= 2 else math.nan, self.n - 1 if self.n >= 2 else math.nan)


def bootstrap(statistic: Callable[[np.ndarray], float], n: int, level: float = CONFIDENCE) -> Bootstrap:
    """``statistic(idx)`` (idx: the units of one resample, an integer array of length n) on the units as they are
    (``np.arange(n)``) and over every resample of :func:`bootstrap_indices` (``se`` as :class:`Bootstrap` says); a
    paired statistic resamples both arms with the same idx."""
    values = np.array([statistic(idx) for idx in bootstrap_indices(n)])
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    se = float(values.std()) * (math.sqrt(n / (n - 1)) if n >= 2 else 1.0)
    return Bootstrap(float(statistic(np.arange(n))), se, float(lo), float(hi), n)


def slope(x: Sequence[float], y: Sequence[float]) -> Estimate:
    """The least-squares slope of y on x with its standard error sqrt(s^2 / sum (x - mean x)^2), s^2 the residual
    variance on n - 2 degrees of freedom (no error bar for n = 2)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size != y.size or x.size < 2:
        raise ValueError(f"a slope needs two or more (x, y) pairs of equal length, got {x.size} and {y.size}")
    sxx = float(((x - x.mean()) ** 2).sum())
    if sxx == 0:
        raise ValueError("a slope needs two or more distinct x")
    b = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
    if x.size == 2:
        return Estimate(b, math.nan, math.nan)
    resid = y - y.mean() - b * (x - x.mean())
    return Estimate(b, math.sqrt(float((resid**2).sum()) / (x.size - 2) / sxx), x.size - 2)


def mean(values: Sequence[float]) -> Estimate:
    """The mean of ``values`` (paired differences, say) with its standard error sd / sqrt(n) on n - 1 degrees of
    freedom (sd with ddof = 1; no error bar for one value)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        raise ValueError("a mean needs at least one value")
    if v.size == 1:
        return Estimate(float(v[0]), math.nan, math.nan)
    return Estimate(float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)), v.size - 1)


@dataclass(frozen=True)
class Slope:
    """A fitted power p of ``|y| ∝ x^p`` over ``n`` points with the half-width of its :data:`CONFIDENCE` Student-t
    interval on n - 2 degrees of freedom (the residuals carry both the noise and any curvature)."""

    slope: float
    half: float
    n: int

    def text(self) -> str:
        return f"{self.slope:.2f} ± {self.half:.2f}"


def log_slope(x: Sequence[float], y: Sequence[float], level: float = CONFIDENCE) -> Slope:
    """:func:`slope` of log|y| on log x, as a :class:`Slope` with the half-width of its two-sided ``level``
    interval (three or more points: two leave no residual to measure it)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 3:
        raise ValueError(f"a slope with an interval needs three or more points, got {x.size}")
    fit = slope(np.log(x), np.log(np.abs(y)))
    return Slope(fit.value, fit.half_width(level), int(x.size))


def bonferroni_z(n: int, level: float) -> float:
    """The two-sided Bonferroni bound for ``n`` z-scores at family-wise level ``level``: Phi^-1(1 - level / 2n).
    If no null hypothesis is false, all n |z| stay below it with probability at least 1 - level."""
    if n < 1:
        raise ValueError(f"need at least one z-score, got {n}")
    return float(_scipy.norm.isf(level / (2 * n)))


def family_wise_error(tests: int, level: float = CONFIDENCE) -> float:
    """The Bonferroni bound on the chance that at least one of ``tests`` true null hypotheses, each tested at
    alpha = 1 - ``level``, is rejected: min(1, tests x alpha) (it holds whatever the tests' dependence)."""
    if tests < 0:
        raise ValueError(f"a number of tests must be >= 0, got {tests}")
    return min(1.0, tests * (1 - level))
