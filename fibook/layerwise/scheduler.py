"""Part III: layer-balancing schedules and their tuning (chapter "A balancing scheduler"; their paired comparison
is :mod:`fibook.layerwise.comparison`).

The paper proposes balancing learning rates across layers; the official code (TDCSZ327/Layer-Balancing) holds no
scheduler. A secondary summary (machine-made) describes its rule for two layers (``cross_norm`` below);
``norm_balance`` and ``rub`` are fibook's own designs. At every GD step ``t``, with a total budget ``S``, weights
``W_l`` and gradients ``G_l`` of the ``k`` trained layers:

``uniform``        ``eta_l = S / k`` (the baseline).
``fixed``          ``eta_1 = phi S`` and ``eta_l = (1 - phi) S / (k - 1)`` for the others, the same at every step:
                   a fixed (eta_1, eta_2) pair, tuned over ``phi`` as well as ``S``.
``cross_norm``     the paper's rule as a secondary summary describes it (two trained layers only):
                   ``eta_{W_i} = 2 ||W_j||_F / (||W_1||_F + ||W_2||_F) lr``, ``j`` the other layer, with the
                   budget ``S = 2 lr``: ``eta_1 = S ||W_2||_F / (||W_1||_F + ||W_2||_F)`` and
                   ``eta_2 = S ||W_1||_F / (||W_1||_F + ||W_2||_F)``, recomputed every step; the summary compares
                   it with the uniform baseline only. Secondary-sourced: not checked against the paper body.
``norm_balance``   fibook's reconstruction of the paper's idea, balancing the layers' post-step norms (it differs
                   from ``cross_norm``): choose the rates so that
                   every layer's norm after the step relative to its norm at initialization,
                   ``q_l = ||W_l - eta_l G_l||_F^2 / ||W_l(0)||_F^2``, is the same, on the budget (fixed-point
                   rounds from the uniform split, :func:`norm_balance_rates`). Relative to the initialization,
                   because Gaussian layers start with norms that differ by a few per cent by chance, and
                   balancing those raw norms pours the whole budget into whichever layer happens to be smallest.
                   Layers whose norms grow at different rates get unequal rates; in the orthogonal square nets it
                   is uniform.
``rub``            relative-update balancing: ``r_l = ||W_l||_F / (||G_l||_F + eps)``,
                   ``eta_l = S r_l / sum_j r_j``, ``eps = 1e-30``, so every layer moves by the same fraction of its
                   norm; it starts at equal rates in the orthogonal square nets of depth 2 and 3.

Every schedule's budget is tuned on the same log grid ``S_0 * BUDGET_FACTORS`` around the setting's natural
budget ``S_0`` (:func:`tune`), on problems drawn apart from the ones it is evaluated on; a draw whose training
loss is non-finite or exceeds ``DIVERGENCE_FACTOR`` times its initial value has diverged.

Models compared: the linear nets of :mod:`fibook.layerwise.simulation` at depths 2, 3, 4 and 8 (Gaussian init,
with and without label noise, and the symmetric orthogonal depth 2), and a 3-layer ReLU net
``f(x) = sqrt(2) relu(x^T W1) W2 a / sqrt(h)`` learning a linear target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fibook.checks import choice
from fibook.layerwise import simulation as sim

EPS = 1e-30
DIVERGENCE_FACTOR = 1e3
SCHEDULES = ("uniform", "fixed", "norm_balance", "rub", "cross_norm")
TWO_LAYER_ONLY = ("cross_norm",)  # defined for two trained layers (depth 2, the depth-3 nets and the ReLU net)
MODELS = ("linear", "relu")
BUDGET_FACTORS = tuple(2.0 ** (j / 2) for j in range(-8, 4))  # 1/16 ... 2.83 S_0, half-octave steps
SPLITS = (0.1, 0.3, 0.5, 0.7, 0.9)  # the fixed pair's fraction phi of the budget for the first layer
TUNE_SEED = 1  # tuning problems; the evaluation draws use seed EVAL_SEED
EVAL_SEED = 2020


@dataclass(frozen=True)
class Setting:
    """One comparison setting: the model, its depth, the init and data kind, the natural budget ``S_0`` and the
    label signal-to-noise ratio (``None``: noiseless)."""

    model: str
    depth: int
    kind: str
    budget: float
    snr: float | None = None

    @property
    def name(self) -> str:
        noise = "" if self.snr is None else f", label SNR {self.snr:g}"
        return f"{self.model} depth {self.depth}, {self.kind}{noise}"


def comparison_settings(h: int) -> list[Setting]:
    """The settings the chapter compares the schedules in, at width ``h``. Natural budgets scale as the
    chapters' natural rates: ``h^1.5`` at depth 2, ``sqrt(h)`` deeper (half that at depth 8)."""
    return [Setting("linear", 2, "orthogonal", 0.5 * h**1.5), Setting("linear", 2, "gaussian", 0.5 * h**1.5),
            Setting("linear", 2, "gaussian", 0.5 * h**1.5, snr=1.0), Setting("linear", 3, "gaussian", h**0.5),
            Setting("linear", 3, "gaussian", h**0.5, snr=1.0), Setting("linear", 4, "gaussian", h**0.5),
            Setting("linear", 8, "gaussian", 0.5 * h**0.5), Setting("relu", 3, "gaussian", h**0.5)]


