"""What every Part I verdict shares: the reading of a run, the condition a spread verdict needs, its error bar,
the unstable-arm note, the shared thresholds, and when each rule was fixed (:data:`FIXED`).

=================================  ==========================================================================
``SELECTION = "late"``             every run is read at its lowest validation loss over its second half
``EQUIVALENCE_PP = 2.0``           the equivalence margin: two spreads are "equal" when the 90 % interval of
                                   their difference lies within +-2 pp, a spread is "erased" when its one-sided
                                   95 % bound lies below 2 pp (above the book's noise floor of a 3-point
                                   one-seed spread, 1.2 pp)
``ERASES_FRACTION = 0.5``          an arm "largely erases" the sigma_w dependence when its spread is below half
                                   of the reference arm's beyond noise; "no" when above it beyond noise
``CONFIDENCE = 0.95``              every interval (:mod:`fibook.stats`)
=================================  ==========================================================================

Serves every chapter of Part I through the modules beside this one.
"""

from __future__ import annotations

import numpy as np

from fibook import stats
from fibook.claims import Finding, Verdict
from fibook.forgetting.arms import Arm
from fibook.forgetting.clocks import sgd_with_l2
from fibook.forgetting.noise import Difference
from fibook.stats import CONFIDENCE as CONFIDENCE  # the confidence of every interval, a threshold rules name

SELECTION = "late"
EQUIVALENCE_PP = 2.0
ERASES_FRACTION = 0.5

NOT_YET = Finding(Verdict.NOT_TESTED, " yet")  # the verdict of a row whose experiment has not finished


def run_ids(*arm_list: Arm | None) -> tuple[str, ...]:
    """The results-store ids of every run of the given arms (None: no arm), for a claim's ``runs``."""
    return tuple(r.id for a in arm_list if a is not None for r in a.records)


def shown(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, or ``n/a`` where it is undefined: a spread or a radial memory is NaN
    when fewer than two sigma_w have a run that did not diverge."""
    return "n/a" if np.isnan(value) else f"{value:.{digits}f}"


def arm_key(arm: Arm) -> str:
    """``sgd``, ``msgd``, ``adam``, ``adamw``, ``muon``, or ``sgd+L2`` for SGD with weight decay."""
    return arm.config.optimizer + ("+L2" if sgd_with_l2(arm.config) else "")


def interpolating(arm: Arm) -> str:
    """``3 of 5 σ_w interpolate at the selected checkpoint``: sigma_w values whose every seed's selected
    predictor fits the training set."""
    return f"{sum(arm.selected_interpolated)} of {len(arm.sigmas)} σ_w interpolate at the selected checkpoint"


def unmet(*arm_list: Arm) -> list[str]:
    """Why each arm fails the condition of the spread verdicts: its spread is undefined (fewer than two sigma_w have
    a run that did not diverge), or a sigma_w's selected predictor does not interpolate; empty when all pass."""
    return [f"{a.label} has fewer than two σ_w with a run that did not diverge" if np.isnan(a.spread_pp) else
            f"{a.label}'s selected predictor does not interpolate at "
            f"{len(a.sigmas) - sum(a.selected_interpolated)} of {len(a.sigmas)} σ_w"
            for a in arm_list if np.isnan(a.spread_pp) or not a.interpolates_at_selection]


def condition(*arm_list: Arm) -> Finding | None:
    """None when every arm meets the condition of the spread verdicts (:func:`unmet`), else the verdict that
    replaces the comparison: ``not tested: <why>``."""
    reasons = unmet(*arm_list)
    return Finding(Verdict.NOT_TESTED, ": " + "; ".join(reasons)) if reasons else None


# When each rule was fixed and which of its results existed then (the git history is the record). Rules marked
# ``fixed=FIXED[...]`` carry the line; the clocks chapter shows the table
# (:func:`fibook.forgetting.claims.chapters.fixed_rows`).
_MAIN = "sgd_remembers, optimizers, long_training, l2_lr, batch_size, depth (committed 2026-12-02)"
_EARLY_LADDER = ("after every Part I book result but clock_ladder's and tsgd_pair's, of which 13 ladder runs had "
                 "finished (η 0.01 × 40 on seeds 0 and 1 and at one σ_w of seed 2, the η 0.005 and 0.0025 rungs on "
                 "seed 0) and the pair's b = 64 × 40 arm had begun on seed 0")
FIXED = {
    "late": f"2026-12-03, after the book results of {_MAIN}, seed_noise and adaptive_clock, with l2_clock's",
    "sgd_remembers": f"2026-12-03, after the book results of {_MAIN} and seed_noise",
    "depth": "2026-12-03, after the depth results",
    "no results": "2026-12-03; it reads no results-store run (the chapter computes what it reads)",
    "2026-12-05": "2026-12-05, after every Part I book result but clock_ladder's and tsgd_pair's",
    "ladder": ("2026-12-05, before every clock_ladder and tsgd_pair run but the first (η 0.01 × 40, σ_w 0.1, seed 0, "
               "started 9 minutes earlier and finished 3 minutes later); two rungs and one pair arm repeat settings "
               "whose bf16 results existed"),
    "ladder-fitting": ("2026-12-06, after clock_ladder's η 0.01 × 40 rung had finished on its 3 seeds (its selected "
                       "predictors at σ_w 0.1 do not fit) and the η 0.005 and 0.0025 rungs on seed 0; before any "
                       "η 0.001 run, and before any other seed of those two rungs had finished (η 0.005's seed 1 "
                       "at σ_w 0.1 was under way)"),
    "2026-12-06": f"2026-12-06, {_EARLY_LADDER}",
    "twins": f"2026-12-06, after the bf16 equal-T_adapt pair's verdict was seen, {_EARLY_LADDER}",
}



def unjudged(*diffs: stats.Estimate | None) -> Finding | None:
    """None when every difference has an error bar, else the verdict that replaces the comparison: ``not tested:
    no error bar ...`` (a one-seed arm at a preset with no pooled seed std: noise cannot be told from an effect)."""
    if all(d is None or d.has_error_bar for d in diffs):
        return None
    return Finding(Verdict.NOT_TESTED, ": no error bar (one seed and no pooled seed std at this preset), so a "
                   "difference cannot be judged beyond noise")


def noted(verdict: Finding, *arm_list: Arm | None) -> Finding:
    """``verdict`` with the unstable arms it read named after it (every verdict an unstable arm enters says so)."""
    unstable = [a.label.removesuffix(" [unstable]") for a in arm_list if a is not None and a.unstable]
    if not unstable:
        return verdict
    return verdict.with_note(f"; unstable: {', '.join(unstable)} (a run fell out of its fit, see the stability table)")


def contrast_verdict(c: Difference, yes: Finding, no: Finding, what: str) -> Finding:
    """``yes`` when the contrast ``c`` lies below zero beyond noise, ``no`` above it, else ``not resolved: <what>
    is <c>``."""
    if stats.below(c):
        return yes
    if stats.above(c):
        return no
    return Finding(Verdict.NOT_RESOLVED, f": {what} is {c}")


def radial_text(arm: Arm) -> str:
    """``0.98, 95 % [0.95, 1.01]``: R with its interval (``n/a`` without R)."""
    e = arm.radial_memory_estimate()
    if np.isnan(e.value):
        return "n/a"
    if not e.has_error_bar:
        return f"{e.value:.2f} (no interval)"
    lo, hi = e.interval()
    return f"{e.value:.2f}, 95 % [{lo:.2f}, {hi:.2f}]"
