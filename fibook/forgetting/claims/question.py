"""The verdicts of "The question and the protocol" (``question``): the paper's quoted clocks recomputed,
BatchNorm's scale invariance, and sigma_w only scaling the initial logits. These rules read no results-store run.

=================================  ==========================================================================
``INVARIANCE_TOL = 1e-9``          BatchNorm scale invariance holds when the loss moves by less than 1e-9 and
                                   the gradient's cosine with the weight is below 1e-9 (float64)
``LOGIT_FLOOR = 1e-4``             sigma_w only scales the initial logits when the relative deviation from
                                   sigma_w logits(1) is below 1e-4 (float32 rounding lies below it)
(quoted figures)                   a recomputed clock agrees when it rounds to the paper's two digits
=================================  ==========================================================================
"""

from __future__ import annotations

from collections.abc import Sequence

from fibook.claims import Claim, Finding, Quoted, Verdict, rule, yes_or_no
from fibook.forgetting.claims.conditions import FIXED
from fibook.forgetting.paper import HEADLINE_T_SGD, LONG_T_SGD
from fibook.notebook import below

INVARIANCE_TOL = 1e-9
LOGIT_FLOOR = 1e-4


@rule(fixed=FIXED["no results"])
def matches_quoted(value: float, quoted: Quoted) -> Finding:
    """``consistent`` when ``value`` rounded to two significant digits equals the paper's quoted figure
    (:class:`~fibook.forgetting.paper.Quoted`, e.g. 7.3e-4), else ``no``. Not a confirmation: the setting that gives
    ``value`` was reconstructed from the quoted figures themselves, so agreement checks the arithmetic and the
    reconstruction, nothing the paper measured."""
    return Finding(Verdict.CONSISTENT, " (η and N were inferred from these figures)") \
        if float(f"{value:.2g}") == quoted.value \
        else Finding(Verdict.NO)


@rule("INVARIANCE_TOL", fixed=FIXED["no results"])
def scale_invariant(losses: Sequence[float], cosines: Sequence[float]) -> Finding:
    """``yes`` when a loss is invariant to scaling one weight: every ``|L(cW) - L(W)|`` (``losses[0]`` at c = 1 or
    any reference c) and every ``|cos(grad L, W)|`` below ``INVARIANCE_TOL`` (float64); else ``no``."""
    invariant = all(abs(v - losses[0]) < INVARIANCE_TOL for v in losses) and \
        all(abs(c) < INVARIANCE_TOL for c in cosines)
    return yes_or_no(invariant)


@rule("LOGIT_FLOOR", fixed=FIXED["no results"])
def scales_logits(logit_error: float) -> Finding:
    """``yes`` when sigma_w only scales the initial logits: relative deviation from sigma_w logits(1) below
    ``LOGIT_FLOOR`` (float32); else ``no``."""
    return yes_or_no(logit_error < LOGIT_FLOOR)


def question_claims(t_sgd: float, t_long: float, losses: Sequence[float], cosines: Sequence[float],
                    logit_error: float, preset: str, width: int) -> list[Claim]:
    """The ``question`` chapter's rows: the paper's two quoted T_SGD values recomputed (:func:`matches_quoted`),
    BatchNorm scale invariance (:func:`scale_invariant`) and sigma_w scaling the initial logits (relative
    deviation below ``LOGIT_FLOOR``, float32)."""
    invariant = scale_invariant(losses, cosines)
    return [
        Claim("T_SGD of the headline run (η = 1e-3, b = 128, 300 epochs of 40,000 images)", str(HEADLINE_T_SGD),
              f"{t_sgd:.3g} (arithmetic, drop_last)", matches_quoted(t_sgd, HEADLINE_T_SGD), rule=matches_quoted),
        Claim("T_SGD after 5,000 epochs", str(LONG_T_SGD), f"{t_long:.3g} (arithmetic)",
              matches_quoted(t_long, LONG_T_SGD),
              rule=matches_quoted),
        Claim("BatchNorm makes the loss scale-invariant in each conv weight", "mechanism (fibook's reading)",
              "L(cW) = L(W) to 1e-9, |cos(∇L, W)| < 1e-9 for c = 0.1, 1, 10 (float64, width-4 ResNet-9)"
              if invariant.verdict is Verdict.YES else "L(cW) or cos(∇L, W) moved with c (float64, width-4 ResNet-9)",
              invariant, rule=scale_invariant),
        Claim("at initialization σ_w only scales the logits", "mechanism (fibook's reading)",
              f"logits(σ_w) = σ_w · logits(1) to {below(logit_error, LOGIT_FLOOR)} relative with BatchNorm ε "
              f"negligible (float32, {preset} ResNet-9 w{width}, training-mode BatchNorm)",
              scales_logits(logit_error), rule=scales_logits),
    ]
