"""The verdicts of the question chapter (:mod:`fibook.forgetting.claims.question`): recomputed clocks against
the quoted digits, scale invariance and the logit floor, each just above and below its tolerance."""


from known_arms import (
    EPS,
)

from fibook.claims import Finding, Verdict
from fibook.forgetting import paper
from fibook.forgetting.claims import question

CONSISTENT = Finding(Verdict.CONSISTENT, " (η and N were inferred from these figures)")  # circular by design


def test_a_recomputed_clock_agrees_when_it_rounds_to_the_quoted_digits():
    quoted = paper.HEADLINE_T_SGD
    assert quoted.value == 7.3e-4 and str(quoted) == "7.3e-4"
    assert question.matches_quoted(7.26e-4, quoted) == question.matches_quoted(7.34e-4, quoted) == CONSISTENT
    assert question.matches_quoted(7.24e-4, quoted) == question.matches_quoted(7.36e-4, quoted) == Finding(Verdict.NO)

def test_scale_invariance_needs_loss_and_cosine_below_the_tolerance():
    tol = question.INVARIANCE_TOL
    invariant = question.scale_invariant([2.0, 2.0 + 0.5 * tol, 2.0 - 0.5 * tol], [0.0, 0.9 * tol, -0.9 * tol])
    assert invariant.verdict is Verdict.YES
    assert question.scale_invariant([2.0, 2.0 + 2 * tol], [0.0, 0.0]).verdict is Verdict.NO
    assert question.scale_invariant([2.0, 2.0], [0.0, 1.1 * tol]).verdict is Verdict.NO


def test_sigma_scales_the_logits_below_the_floor():
    assert question.scales_logits(question.LOGIT_FLOOR * (1 - EPS)).verdict is Verdict.YES
    assert question.scales_logits(question.LOGIT_FLOOR * (1 + EPS)).verdict is Verdict.NO


def test_question_rows_read_the_logit_floor():
    floor = question.LOGIT_FLOOR
    below_floor = question.question_claims(7.31e-4, 1.22e-2, [1.0, 1.0], [0.0, 0.0], 0.9 * floor, "smoke", 4)
    assert [r.finding for r in below_floor] == [CONSISTENT, CONSISTENT, Finding(Verdict.YES), Finding(Verdict.YES)]
    assert "to < 1e-4 relative" in below_floor[3].ours and "smoke ResNet-9 w4" in below_floor[3].ours
    above = question.question_claims(7.31e-4, 1.22e-2, [1.0, 1.1], [0.0, 0.0], 1.1 * floor, "smoke", 4)
    assert [r.finding for r in above] == [CONSISTENT, CONSISTENT, Finding(Verdict.NO), Finding(Verdict.NO)]
    assert "1.1e-04" in above[3].ours