def _frobenius(x: torch.Tensor) -> torch.Tensor:
    return torch.linalg.matrix_norm(x)


def _check_budget(budget: float) -> None:
    if not budget >= 0:
        raise ValueError(f"budget must be >= 0, got {budget!r}")


def uniform_rates(weights: Sequence[torch.Tensor], grads: Sequence[torch.Tensor], budget: float) -> list[float]:
    """The baseline: ``eta_l = S / k`` for each of the ``k`` trained layers."""
    _check_budget(budget)
    return [budget / len(weights)] * len(weights)


def fixed_rates(weights: Sequence[torch.Tensor], grads: Sequence[torch.Tensor], budget: float,
                split: float) -> list[float]:
    """A fixed pair: ``eta_1 = phi S``, every later layer ``(1 - phi) S / (k - 1)`` (``phi = split``)."""
    _check_budget(budget)
    if not 0 <= split <= 1:
        raise ValueError(f"split (the first layer's fraction of the budget) must lie in [0, 1], got {split!r}")
    k = len(weights)
    return [split * budget] + [(1 - split) * budget / (k - 1)] * (k - 1)


def rub_rates(weights: Sequence[torch.Tensor], grads: Sequence[torch.Tensor], budget: float) -> list[torch.Tensor]:
    """Relative-update balancing: ``eta_l = S r_l / sum_j r_j`` with ``r_l = ||W_l||_F / (||G_l||_F + eps)``.

    Tensors are batched over draws (shape (draws, m, n)); returns one rate per layer and draw.
    """
    _check_budget(budget)
    r = torch.stack([_frobenius(w) / (_frobenius(g) + EPS) for w, g in zip(weights, grads, strict=True)])
    return list(budget * r / r.sum(dim=0))


def cross_norm_rates(weights: Sequence[torch.Tensor], grads: Sequence[torch.Tensor],
                     budget: float) -> list[torch.Tensor]:
    """The summary's rule for two trained layers: ``eta_1 = S ||W_2||_F / (||W_1||_F + ||W_2||_F)``,
    ``eta_2 = S ||W_1||_F / (||W_1||_F + ||W_2||_F)`` (``eta_{W_i} = 2 ||W_j||_F / (||W_1||_F + ||W_2||_F) lr``,
    ``S = 2 lr``; secondary summary): the layer with the smaller norm gets the larger rate. One rate per layer and
    draw; the gradients are not read."""
    _check_budget(budget)
    if len(weights) != 2:
        raise ValueError(f"the cross-norm rule is defined for two trained layers, got {len(weights)}")
    n1, n2 = (_frobenius(w) for w in weights)
    return [budget * n2 / (n1 + n2), budget * n1 / (n1 + n2)]


