"""Part III: fibook's layer-balancing scheduler (relative-update balancing, RUB) and the uniform baseline.

The paper proposes balancing learning rates across layers but publishes no algorithm; this one is fibook's own.
At every step ``t``, with a total budget ``S``, weights ``W_l`` and gradients ``G_l``:

    r_l = ||W_l||_F / (||G_l||_F + eps),     eta_l = S r_l / sum_j r_j,     eps = 1e-30,

so the rates sum to ``S`` and every layer gets the same relative update ``||eta_l G_l||_F / ||W_l||_F =
S / sum_j r_j``. The rates do not change when the loss is multiplied by a constant. In the orthogonal square
depth-2 and depth-3 nets all ``||W_l||_F`` and ``||G_l||_F`` are equal at initialization, so RUB starts at equal
rates, the step-2 optimum of the paper's analysis (and, by construction, it cannot take the tiny step-1 gain of
unequal rates).

Models compared (chapter "A balancing scheduler"): the linear nets of :mod:`fibook.layerwise.simulation` at
depths 2, 3, 4 and 8, and a 3-layer ReLU net ``f(x) = sqrt(2) relu(x^T W1) W2 a / sqrt(h)`` learning a linear target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fibook.checks import choice
from fibook.layerwise import simulation as sim

EPS = 1e-30
SCHEDULES = ("uniform", "rub")
MODELS = ("linear", "relu")


def comparison_settings(h: int) -> list[tuple[str, int, str, float]]:
    """The settings the chapter "A balancing scheduler" compares the schedules in, at width ``h``: (model,
    depth, init and data kind, budget S). Budgets scale as the chapters' natural rates: ``h^1.5`` at depth 2,
    ``sqrt(h)`` deeper."""
    return [("linear", 2, "orthogonal", 0.5 * h**1.5), ("linear", 2, "gaussian", 0.5 * h**1.5),
            ("linear", 3, "gaussian", h**0.5), ("linear", 4, "orthogonal", h**0.5), ("linear", 4, "gaussian", h**0.5),
            ("linear", 8, "gaussian", 0.5 * h**0.5), ("relu", 3, "gaussian", h**0.5)]


def _frobenius(x: torch.Tensor) -> torch.Tensor:
    return torch.linalg.matrix_norm(x)


def rub_rates(weights: Sequence[torch.Tensor], grads: Sequence[torch.Tensor], budget: float) -> list[torch.Tensor]:
    """Relative-update balancing: ``eta_l = S r_l / sum_j r_j`` with ``r_l = ||W_l||_F / (||G_l||_F + eps)``.

    Tensors are batched over draws (shape (draws, m, n)); returns one rate per layer and draw.
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget!r}")
    r = torch.stack([_frobenius(w) / (_frobenius(g) + EPS) for w, g in zip(weights, grads, strict=True)])
    return list(budget * r / r.sum(dim=0))


def uniform_rates(weights: Sequence[torch.Tensor], grads: Sequence[torch.Tensor], budget: float) -> list[float]:
    """The baseline: ``eta_l = S / k`` for each of the ``k`` trained layers."""
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget!r}")
    return [budget / len(weights)] * len(weights)


_RULES = {"uniform": uniform_rates, "rub": rub_rates}


@dataclass(frozen=True)
class ReluSetup:
    """A batch of 3-layer ReLU problems: trained ``W1, W2`` (draws, h, h), fixed ``a`` (draws, h, 1), Gaussian
    training inputs ``x`` (draws, n, h) with ``n = 2h``, a fresh test set, and a linear target ``y = x beta``."""

    weights: tuple[torch.Tensor, torch.Tensor]
    a: torch.Tensor
    beta: torch.Tensor
    x: torch.Tensor
    x_test: torch.Tensor


