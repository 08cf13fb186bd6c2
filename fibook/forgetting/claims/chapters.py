"""The Part I claims modules in the book's order, and when each of their rules was fixed: read by the appendix
page "How the verdicts are decided" and by the table of rule dates in "Forgetting clocks" (``clocks``).
"""

from __future__ import annotations

from fibook.forgetting.claims import clocks, depth, optimizers, question, sgd_remembers, time_lr_l2_batch
from fibook.forgetting.claims.conditions import FIXED
from fibook.rule_catalogue import rules_of

# (module, the chapter's title) in the order of the book's table of contents
CHAPTERS = ((question, "The question and the protocol"), (sgd_remembers, "SGD remembers"),
            (optimizers, "Optimizers"), (time_lr_l2_batch, "Time, learning rate, L2 and batch size"),
            (depth, "Depth"), (clocks, "Forgetting clocks"))


def fixed_rows() -> list[dict]:
    """When each Part I rule was fixed and which results existed then (:data:`~fibook.forgetting.claims.conditions.
    FIXED`): the reading rules (checkpoint, condition, seeds, stability, precision) and every rule of the chapters'
    modules, by name."""
    rules = sorted((fn.__name__, fn) for module, _ in CHAPTERS for fn in rules_of(module))
    return [{"rule": "SELECTION = 'late' and the interpolation condition", "fixed": FIXED["late"]},
            {"rule": "momentum SGD counted on T_SGD at its effective step", "fixed": FIXED["2026-12-05"]},
            {"rule": "an arm read on every seed any experiment ran it on", "fixed": FIXED["2026-12-06"]},
            {"rule": "a trend that counts unstable arms read again over the stable ones", "fixed": FIXED["2026-12-06"]},
            {"rule": "an equal-clock pair read again on its twins at the other precision, and the precision check",
             "fixed": FIXED["twins"]},
            *({"rule": name, "fixed": fn.fixed} for name, fn in rules)]
