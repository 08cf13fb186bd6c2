"""A run's forgetting clock: which of Das et al.'s clocks governs its mechanism, and how momentum enters it.

The clocks accumulate over the steps a run takes (:func:`fibook.forgetting.metrics.forgetting_clocks`):

    T_SGD = sum_k eta_k^2 / b,   T_L2 = lambda sum_k eta_k,   T_adapt = sum_k eta_k.

A run's mechanism reads one of them (:func:`clock_key`): T_L2 for SGD with (coupled) L2 (:func:`sgd_with_l2`, the
"SGD + L2" arm), else its optimizer's clock. Heavy-ball momentum mu (:func:`heavy_ball_momentum`) moves the weights
like plain SGD at the effective step eta / (1 - mu) (:func:`effective_lr`), so a momentum-SGD run's T_SGD is read by
default as sum (eta / (1 - mu))^2 / b, the recorded clock divided by (1 - mu)^2 (:func:`forgetting_clock`; the raw
reading beside it, :data:`MOMENTUM_READINGS`).

Serves "Forgetting clocks" (``clocks``: every arm on its mechanism's clock, momentum SGD at both readings), and the
clock column of the arms tables of ``optimizers``, ``time_lr_l2_batch`` and ``depth``
(:func:`fibook.forgetting.arms.summary_rows`).
"""

from __future__ import annotations

from fibook.forgetting.config import TrainConfig
from fibook.forgetting.optimizers import get_optimizer


def sgd_with_l2(config: TrainConfig) -> bool:
    """SGD with weight decay: the "SGD + L2" arm, told apart from plain SGD in labels and claims."""
    return config.optimizer == "sgd" and bool(config.weight_decay)


def heavy_ball_momentum(config: TrainConfig) -> float:
    """The momentum mu of an SGD-type run (its option, else its optimizer's default; 0 for plain SGD)."""
    spec = get_optimizer(config.optimizer)
    return (config.options or {}).get("momentum", spec.defaults["momentum"]) if spec.clock == "T_SGD" \
        else 0.0


def effective_lr(config: TrainConfig) -> float:
    """eta / (1 - mu): with heavy-ball momentum mu a small constant step eta moves the weights like plain SGD
    at this step."""
    return config.lr / (1 - heavy_ball_momentum(config))


def clock_key(config: TrainConfig) -> str:
    """The clock that governs a run's forgetting mechanism: T_L2 for SGD with (coupled) L2, else its optimizer's
    clock (:data:`fibook.forgetting.optimizers.OPTIMIZERS`; AdamW's decoupled decay advances T_L2 too, reported
    beside its T_adapt)."""
    return "T_L2" if sgd_with_l2(config) else get_optimizer(config.optimizer).clock


MOMENTUM_READINGS = {
    "effective": "momentum SGD's T_SGD over its effective step eta / (1 - mu): sum (eta / (1 - mu))^2 / b",
    "raw": "momentum SGD's T_SGD over its raw eta, as plain SGD's (the book's reading before 2026-12-05)",
}


def forgetting_clock(config: TrainConfig, clocks: dict[str, float], momentum: str = "effective"
                     ) -> tuple[str, float]:
    """The mechanism's clock (:func:`clock_key`) read from ``clocks`` (a run's, or a checkpoint's, summed over the
    raw step sizes). A momentum-SGD run's T_SGD is read by ``momentum`` (:data:`MOMENTUM_READINGS`): ``effective``
    divides it by (1 - mu)^2. The argument for it: with a small constant step, heavy-ball momentum moves the
    weights as plain SGD at eta / (1 - mu) does (the velocity settles at the gradient / (1 - mu)), and its
    gradient noise enters with the same factor, so the noise it accumulates, sum eta^2 / b in plain SGD, is
    sum (eta / (1 - mu))^2 / b. The paper does not say how momentum enters T_SGD; ``raw`` is shown beside it."""
    if momentum not in MOMENTUM_READINGS:
        raise ValueError(f"unknown momentum reading {momentum!r}; choose one of: {', '.join(MOMENTUM_READINGS)}")
    key = clock_key(config)
    mu = heavy_ball_momentum(config) if key == "T_SGD" and momentum == "effective" else 0.0
    return key, clocks[key] / (1 - mu) ** 2
