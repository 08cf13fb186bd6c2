"""The verdicts of "SGD remembers" (``sgd_remembers``): low-learning-rate SGD keeps a large spread across
sigma_w, every selected predictor interpolates, the final weight norm stays tied to sigma_w, and the spread is far
larger than seed noise; each read over the second half and at the paper's whole-run selection.

=================================  ==========================================================================
``LARGE_SPREAD_PP = 5.0``          low-learning-rate SGD "keeps a large spread" across sigma_w from 5 pp up
``RADIAL_KEPT = 0.8``              the final weight norm "stays tied to sigma_w" when R exceeds 0.8 beyond noise
``NOISE_MULTIPLE = 3.0``           a spread is "far larger than seed noise" when the seed-mean spread exceeds
                                   3 x the largest per-sigma_w seed standard deviation beyond noise
=================================  ==========================================================================
"""

from __future__ import annotations

import numpy as np

from fibook.claims import Claim, Finding, Verdict, rule
from fibook.forgetting.arms import Arm, seed_std_pp, setting
from fibook.forgetting.claims.conditions import CONFIDENCE as CONFIDENCE  # a threshold its rules name
from fibook.forgetting.claims.conditions import (
    FIXED,
    NOT_YET,
    condition,
    contrast_verdict,
    interpolating,
    noted,
    radial_text,
    run_ids,
    unjudged,
)
from fibook.forgetting.loading import Finished
from fibook.forgetting.noise import NoiseFloor, spread_estimate
from fibook.forgetting.paper import HEADLINE_SPREAD

LARGE_SPREAD_PP = 5.0
RADIAL_KEPT = 0.8
NOISE_MULTIPLE = 3.0


