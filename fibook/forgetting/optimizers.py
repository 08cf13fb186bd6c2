"""The five optimizers of Part I, built by name: ``sgd``, ``msgd``, ``adam``, ``adamw``, ``muon`` (compared in
chapter "Optimizers"; :data:`OPTIMIZERS` is the registry that labels and clocks read).

Weight decay acts on Conv2d/Linear weights only (BatchNorm gamma/beta and biases are never decayed), with the
semantics of each method:

=========  =====================================================================================
``sgd``    torch.optim.SGD, momentum 0; ``weight_decay`` is coupled L2: g <- g + lambda W.
``msgd``   torch.optim.SGD, momentum 0.9 (dampening 0, no Nesterov); coupled L2 as above.
``adam``   torch.optim.Adam, betas (0.9, 0.999), eps 1e-8; ``weight_decay`` is coupled L2 (added to the
           gradient before the adaptive scaling).
``adamw``  torch.optim.AdamW, same betas/eps; ``weight_decay`` is decoupled: W <- (1 - lr lambda) W.
``muon``   :class:`Muon` on the hidden conv kernels (viewed as out x in*k*k matrices) and hidden Linear
           weights, decoupled decay W <- (1 - lr lambda) W; the first conv, the head, BatchNorm parameters and
           biases go to AdamW (``adam_lr``, default 1e-3, same decoupled ``weight_decay``).
=========  =====================================================================================

Muon never rescales the weights themselves, so it keeps the memory of sigma_w that a weight-renormalizing
variant would erase by construction.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from fibook.forgetting.models import weight_layers

NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def newton_schulz(g: torch.Tensor, steps: int = 5, coefficients=NS_COEFFICIENTS, eps: float = 1e-7,
                  dtype: torch.dtype | None = torch.bfloat16) -> torch.Tensor:
    """Approximately orthogonalize a matrix, or each matrix of a (K, m, n) stack: the quintic Newton-Schulz
    iteration of Muon (Jordan et al. 2024).

    With X_0 = G / ||G||_F (transposed so that rows <= cols) and coefficients (a, b, c),

        A = X X^T,   X <- a X + (b A + c A^2) X,

    repeated ``steps`` times. The result is close to U V^T for G = U S V^T, with singular values spread around 1
    (roughly 0.7 to 1.2 for 5 steps) rather than exactly 1. ``dtype`` is the working precision (bfloat16 as in
    the reference implementation; None keeps the input's dtype); the result is returned in that precision.
    """
    if g.ndim not in (2, 3):
        raise ValueError(f"newton_schulz takes a matrix or a (K, m, n) stack of them, got shape {tuple(g.shape)}")
    a, b, c = coefficients
    x = g.to(dtype) if dtype is not None else g.clone()
    tall = g.size(-2) > g.size(-1)
    if tall:
        x = x.mT
    x = x / x.norm(dim=(-2, -1), keepdim=True).clamp(min=eps)
    mul_add = torch.addmm if x.ndim == 2 else torch.baddbmm  # beta * M + alpha * A @ B
    for _ in range(steps):
        gram = x @ x.mT
        poly = mul_add(gram, gram, gram, beta=b, alpha=c)
        x = mul_add(x, poly, x, beta=a)
    return x.mT if tall else x


def muon_momentum(buf: torch.Tensor, grad: torch.Tensor, beta: float,
                  nesterov: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Muon's momentum: the new buffer B' and the update U it orthogonalizes, from buffer B and gradient G:

        B' = beta B + (1 - beta) G                       (an exponential average, not SGD's sum B' = beta B + G)
        U  = (1 - beta) G + beta B'   with ``nesterov``, else  U = B'

    as in Jordan et al. (2024)'s reference ``muon_update`` (computed there with ``lerp``, as here) and in
    ``torch.optim.Muon``. Das et al. (2026) train Muon with beta = 0.95 and Nesterov on. Neither input is
    modified; U is B' itself without Nesterov.
    """
    new_buf = buf.lerp(grad, 1 - beta)
    return new_buf, (grad.lerp(new_buf, beta) if nesterov else new_buf)


def as_matrices(t: torch.Tensor, population: int = 1) -> torch.Tensor:
    """``t`` as the matrix Muon orthogonalizes: a Linear weight (out, in) as is, a conv kernel (out, in, k, k)
    as (out, in k k); with ``population=K`` a stack of K models' parameters (first dimension K out, as
    :mod:`fibook.forgetting.fused` stores them) as a (K, out, in k k) stack, one matrix per model."""
    return t.reshape(t.size(0), -1) if population == 1 else t.reshape(population, t.size(0) // population, -1)


def muon_scale(rows: int, cols: int) -> float:
    """sqrt(max(1, rows / cols)): the factor by which Muon enlarges the orthogonalized update of a tall (rows x
    cols) matrix, the reference implementation's and ``torch.optim.Muon``'s default (``"original"``)
    adjustment, which Das et al. (2026) take over as sqrt(max(1, out / (in k k)))."""
    return math.sqrt(max(1.0, rows / cols))


def muon_update(weight: torch.Tensor, grad: torch.Tensor, buf: torch.Tensor, *, lr: float, momentum: float,
                nesterov: bool = True, weight_decay: float = 0.0, ns_steps: int = 5,
                ns_dtype: torch.dtype | None = torch.bfloat16,
                population: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """One Muon step of a parameter (Jordan et al. 2024), as a function: (new weight, new momentum buffer) from
    the weight W, its gradient G and momentum buffer B; no input is modified. With M the update of
    :func:`muon_momentum` viewed by :func:`as_matrices` (rows x cols, or one such matrix per model of a
    population),

        O  = newton_schulz(M)                         (about the polar factor U V^T of M = U S V^T)
        W' = (1 - lr lambda) W - lr sqrt(max(1, rows / cols)) O

    with decoupled weight decay lambda, as the reference implementation and ``torch.optim.Muon``; Muon never
    renormalizes W, so the scale sigma_w of the initialization stays in W until the steps and the decay wear it
    down (Das et al. 2026, who run Muon at lr 0.02 with beta 0.95, Nesterov and 5 Newton-Schulz steps on every
    hidden conv). O stays in ``ns_dtype`` and the factor lr sqrt(...) is applied in W's dtype as the step's
    multiplier, so O is not rounded a second time.
    """
    new_buf, update = muon_momentum(buf, grad, momentum, nesterov)
    matrix = as_matrices(update, population)
    ortho = newton_schulz(matrix, ns_steps, dtype=ns_dtype)
    scale = muon_scale(matrix.size(-2), matrix.size(-1))
    new_weight = weight.mul(1 - lr * weight_decay).add(ortho.reshape(weight.shape), alpha=-lr * scale)
    return new_weight, new_buf


class Muon(torch.optim.Optimizer):
    """Muon: momentum, then Newton-Schulz orthogonalization of the update, for matrix-shaped parameters.

    Per step, for a parameter W (a conv kernel is viewed as an out x (in k k) matrix) with gradient G
    (:func:`muon_update`, which this applies to each parameter):

        B <- beta B + (1 - beta) G                  (momentum buffer, an exponential average)
        U <- (1 - beta) G + beta B  if nesterov else B
        O <- newton_schulz(U) * sqrt(max(1, rows / cols))
        W <- (1 - lr lambda) W - lr O

    This is the update of the public reference implementation and of ``torch.optim.Muon`` with its default
    (``"original"``) learning-rate adjustment. With ``population=K`` each parameter holds K models' matrices
    stacked along its first dimension (:mod:`fibook.forgetting.fused`), and each is orthogonalized on its own.
    """

    def __init__(self, params, lr: float = 0.02, momentum: float = 0.95, nesterov: bool = True,
                 weight_decay: float = 0.0, ns_steps: int = 5, ns_dtype: torch.dtype | None = torch.bfloat16,
                 population: int = 1):
        if lr <= 0 or not 0 <= momentum < 1 or weight_decay < 0:
            raise ValueError(f"Muon needs lr > 0, 0 <= momentum < 1, weight_decay >= 0; got lr={lr}, "
                             f"momentum={momentum}, weight_decay={weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay, ns_steps=ns_steps,
                        ns_dtype=ns_dtype, population=population)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            options = {k: group[k] for k in ("lr", "momentum", "nesterov", "weight_decay", "ns_steps", "ns_dtype",
                                             "population")}
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = torch.zeros_like(p)
                new_weight, state["momentum_buffer"] = muon_update(p, p.grad, buf, **options)
                p.copy_(new_weight)
        return loss


class Combined:
    """Several optimizers stepped together as one (Muon for hidden matrices, AdamW for the rest).

    ``param_groups`` lists the groups of all of them, so a learning-rate schedule reaches every group.
    """

    def __init__(self, *optimizers: torch.optim.Optimizer):
        self.optimizers = optimizers
        self.param_groups = [g for o in optimizers for g in o.param_groups]

    def zero_grad(self, set_to_none: bool = True):
        for o in self.optimizers:
            o.zero_grad(set_to_none=set_to_none)

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for o in self.optimizers:
            o.step()
        return loss

    def state_dict(self):
        return {"optimizers": [o.state_dict() for o in self.optimizers]}

    def load_state_dict(self, state_dict):
        for o, s in zip(self.optimizers, state_dict["optimizers"], strict=True):
            o.load_state_dict(s)


def split_parameters(model: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """(Conv2d/Linear weights, everything else: BatchNorm parameters and biases)."""
    weights = [m.weight for _, m in weight_layers(model)]
    ids = {id(w) for w in weights}
    return weights, [p for p in model.parameters() if id(p) not in ids]


def _groups(model: nn.Module, weight_decay: float) -> list[dict]:
    weights, others = split_parameters(model)
    return [{"params": weights, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}]


def _check_momentum(name: str, value) -> None:
    """A momentum (or Adam beta) in [0, 1): at 1 or above the running average never forgets and grows."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")


def _sgd(model, lr, weight_decay, momentum):
    _check_momentum("momentum", momentum)
    return torch.optim.SGD(_groups(model, weight_decay), lr=lr, momentum=momentum)


def _adam(model, lr, weight_decay, betas, eps):
    for beta in betas:
        _check_momentum("each of betas", beta)
    return torch.optim.Adam(_groups(model, weight_decay), lr=lr, betas=betas, eps=eps)


def _adamw(model, lr, weight_decay, betas, eps):
    for beta in betas:
        _check_momentum("each of betas", beta)
    return torch.optim.AdamW(_groups(model, weight_decay), lr=lr, betas=betas, eps=eps)


def _muon(model, lr, weight_decay, adam_lr, momentum, nesterov, ns_steps, ns_dtype, population):
    _check_momentum("momentum", momentum)
    if isinstance(ns_dtype, str):  # configs name it, e.g. "float64", so that they stay JSON
        ns_dtype = getattr(torch, ns_dtype)
    layers = weight_layers(model)
    hidden = [m.weight for _, m in layers[1:-1]]  # not the first conv, not the head
    hidden_ids = {id(w) for w in hidden}
    rest_weights = [m.weight for _, m in layers if id(m.weight) not in hidden_ids]
    _, others = split_parameters(model)
    muon = Muon(hidden, lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay,
                ns_steps=ns_steps, ns_dtype=ns_dtype, population=population)
    adamw = torch.optim.AdamW([{"params": rest_weights, "weight_decay": weight_decay},
                               {"params": others, "weight_decay": 0.0}], lr=adam_lr)
    return Combined(muon, adamw)


CLOCKS = ("T_SGD", "T_L2", "T_adapt")


@dataclass(frozen=True)
class OptimizerSpec:
    """One optimizer of Part I: ``label`` for figures and tables; ``clock``, the forgetting clock of Das et al.
    (2026) that its own mechanism runs on (T_SGD = sum eta^2 / b for SGD-type steps, T_adapt = sum eta for
    adaptive ones, AdamW included, whose decoupled decay also advances T_L2 = lambda sum eta; SGD with coupled
    L2 is read on T_L2 instead, :func:`fibook.forgetting.clocks.clock_key`); ``build(model, lr,
    weight_decay, **options)``; ``defaults``, every option it takes with its default; ``needs_population``:
    its update is not element-wise, so a fused population (:mod:`fibook.forgetting.fused`) must be split per model."""

    name: str
    label: str
    clock: str
    build: Callable[..., torch.optim.Optimizer]
    defaults: dict = field(default_factory=dict)
    needs_population: bool = False

    def __post_init__(self):
        if self.clock not in CLOCKS:
            raise ValueError(f"optimizer {self.name!r}: unknown clock {self.clock!r}; choose one of: "
                             f"{', '.join(CLOCKS)}")


OPTIMIZERS: dict[str, OptimizerSpec] = {s.name: s for s in (
    OptimizerSpec("sgd", "SGD", "T_SGD", _sgd, {"momentum": 0.0}),
    OptimizerSpec("msgd", "momentum SGD", "T_SGD", _sgd, {"momentum": 0.9}),
    OptimizerSpec("adam", "Adam", "T_adapt", _adam, {"betas": (0.9, 0.999), "eps": 1e-8}),
    OptimizerSpec("adamw", "AdamW", "T_adapt", _adamw, {"betas": (0.9, 0.999), "eps": 1e-8}),
    OptimizerSpec("muon", "Muon", "T_adapt", _muon,
                  {"adam_lr": 1e-3, "momentum": 0.95, "nesterov": True, "ns_steps": 5, "ns_dtype": "bfloat16"},
                  needs_population=True),
)}


def get_optimizer(name: str) -> OptimizerSpec:
    """The registry entry of optimizer ``name``; an unknown name raises with the choices."""
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; choose one of: {', '.join(OPTIMIZERS)}")
    return OPTIMIZERS[name]


def make_optimizer(name: str, model: nn.Module, lr: float, weight_decay: float = 0.0, population: int = 1,
                   **options):
    """Build optimizer ``name`` for ``model`` (see the module docstring for each one's weight-decay semantics).

    ``population`` is the number of models fused in ``model`` (:mod:`fibook.forgetting.fused`), passed to the optimizers
    whose spec ``needs_population``. ``options`` override the spec's ``defaults`` (e.g. ``momentum``, ``betas``,
    ``adam_lr``); an option it does not take raises.
    """
    spec = get_optimizer(name)
    if not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"learning rate must be a finite number > 0, got {lr}")
    if not (math.isfinite(weight_decay) and weight_decay >= 0):
        raise ValueError(f"weight_decay must be a finite number >= 0, got {weight_decay}")
    unknown = sorted(set(options) - set(spec.defaults))
    if unknown:
        raise ValueError(f"bad option(s) {', '.join(unknown)} for optimizer {name!r}; it takes: "
                         f"{', '.join(spec.defaults) or 'none'}")
    extra = {"population": population} if spec.needs_population else {}
    return spec.build(model, lr, weight_decay, **{**spec.defaults, **options}, **extra)