def applies(schedule: str, setting: Setting) -> bool:
    """Whether ``schedule`` is defined in ``setting``: every schedule but those of ``TWO_LAYER_ONLY``, which need
    exactly two trained layers."""
    layers = 2 if setting.model == "relu" else sim.trained_layers(setting.depth)
    return schedule not in TWO_LAYER_ONLY or layers == 2


def post_step_norms(weights: Sequence[torch.Tensor], grads: Sequence[torch.Tensor],
                    reference: Sequence[torch.Tensor]) -> torch.Tensor:
    """Coefficients of ``q_l(eta) = ||W_l - eta G_l||_F^2 / R_l = a_l - 2 b_l eta + c_l eta^2`` per layer and
    draw, ``R_l`` = ``reference[l]`` (per draw): a tensor (layers, draws, 3) of
    ``(a, b, c) = (||W||^2, <W, G>, ||G||^2) / R``."""
    return torch.stack([torch.stack([(w * w).sum((-2, -1)), (w * g).sum((-2, -1)), (g * g).sum((-2, -1))],
                                    dim=-1) / r.unsqueeze(-1)
                        for w, g, r in zip(weights, grads, reference, strict=True)])


NB_ITERATIONS = 60


def norm_balance_rates(weights: Sequence[torch.Tensor], grads: Sequence[torch.Tensor], budget: float,
                       reference: Sequence[torch.Tensor] | None = None) -> list[torch.Tensor]:
    """Post-step norm balancing: rates on the budget under which every layer's ``q_l(eta_l)``
    (:func:`post_step_norms`; ``reference``: the squared norms at initialization per layer and draw, None: the
    current ones) is the same. A fixed number (``NB_ITERATIONS``) of rounds from the uniform split, each one:
    the target ``tau = mean_l q_l(eta_l)``; each layer's rate moved to the root of ``q_l(eta) = tau`` nearest its
    current rate (the vertex ``b_l / c_l`` when ``tau`` is below the parabola's minimum), clipped to ``[0, S]``;
    the rates rescaled to sum to ``S``. A fixed number of closed-form rounds keeps the result a continuous
    function of the weights, so it does not jump between solutions with the last bits of a matrix product."""
    _check_budget(budget)
    if reference is None:
        reference = [(w * w).sum((-2, -1)) for w in weights]
    coef = post_step_norms(weights, grads, reference)
    a, b, c = coef[..., 0], coef[..., 1], coef[..., 2]
    k = coef.shape[0]
    eta = torch.full_like(a, budget / k)
    if budget == 0:
        return list(eta)
    for _ in range(NB_ITERATIONS):
        tau = (a - 2 * b * eta + c * eta**2).mean(dim=0)
        root = torch.sqrt(torch.clamp(b * b - c * (a - tau), min=0.0))
        low, high = (b - root) / c, (b + root) / c
        eta = torch.where(torch.abs(low - eta) <= torch.abs(high - eta), low, high).clamp(0.0, budget)
        eta = budget * eta / eta.sum(dim=0)
    return list(eta)


def _problem(setting: Setting, h: int, draws: int, seed: int):
    """(weights, grad_fn, test-loss fn, train-loss fn) of one batch of problems."""
    if setting.model == "relu":
        setup = sim.sample_relu_setup(h, draws, seed)
        return (setup.weights, sim.autograd_gradient(lambda w: sim.relu_losses(setup, w, test=False)),
                lambda w: sim.relu_losses(setup, w, test=True), lambda w: sim.relu_losses(setup, w, test=False))
    noise = 0.0 if setting.snr is None else sim.signal_variance(setting.depth, h) / setting.snr
    setup = sim.sample_setup(setting.depth, h, draws, setting.kind, setting.kind, seed, noise=noise)
    return (setup.weights, lambda w: sim.gradient(setup, w), lambda w: sim.population_loss(setup, w),
            lambda w: sim.train_loss(setup, w))


