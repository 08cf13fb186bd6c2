"""The verdict of the depth chapter (:mod:`fibook.forgetting.claims.depth`): a deep net fails to fit only when
it is no longer rising."""

import dataclasses

import pytest
from known_arms import (
    EPS,
    finished,
)
from synthetic import rec

from fibook.claims import Verdict
from fibook.forgetting.arms import arms
from fibook.forgetting.claims import (
    depth,
)


def depth_arm(arch, interpolated_last):
    records = [rec(s, 0, 0.9, 1 if (s < 2 or interpolated_last) else None, 10.0 * s, arch=arch) for s in (1.0, 2.0)]
    (a,) = arms(records, show=("arch",))
    return a


def test_deep_nets_fail_when_none_interpolates_at_the_largest_sigma():
    shallow = depth_arm("resnet9", True)
    failing, fitting = depth_arm("resnet20", False), depth_arm("resnet32", True)
    assert depth.deep_nets_fail([failing]).verdict is Verdict.QUALITATIVELY
    assert depth.deep_nets_fail([failing, fitting]).verdict is Verdict.NO
    for rise, verdict in ((1.0 - EPS, "qualitatively"), (1.0 + EPS, "not tested: train accuracy still rising")):
        r = failing.records[-1]  # sigma_w = 2: train accuracy 0.9 at epoch 2, then + rise at epoch 3
        history = dict(r.history, train_acc=r.history["train_acc"][:3] + [0.9 + rise / 100])
        records = failing.records[:-1] + [dataclasses.replace(r, history=history)]
        (a,) = arms(records, show=("arch",))
        assert depth.late_rise_pp(a) == pytest.approx(rise)
        assert depth.deep_nets_fail([a]).text.startswith(verdict)
    (row,) = depth.depth_claims(finished(failing, shallow), "smoke")  # listed from the shallowest
    assert row.ours.startswith("resnet9: reaches 99.5 % train accuracy at some epoch at 2 of 2 σ_w (at the selected "
                               "checkpoint: 2); resnet20: reaches 99.5 % train accuracy at some epoch at 1 of 2 σ_w "
                               "(at the selected checkpoint: 1)")
    assert row.verdict is Verdict.QUALITATIVELY
    (waiting,) = depth.depth_claims(finished(shallow), "smoke")
    assert waiting.agrees == "not tested yet"
