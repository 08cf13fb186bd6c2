"""A schedule against a baseline on the same evaluation draws: the paired difference of final test loss, its
Student-t interval and the word a comparison table prints for it (better, worse, same, within noise), read by the
rows of "A balancing scheduler" (``scheduler``) and :func:`fibook.layerwise.claims.balancing_helps`.

=================================  ==========================================================================
``SAME_TOL = 1e-9``                two schedules end the "same" when the interval of their paired final
                                   test-loss difference (same sampled problems) lies within 1e-9 of 0
``CONFIDENCE = 0.95``              otherwise one is better (worse) when the 95 % Student-t interval of the
                                   paired difference lies below (above) 0, else "within noise"; one that
                                   diverges on more draws is worse
=================================  ==========================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fibook import stats
from fibook.layerwise.scheduler import ScheduleRun

SAME_TOL = 1e-9
CONFIDENCE = stats.CONFIDENCE


@dataclass(frozen=True)
class Paired:
    """A schedule against a baseline on the same evaluation problems: the mean of the per-draw differences of
    final test loss ``d_i = method_i − baseline_i`` over the draws where neither diverged, its ``CONFIDENCE``
    interval (Student t), their number ``n``, in how many of them the method ends worse by more than
    ``SAME_TOL``, and how many draws each diverged on. With one pair the interval is unbounded (no spread to
    estimate); with none (every draw diverged under one of the two) there is no difference, and ``mean``, ``low``
    and ``high`` are NaN, never printed."""

    mean: float
    low: float
    high: float
    n: int
    worse: int
    diverged: int
    baseline_diverged: int

    def text(self) -> str:
        """``+0.0376 [+0.0121, +0.0631]`` (an end that rounds to 0.0000 keeps two significant digits,
        ``-1.3e-05``, so its sign is seen), or ``0 (same)`` when every difference is within ``SAME_TOL`` (so no
        rounding-level sign reaches the page); ``+0.0376 (one pair: no interval)``; ``no pair (every draw diverged
        under one of the two)``."""
        if self.n == 0:
            return "no pair (every draw diverged under one of the two)"
        def num(x: float) -> str:  # four decimals, or two significant digits where those would read 0.0000
            return f"{x:+.4f}" if x == 0 or abs(x) >= 5e-5 else f"{x:+.1e}"

        if self.n == 1:
            return f"{num(self.mean)} (one pair: no interval)"
        if max(abs(self.low), abs(self.high), abs(self.mean)) <= SAME_TOL:
            return "0 (same)"
        return f"{num(self.mean)} [{num(self.low)}, {num(self.high)}]"


def paired(method: ScheduleRun, baseline: ScheduleRun, level: float = CONFIDENCE) -> Paired:
    """The paired comparison of :class:`Paired`: ``mean ± t_{(1+level)/2, n−1} sd(d) / sqrt(n)`` (unbounded for
    one pair, NaN for none); ``level`` is ``CONFIDENCE`` unless a family of comparisons is held to it together
    (:func:`bonferroni_level`)."""
    if method.final.shape != baseline.final.shape:
        raise ValueError(f"the two runs must train the same draws, got {method.final.shape} and "
                         f"{baseline.final.shape}")
    keep = ~(method.diverged | baseline.diverged)
    d = method.final[keep] - baseline.final[keep]
    if d.size < 2:
        half = np.inf
    else:
        half = stats.mean(d).half_width(level)
    m = float(d.mean()) if d.size else np.nan
    return Paired(m, m - half, m + half, int(d.size), int((d > SAME_TOL).sum()), int(method.diverged.sum()),
                  int(baseline.diverged.sum()))


def bonferroni_level(comparisons: int, level: float = CONFIDENCE) -> float:
    """The level of each of ``comparisons`` intervals that holds the family to ``level`` together (Bonferroni):
    ``1 − (1 − level) / comparisons``, so that, if no schedule differs from its baseline anywhere, all the
    intervals cover 0 with probability at least ``level``."""
    if comparisons < 1:
        raise ValueError(f"a family needs at least one comparison, got {comparisons}")
    return 1 - (1 - level) / comparisons


def paired_verdict(p: Paired) -> str:
    """``worse (diverges more)`` / ``better (diverges less)`` when the method diverged on more / fewer evaluation
    draws than the baseline; otherwise ``same`` when the interval lies within ``SAME_TOL`` of 0, ``better`` when
    it lies below 0, ``worse`` when above 0, else ``within noise`` (always so for one pair); ``not compared`` when
    no pair is left."""
    if p.diverged != p.baseline_diverged:
        return "worse (diverges more)" if p.diverged > p.baseline_diverged else "better (diverges less)"
    if p.n == 0:
        return "not compared (no pair)"
    if max(abs(p.low), abs(p.high)) <= SAME_TOL:
        return "same"
    if p.high < 0:
        return "better"
    return "worse" if p.low > 0 else "within noise"