@dataclass(frozen=True)
class ScheduleRun:
    """One schedule on a batch of sampled problems: per-draw test and training losses at steps 0..T
    (``test``, ``train``: (T + 1, draws)), the mean rate per layer per step over the draws that did not diverge
    (``rates``: (T, layers)), which draws diverged (``diverged``: (draws,) bool), and the budget and split it ran
    at. The draws are the same problems for every schedule of one seed, so two runs compare draw by draw."""

    schedule: str
    budget: float
    split: float | None
    test: np.ndarray
    train: np.ndarray
    rates: np.ndarray
    diverged: np.ndarray

    @property
    def final(self) -> np.ndarray:
        """Each draw's final test loss (NaN for a diverged draw)."""
        return np.where(self.diverged, np.nan, self.test[-1])

    @property
    def mean(self) -> np.ndarray:
        """Mean test loss per step over the draws that did not diverge (NaN at every step if all diverged)."""
        return _kept_mean(self.test, self.diverged)

    @property
    def train_mean(self) -> np.ndarray:
        """Mean training loss per step over the draws that did not diverge (NaN at every step if all diverged)."""
        return _kept_mean(self.train, self.diverged)

    @property
    def sem(self) -> np.ndarray:
        """Standard error of :attr:`mean` (0 with one draw, NaN with none)."""
        kept = self.test[:, ~self.diverged]
        n = kept.shape[1]
        if n < 2:
            return np.full(len(kept), 0.0 if n else np.nan)
        return kept.std(axis=1, ddof=1) / np.sqrt(n)

    def final_text(self, *, train: bool = False) -> str:
        """The final mean test loss over the draws that did not diverge with its standard error,
        ``0.2881 ± 0.0034``, or ``0.3216 (one draw)`` when one is left (no spread to estimate); with ``train`` the
        final mean training loss alone. ``every draw diverged`` when none is left."""
        kept = int((~self.diverged).sum())
        if kept == 0:
            return "every draw diverged"
        if train:
            return f"{self.train_mean[-1]:.4f}"
        return f"{self.mean[-1]:.4f} (one draw)" if kept == 1 else f"{self.mean[-1]:.4f} ± {self.sem[-1]:.4f}"


def _kept_mean(losses: np.ndarray, diverged: np.ndarray) -> np.ndarray:
    """Mean over the last axis of the columns of ``losses`` whose draw did not diverge; NaN where none is left."""
    if diverged.all():
        return np.full(losses.shape[:-1], np.nan)
    return losses[..., ~diverged].mean(axis=-1)


def diverged_draws(train: np.ndarray) -> np.ndarray:
    """A draw diverged when its training loss is ever non-finite or above ``DIVERGENCE_FACTOR`` times its value
    at step 0; ``train`` is (steps + 1, draws)."""
    with np.errstate(invalid="ignore"):
        return ~np.all(np.isfinite(train) & (train <= DIVERGENCE_FACTOR * train[:1]), axis=0)


