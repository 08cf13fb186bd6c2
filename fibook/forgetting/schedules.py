"""The learning-rate schedules of a Part I run, by name (:data:`SCHEDULES`, a config's ``schedule``): step k of
the run's K optimizer steps takes the learning rate eta times the schedule's factor at k. ``constant`` is the
forgetting protocol's; ``cosine`` decays to 0 over the run.

Serves the trainer (:mod:`fibook.forgetting.train`) and the clocks a run is planned to reach before it trains
(:func:`fibook.forgetting.experiments.planned_clocks`, tabulated in "The question and the protocol", ``question``).
"""

from __future__ import annotations

import math
from collections.abc import Callable


def constant_schedule(step: int, total_steps: int) -> float:
    """eta_k = eta: no warm-up, no decay (the forgetting protocol)."""
    return 1.0


def cosine_schedule(step: int, total_steps: int) -> float:
    """eta_k = eta (1 + cos(pi k / K)) / 2."""
    return 0.5 * (1.0 + math.cos(math.pi * step / max(total_steps, 1)))


SCHEDULES: dict[str, Callable[[int, int], float]] = {"constant": constant_schedule, "cosine": cosine_schedule}
