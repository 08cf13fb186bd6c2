"""The verdict of "Depth" (``depth``): deeper ResNets at large sigma_w fail to interpolate.

=================================  ==========================================================================
``STILL_RISING_PP = 1.0``          a deep net that does not interpolate "fails to" only when its train accuracy
                                   rose by at most 1 pp over the last quarter of training (else: budget)
=================================  ==========================================================================
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fibook.claims import Claim, Finding, Verdict, rule
from fibook.forgetting.arms import Arm, setting
from fibook.forgetting.claims.conditions import FIXED, NOT_YET, noted, run_ids
from fibook.forgetting.loading import Finished

STILL_RISING_PP = 1.0


def late_rise_pp(arm: Arm) -> float:
    """How much the train accuracy at the arm's largest sigma_w (seed-mean) rose over the last quarter of
    training, epochs E - max(1, E // 4) .. E, in pp: a run still rising has not shown that it cannot fit (a run
    that diverged is read up to its last recorded epoch)."""
    def rise(train_acc: list[float]) -> float:
        e = len(train_acc) - 1  # the last epoch recorded: E, or the epoch a diverged run stopped at
        return train_acc[e] - train_acc[e - max(1, e // 4)]

    runs = [r for r in arm.records if r.config.sigma_w == arm.sigmas[-1]]
    return 100 * float(np.mean([rise(r.history["train_acc"]) for r in runs]))


@rule("STILL_RISING_PP", fixed=FIXED["depth"])
def deep_nets_fail(deep: Sequence[Arm]) -> Finding:
    """``qualitatively`` when no deeper ResNet interpolates at the largest sigma_w of its grid and none of them is
    still rising there (train accuracy up by at most ``STILL_RISING_PP`` over the last quarter, :func:`late_rise_pp`);
    ``not tested: ... still rising`` when one is (a budget effect, not a failure to fit); ``no`` when one fits
    (an unstable arm named after it, :func:`noted`)."""
    if any(a.interpolated[-1] for a in deep):
        return noted(Finding(Verdict.NO, ": a deep net interpolates at the largest σ_w here"), *deep)
    rising = [a for a in deep if late_rise_pp(a) > STILL_RISING_PP]
    if rising:
        return Finding(Verdict.NOT_TESTED, ": train accuracy still rising at the end of training (" + "; ".join(
            f"{a.config.arch} at σ_w = {a.sigmas[-1]:g}: +{late_rise_pp(a):.1f} pp over the last quarter"
            for a in rising) + "), a budget effect")
    return noted(Finding(Verdict.QUALITATIVELY), *deep)


def depth_claims(depth: Finished, preset: str) -> list[Claim]:
    """The ``depth`` chapter's row: deeper ResNets failing to interpolate at large sigma_w
    (:func:`deep_nets_fail`), arms listed from the shallowest."""
    arms = sorted(depth.arms, key=lambda a: int(a.config.arch.removeprefix("resnet")))
    deep = [a for a in arms if a.config.arch != "resnet9"]
    claim, paper = "deep ResNets at large σ_w fail to interpolate", "ResNet-56/110 (secondary)"
    if not deep:
        return [Claim(claim, paper, f"not finished ({depth.progress})", NOT_YET, rule=deep_nets_fail)]
    ours = "; ".join(f"{a.config.arch}: reaches 99.5 % train accuracy at some epoch at {sum(a.interpolated)} of "
                     f"{len(a.sigmas)} σ_w (at the selected checkpoint: {sum(a.selected_interpolated)})"
                     for a in arms)
    return [Claim(claim, paper, f"{ours} ({setting(arms[0].config, preset, show=('epochs', 'lr'))})",
                  deep_nets_fail(deep), rule=deep_nets_fail, runs=run_ids(*arms))]