def run_schedule(schedule: str, budget: float, steps: int, setting: Setting, h: int = 64, draws: int = 4,
                 seed: int = EVAL_SEED, split: float | None = None) -> ScheduleRun:
    """Train ``draws`` sampled problems of ``setting`` for ``steps`` full-batch GD steps with rates from
    ``schedule`` at budget ``budget`` (``split``: the first layer's fraction, for ``fixed`` only). The linear nets
    descend the true gradient of :mod:`fibook.layerwise.simulation`; the same seed gives the same problems for
    every schedule."""
    choice("schedule", schedule, SCHEDULES)
    choice("model", setting.model, MODELS)
    if setting.model == "relu" and setting.depth != 3:
        raise ValueError(f"the ReLU net has depth 3 (two trained layers and a fixed output), got {setting.depth!r}")
    if (schedule == "fixed") != (split is not None):
        raise ValueError(f"a split is given for the 'fixed' schedule and only for it (schedule={schedule!r}, "
                         f"split={split!r})")
    weights, grad_fn, test_fn, train_fn = _problem(setting, h, draws, seed)
    init_sq = [(w * w).sum((-2, -1)) for w in weights]
    rule = {"uniform": uniform_rates, "rub": rub_rates, "cross_norm": cross_norm_rates,
            "norm_balance": lambda w, g, s: norm_balance_rates(w, g, s, init_sq),
            "fixed": lambda w, g, s: fixed_rates(w, g, s, split)}[schedule]
    train: list[torch.Tensor] = []

    def losses(w):
        train.append(train_fn(w))
        return test_fn(w)

    test, rates, _ = sim.descend(weights, grad_fn, losses, lambda w, g, t: rule(w, g, budget), steps)
    test, train_np = test.numpy(), torch.stack(train).numpy()
    diverged = diverged_draws(train_np)
    rates = _kept_mean(rates.numpy(), diverged)
    return ScheduleRun(schedule, float(budget), split, test, train_np, rates, diverged)


@dataclass(frozen=True)
class Tuned:
    """A schedule's tuned (budget, split) and its mean final test loss on the tuning draws; ``tried`` counts the
    candidates and ``diverged`` those excluded because a tuning draw diverged."""

    schedule: str
    budget: float
    split: float | None
    loss: float
    tried: int
    diverged: int


def tune(schedule: str, setting: Setting, h: int, steps: int, draws: int, seed: int = TUNE_SEED) -> Tuned:
    """Tune ``schedule``'s budget over ``setting.budget * BUDGET_FACTORS`` (and, for ``fixed``, its split over
    ``SPLITS``) on ``draws`` problems of seed ``seed``: the candidate with the lowest mean final test loss among
    those where no tuning draw diverged; on an exact tie the smaller budget, then the split nearest the middle.
    Raises when every candidate diverges."""
    splits = SPLITS if schedule == "fixed" else (None,)
    best, tried, bad = None, 0, 0
    for factor in BUDGET_FACTORS:
        for split in splits:
            run = run_schedule(schedule, setting.budget * factor, steps, setting, h, draws, seed, split)
            tried += 1
            if run.diverged.any():
                bad += 1
                continue
            key = (float(run.test[-1].mean()), factor, 0.0 if split is None else abs(split - 0.5))
            if best is None or key < best[0]:
                best = (key, run)
    if best is None:
        raise RuntimeError(f"{schedule} diverged at every budget in {setting.name} (h = {h}, {steps} steps)")
    (loss, _, _), run = best
    return Tuned(schedule, run.budget, run.split, loss, tried, bad)


def grid_edges(run: ScheduleRun, setting: Setting) -> list[str]:
    """Which of a tuned run's choices sit at an end of their grid (``"budget"``, ``"split"``): there the grid
    may have cut the tuning short, and a table must say so."""
    edges = []
    factor = run.budget / setting.budget
    if any(abs(factor / f - 1) < 1e-12 for f in (BUDGET_FACTORS[0], BUDGET_FACTORS[-1])):
        edges.append("budget")
    if run.split is not None and run.split in (SPLITS[0], SPLITS[-1]):
        edges.append("split")
    return edges


def compare(setting: Setting, h: int, steps: int, draws: int, tune_draws: int) -> dict[str, ScheduleRun]:
    """Every schedule of ``SCHEDULES`` that :func:`applies` in ``setting``, tuned (:func:`tune`, seed
    ``TUNE_SEED``) and then run at its tuned budget on ``draws`` fresh problems (seed ``EVAL_SEED``, the same
    problems for every schedule)."""
    out = {}
    for schedule in (s for s in SCHEDULES if applies(s, setting)):
        t = tune(schedule, setting, h, steps, tune_draws)
        out[schedule] = run_schedule(schedule, t.budget, steps, setting, h, draws, EVAL_SEED, t.split)
    return out

