"""The rule of the verdicts that no threshold decides, shared by the Parts' ``claims`` modules."""

from __future__ import annotations

from fibook.verdicts import rule, verdict_class

UNTHRESHOLDED = ("consistent", "own")  # the verdict classes a row may take without a tested threshold


@rule()
def not_thresholded(agrees: str) -> str:
    """A verdict given without a threshold set before the data: ``agrees`` unchanged when its class (see
    :func:`fibook.verdicts.verdict_class`) is ``consistent`` (agrees by construction, or a number is reported
    beside the paper's without a test) or ``our own`` (a result the paper does not state); any other class
    (``yes``, ``no``, ...) needs a tested rule, so it is a ValueError here."""
    if verdict_class(agrees) not in UNTHRESHOLDED:
        raise ValueError(f"the verdict {agrees!r} claims more than a report: decide it with a tested rule")
    return agrees