@rule("LARGE_SPREAD_PP", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def large_spread(arm: Arm, noise: NoiseFloor | None) -> Finding:
    """:func:`condition` and an error bar; then ``qualitatively`` when the spread (:func:`~fibook.forgetting.
    noise.spread_estimate`) exceeds ``LARGE_SPREAD_PP`` beyond noise (at most qualitatively: the paper's
    26.5 pp is CIFAR-10 over 300 epochs), ``no`` when it lies below it beyond noise, else ``not resolved``."""
    e = spread_estimate(arm, noise) - LARGE_SPREAD_PP
    untestable = condition(arm) or unjudged(e)
    if untestable:
        return untestable
    return noted(contrast_verdict(e, Finding(Verdict.NO), Finding(Verdict.QUALITATIVELY),
                                  f"spread − {LARGE_SPREAD_PP:g} pp"), arm)


@rule(fixed=FIXED["sgd_remembers"])
def every_sigma_interpolates(arm: Arm) -> Finding:
    """``yes`` when every sigma_w's selected predictor (every seed's) fits the training set, else ``no: selected
    before it fits the training set at sigma_w = ..., at this preset`` (the paper's own setting, CIFAR-10 over 300
    epochs, is not run here); an unstable arm (whose selected predictors may fit again after a collapse) is named
    after the verdict (:func:`noted`)."""
    if arm.interpolates_at_selection:
        return noted(Finding(Verdict.YES), arm)
    return noted(Finding(Verdict.NO, ": selected before it fits the training set at σ_w = " + ", ".join(
        f"{s:g}" for s, ok in zip(arm.sigmas, arm.selected_interpolated, strict=True) if not ok)
        + ", at this preset (the paper's own setting is not run here)"), arm)


@rule("RADIAL_KEPT", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def radial_kept(arm: Arm) -> Finding:
    """On the radial memory R with its interval (:meth:`Arm.radial_memory_estimate`): ``yes`` when R exceeds
    ``RADIAL_KEPT`` beyond noise, ``no`` when it lies below it beyond noise, else ``not resolved``; ``not tested``
    without an interval (fewer than three sigma_w that did not diverge); an unstable arm is named after the verdict
    (:func:`noted`)."""
    e = arm.radial_memory_estimate() - RADIAL_KEPT
    if not e.has_error_bar:
        return Finding(Verdict.NOT_TESTED, ": no interval on R (fewer than three σ_w that did not diverge)")
    return noted(contrast_verdict(e, Finding(Verdict.NO), Finding(Verdict.YES), f"R − {RADIAL_KEPT:g}"), arm)


@rule("NOISE_MULTIPLE", "CONFIDENCE", fixed=FIXED["2026-12-05"])
def above_seed_noise(seeds: Arm) -> Finding:
    """On an arm run over several seeds: :func:`condition`; ``not tested`` with fewer than two complete seeds;
    then on the spread of seed-means (bootstrapped over seeds) minus ``NOISE_MULTIPLE`` times the largest
    per-sigma_w standard deviation over seeds: ``yes`` when above zero beyond noise, ``no`` below, else ``not
    resolved``."""
    e, seed_std = spread_estimate(seeds, None), list(seed_std_pp(seeds).values())
    untestable = condition(seeds)
    if untestable:
        return untestable
    if e.borrowed or any(np.isnan(seed_std)):
        return Finding(Verdict.NOT_TESTED, ": fewer than two seeds at some σ_w, so no seed-to-seed variation to "
                       "compare with")
    return noted(contrast_verdict(e - NOISE_MULTIPLE * max(seed_std), Finding(Verdict.NO), Finding(Verdict.YES),
                                  f"spread − {NOISE_MULTIPLE:g} × the largest seed std"), seeds)


HEADLINE = "low-LR SGD keeps a large test-accuracy spread across σ_w"
SEED_NOISE = ("the spread is far larger than seed-to-seed variation (verdict: mean spread > 3 × the largest "
              "per-σ_w seed std)")
LATE_READING = ", read over the second half of training (the selection the rest of Part I uses)"
WHOLE_RUN = "the paper's reading (best validation loss over the whole run); the book reads the second half"


def sgd_remembers_claims(arm: Arm, noise: Finished, late_arm: Arm, late_noise: Finished,
                         preset: str, floor: NoiseFloor | None) -> list[Claim]:
    """The ``sgd_remembers`` chapter's rows, each run read over the second half of training (``late_arm``,
    ``late_noise``, selection ``late``: the book's one reading) and at the paper's validation-selected checkpoint
    over the whole run (``arm``, ``noise``): the spread (:func:`large_spread`, a one-seed spread with the error
    bar of ``floor``), every sigma_w's selected predictor interpolating (:func:`every_sigma_interpolates`, under
    both readings: the late one was adopted so that the selected predictors fit, so the whole-run row keeps the
    verdict it replaced),
    radial memory (:func:`radial_kept`), and the spread against seed noise (:func:`above_seed_noise`, on the
    ``seed_noise`` experiment's one arm once it has finished). Every spread row needs every sigma_w's selected
    predictor to interpolate (:func:`condition`)."""
    where = setting(arm.config, preset, show=("arch", "epochs", "lr"))
    paper = f"{HEADLINE_SPREAD} (CIFAR-10, ResNet-9, 300 ep)"

    def headline(a: Arm, late: bool) -> Claim:
        return Claim(HEADLINE + (LATE_READING if late else ""), paper if late else f"{paper}; {WHOLE_RUN}",
                     f"{spread_estimate(a, floor)} ({where}; {interpolating(a)})", large_spread(a, floor),
                     rule=large_spread, runs=run_ids(a))

    def seed_row(f: Finished, late: bool) -> Claim:
        claim = SEED_NOISE + (LATE_READING if late else "")
        paper = "seed noise not reported" + ("" if late else f"; {WHOLE_RUN}")
        if not f.arms:
            return Claim(claim, paper, f"not finished ({f.progress})", NOT_YET, rule=above_seed_noise)
        (seeds,) = f.arms
        seed_std = [v for v in seed_std_pp(seeds).values() if not np.isnan(v)]
        std = f"per-σ_w seed std ≤ {max(seed_std):.2f} pp" if seed_std else "no seed std (one seed)"
        return Claim(claim, paper, f"spread {spread_estimate(seeds, None)} vs {std} (quick grid; "
                     f"{interpolating(seeds)})", above_seed_noise(seeds), rule=above_seed_noise, runs=run_ids(seeds))

    return [
        headline(late_arm, True),
        headline(arm, False),
        Claim("every σ_w's selected predictor interpolates", "yes (≥ 99.5 % train acc)",
              f"{sum(late_arm.selected_interpolated)} of {len(late_arm.sigmas)} σ_w at the checkpoint selected over "
              f"the second half ({sum(arm.selected_interpolated)} at the paper's whole-run selection; "
              f"{sum(arm.interpolated)} reach 99.5 % at some epoch; {where})", every_sigma_interpolates(late_arm),
              rule=every_sigma_interpolates, runs=run_ids(late_arm)),
        Claim("every σ_w's selected predictor interpolates, at the paper's whole-run selection (the book's reading "
              "until 2026-12-05)", f"yes (≥ 99.5 % train acc); {WHOLE_RUN}",
              f"{sum(arm.selected_interpolated)} of {len(arm.sigmas)} σ_w ({where})", every_sigma_interpolates(arm),
              rule=every_sigma_interpolates, runs=run_ids(arm)),
        Claim("the final weight norm stays tied to σ_w under SGD", "qualitative (secondary)",
              f"radial memory R = {radial_text(arm)}", radial_kept(arm), rule=radial_kept, runs=run_ids(arm)),
        seed_row(late_noise, True),
        seed_row(noise, False),
    ]
