"""What every Part I verdict shares (:mod:`fibook.forgetting.claims.conditions`): the hand-computed error bars
of the known arms, the unstable-arm note, the borrowed error bar of an unstable arm, contrasts and missing error
bars, and the equivalence margin above the noise floor measured at the book preset (a margin below it would make
"equal" and "erased" unreachable by chance alone)."""

import dataclasses
import math

import numpy as np
import pytest
from known_arms import (
    DELTA,
    EPS,
    H3,
    NOISE,
    SE2,
    SE3,
    UNSTABLE_NOTE,
    arm,
    flat,
    radial_arm,
    scattered,
)
from synthetic import t975

from fibook.claims import Finding, Verdict
from fibook.forgetting.claims import (
    conditions,
    depth,
    optimizers,
    sgd_remembers,
)
from fibook.forgetting.collapse import collapse_points
from fibook.forgetting.noise import Difference, noise_floor, spread_difference
from fibook.forgetting.results import results_path


def test_the_hand_computed_error_bars_are_the_closed_forms():
    assert SE3 == pytest.approx(DELTA / math.sqrt(3))  # sd / sqrt(n): the seeds' sd (ddof 1) is delta
    assert SE2 == pytest.approx(DELTA)  # sd = delta sqrt 2, over sqrt 2
    d = spread_difference(scattered(4.0, "adam"), flat(10.0), NOISE, weight=0.5)
    assert d.paired and d.df == 2 and d.value == pytest.approx(-1.0) and d.se == pytest.approx(SE3)

def test_a_verdict_an_unstable_arm_enters_names_it():
    verdict = optimizers.erases(scattered(5.0 - H3 - EPS, "adam", collapse=True), flat(10.0), NOISE)
    assert verdict.verdict is Verdict.QUALITATIVELY
    assert verdict.text == f"qualitatively; unstable: Adam (η = 0.01) {UNSTABLE_NOTE}"
    stable, unstable = arm(1.0), arm(1.0, "adam", collapse=True)
    assert unstable.label.endswith(" [unstable]") and not stable.unstable
    yes, no = Finding(Verdict.YES), Finding(Verdict.NO)
    assert conditions.noted(yes, stable, None) is yes
    one = conditions.noted(no, stable, unstable, None)
    assert one.verdict is Verdict.NO and one.text == f"no; unstable: Adam (η = 0.01) {UNSTABLE_NOTE}"
    two = conditions.noted(no, unstable, arm(1.0, "muon", collapse=True))
    assert two.text == f"no; unstable: Adam (η = 0.01), Muon (η = 0.01) {UNSTABLE_NOTE}"


@pytest.mark.parametrize(("name", "decide", "build"), [
    ("radial memory kept", sgd_remembers.radial_kept, lambda c: radial_arm(0.95, "sgd", collapse=c)),
    ("common norm", lambda a: optimizers.common_norm([a]), lambda c: radial_arm(0.1, collapse=c)),
    ("every sigma_w fits", sgd_remembers.every_sigma_interpolates, lambda c: arm(8.0, collapse=c)),
    ("deep nets fail", lambda a: depth.deep_nets_fail([a]), lambda c: arm(8.0, arch="resnet20", collapse=c)),
])
def test_every_rule_that_reads_an_arm_names_it_when_unstable(name, decide, build):
    stable, unstable = decide(build(False)), decide(build(True))
    assert "unstable" not in stable.text
    assert unstable.verdict is stable.verdict
    assert unstable.text.endswith(f"unstable: {build(True).label.removesuffix(' [unstable]')} {UNSTABLE_NOTE}")


def test_an_unstable_one_seed_arm_borrows_only_the_unstable_pool():
    unstable_pool = dataclasses.replace(NOISE, unstable_spread_std_pp=1.0, unstable_spread_arms=1,
                                        unstable_spread_df=2)
    h = t975(2) * math.hypot(1.0, 0.5 * 0.5)  # its own std 1.0 on 2 dof; SGD's 0.5 on 4: the smaller dof
    shaky = arm(5.0 - h - EPS, "adam", collapse=True)
    assert optimizers.erases(shaky, arm(10.0), unstable_pool).text.startswith("qualitatively; unstable: Adam")
    assert optimizers.erases(arm(5.0 - h + EPS, "adam", collapse=True), arm(10.0), unstable_pool).text.startswith(
        "not resolved")
    # no unstable arm has two seeds at this preset: no error bar, not the stable arms'
    assert optimizers.erases(shaky, arm(10.0), NOISE).text.startswith("not tested: no error bar")


def test_contrasts_and_missing_error_bars():
    h = t975(3) * 1.0
    yes, no = Finding(Verdict.YES), Finding(Verdict.NO)
    assert conditions.contrast_verdict(Difference(-h - EPS, 1.0, 3), yes, no, "x") is yes
    assert conditions.contrast_verdict(Difference(h + EPS, 1.0, 3), yes, no, "x") is no
    unsure = conditions.contrast_verdict(Difference(h - EPS, 1.0, 3), yes, no, "x")
    assert unsure.verdict is Verdict.NOT_RESOLVED and unsure.text.startswith("not resolved: x is +")
    assert conditions.unjudged(Difference(1.0, 1.0, 3), None) is None
    assert conditions.unjudged(Difference(1.0, 1.0, 3), Difference(1.0, math.nan, math.nan)).text.startswith(
        "not tested: no error bar")


@pytest.mark.skipif(not results_path("seed_noise", "book").exists(), reason="no book-preset seed_noise results")
def test_the_equivalence_margin_exceeds_the_book_noise_floor_of_a_three_point_spread():
    noise = noise_floor("book", conditions.SELECTION)
    points = collapse_points("book", conditions.SELECTION, noise)
    accuracy = float(np.mean([a for p in points for a in p.arm.acc]))
    floor = noise.floor_pp(3, accuracy)
    assert 0 < floor < conditions.EQUIVALENCE_PP
    # and the interval of a paired difference over three seeds can fit inside it: the margin is reachable
    assert noise.spread_std_pp < conditions.EQUIVALENCE_PP / 2