def sample_relu_setup(h: int, draws: int = 1, seed: int = 0, n_test: int = 2000) -> ReluSetup:
    """Gaussian init (entries N(0, 1/h)), ``a ~ N(0, I/h)``, ``beta ~ N(0, I/h)``, ``x ~ N(0, I)``."""
    gen = torch.Generator().manual_seed(seed)

    def normal(*shape, std=1.0):
        return torch.randn(*shape, generator=gen, dtype=torch.float64) * std

    weights = (normal(draws, h, h, std=h**-0.5), normal(draws, h, h, std=h**-0.5))
    return ReluSetup(weights, normal(draws, h, 1, std=h**-0.5), normal(draws, h, 1, std=h**-0.5),
                     normal(draws, 2 * h, h), normal(draws, n_test, h))


def relu_output(setup: ReluSetup, weights: Sequence[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """``f(x) = sqrt(2) relu(x W1) W2 a / sqrt(h)`` for a batch of inputs (draws, n, h) -> (draws, n, 1)."""
    h = setup.a.shape[-2]
    return 2**0.5 * torch.relu(x @ weights[0]) @ weights[1] @ setup.a / h**0.5


def relu_losses(setup: ReluSetup, weights: Sequence[torch.Tensor], test: bool) -> torch.Tensor:
    """Per-draw loss: ``mean (f - y)^2`` on the test set, ``(1/2) mean (f - y)^2`` on the training set."""
    x = setup.x_test if test else setup.x
    err = relu_output(setup, weights, x) - x @ setup.beta
    return (err**2).mean(dim=(-2, -1)) * (1.0 if test else 0.5)


def _autograd(loss_fn):
    def grads(weights):
        ws = [w.detach().requires_grad_(True) for w in weights]
        return [g.detach() for g in torch.autograd.grad(loss_fn(ws).sum(), ws)]
    return grads


def _problem(model: str, depth: int, h: int, draws: int, init: str, data: str, seed: int):
    """(weights, grad_fn, test-loss fn) of one batch of problems."""
    if model == "relu":
        setup = sample_relu_setup(h, draws, seed)
        return (setup.weights, _autograd(lambda w: relu_losses(setup, w, test=False)),
                lambda w: relu_losses(setup, w, test=True))
    setup = sim.sample_setup(depth, h, draws, init, data, seed)
    return setup.weights, lambda w: sim.gradient(setup, w), lambda w: sim.population_loss(setup, w)


@dataclass(frozen=True)
class ScheduleRun:
    """Mean test loss per step (steps + 1,), its standard error, the mean rate per layer per step, and each
    sampled problem's final test loss (draws,), in the order of the draws (the same problems for every schedule
    of one seed, so two schedules compare draw by draw)."""

    mean: np.ndarray
    sem: np.ndarray
    rates: np.ndarray
    final: np.ndarray


def run_schedule(schedule: str, budget: float, steps: int, model: str = "linear", depth: int = 2, h: int = 64,
                 draws: int = 4, init: str = "orthogonal", data: str = "orthogonal", seed: int = 0) -> ScheduleRun:
    """Train ``draws`` sampled problems for ``steps`` full-batch GD steps with rates from ``schedule``.

    ``model="linear"`` uses the linear net of :mod:`fibook.layerwise.simulation` of the given ``depth`` (true
    gradient, ``init``/``data`` settings as in :func:`fibook.layerwise.simulation.sample_setup`); ``model="relu"``
    the 3-layer ReLU net of this module (``depth`` must be 3; ``init``/``data`` are Gaussian). The same seed gives
    the same problems for every schedule.
    """
    choice("schedule", schedule, SCHEDULES)
    choice("model", model, MODELS)
    if model == "relu" and depth != 3:
        raise ValueError(f"the ReLU net has depth 3 (two trained layers and a fixed output), got depth={depth!r}")
    weights, grad_fn, loss_fn = _problem(model, depth, h, draws, init, data, seed)
    rule = _RULES[schedule]
    losses, rates, _ = sim.descend(weights, grad_fn, loss_fn, lambda w, g, t: rule(w, g, budget), steps)
    losses = losses.numpy()
    sem = losses.std(axis=1, ddof=1) / np.sqrt(draws) if draws > 1 else np.zeros(steps + 1)
    return ScheduleRun(losses.mean(axis=1), sem, rates.mean(dim=-1).numpy(), losses[-1].copy())
