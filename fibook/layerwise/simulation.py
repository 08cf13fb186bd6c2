"""Part III: sampled linear nets and gradient descent on them, batched over Monte-Carlo draws (torch float64),
the literal-GD checks of the closed forms in :mod:`fibook.layerwise.closed_forms` (whose
docstring gives the notation and the surrogate update); and the 3-layer ReLU net the scheduler is also compared on
(:class:`ReluSetup`, its gradient by autograd).

Serves "Two steps, exactly" (``two_steps``: the Monte-Carlo checks), "Unequal first, equal next" (``unequal_equal``:
the literal-GD split curves) and "A balancing scheduler" (``scheduler``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fibook.checks import choice, nonnegative, positive
from fibook.layerwise.closed_forms import check_depth

SETTINGS = ("orthogonal", "gaussian")


@dataclass(frozen=True)
class LinearSetup:
    """A batch of sampled linear-net problems: trained weights, the fixed output ``a`` and the target.

    ``weights[l]`` has shape (draws, h, h); ``a`` is (draws, h, 1) or None (depth 2, ``a = I``); ``beta`` is
    (draws, h, h) at depth 2, else (draws, h, 1); ``sigma`` is ``X^T X / n`` (draws, h, h) or None when it is the
    identity (orthogonal data); ``c`` is the output scale (``h`` at depth 2, else ``sqrt(h)``). With label noise
    (``Y = X beta + xi``), ``noise_xt`` is ``X^T xi / n`` (shaped like ``beta``) and ``noise_sq`` is
    ``||xi||^2 / n`` (draws,); both are None without noise.
    """

    depth: int
    h: int
    weights: tuple[torch.Tensor, ...]
    a: torch.Tensor | None
    beta: torch.Tensor
    sigma: torch.Tensor | None
    c: float
    noise_xt: torch.Tensor | None = None
    noise_sq: torch.Tensor | None = None


def haar(draws: int, n: int, gen: torch.Generator) -> torch.Tensor:
    """Haar-distributed orthogonal n x n matrices: QR of a Gaussian matrix, columns signed by diag(R)."""
    q, r = torch.linalg.qr(torch.randn(draws, n, n, generator=gen, dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)


def _unit(draws: int, n: int, gen: torch.Generator) -> torch.Tensor:
    v = torch.randn(draws, n, 1, generator=gen, dtype=torch.float64)
    return v / torch.linalg.vector_norm(v, dim=-2, keepdim=True)


def trained_layers(depth: int) -> int:
    """Number of trained matrices: 2 for depths 2 and 3, ``depth - 1`` beyond."""
    return 2 if depth == 2 else depth - 1


def sample_setup(depth: int, h: int, draws: int = 1, init: str = "orthogonal", data: str = "orthogonal",
                 seed: int = 0, noise: float = 0.0) -> LinearSetup:
    """Draw ``draws`` independent problems (d = h = n).

    ``init``: "orthogonal" (Haar weights) or "gaussian" (entries N(0, 1/h)). ``data``: "orthogonal"
    (``X = sqrt(n) Q``, so ``Sigma = I``; ``beta`` = Haar/sqrt(h) at depth 2, a unit vector beyond; ``a`` a unit
    vector) or "gaussian" (``X`` standard normal; ``beta`` entries N(0, 1/h^2) at depth 2, N(0, 1/h) beyond;
    ``a ~ N(0, I/h)``). ``noise``: the variance rho of every label entry's noise ``xi`` (``Y = X beta + xi``, xi
    entries i.i.d. N(0, rho) on the n training labels; drawn after everything else, so a noiseless draw is the same
    problem with and without this option).

    With Gaussian data ``xi`` is drawn and ``noise_xt = X^T xi / n``, ``noise_sq = ||xi||^2 / n``. With orthogonal
    data (``X = sqrt(n) Q_x``, ``Q_x`` orthogonal since n = d) ``noise_xt = Q_x^T xi / sqrt(n)``: ``Q_x^T xi`` has
    i.i.d. N(0, rho) entries whatever ``Q_x`` is (rotation invariance), so ``noise_xt`` is drawn directly with
    i.i.d. N(0, rho / n) entries, and ``noise_sq = ||xi||^2 / n = ||Q_x^T xi||^2 / n = ||noise_xt||_F^2`` exactly.
    This is the official orthogonal script's noise (``2-NN-Orthogonal-experiment.py:97-98,112-115``: ``xi ~
    N(0, rho)`` of shape (n, h), ``y = X beta + xi``; the commented ``rho = 0.001`` at d = 1000 is SNR 1).
    """
    check_depth(depth, allowed=tuple(range(2, 65)))
    positive("width h", h)
    choice("init", init, SETTINGS)
    choice("data", data, SETTINGS)
    if int(h) != h or int(draws) != draws or draws < 1:
        raise ValueError(f"width h and draws must be positive integers, got h={h!r}, draws={draws!r}")
    nonnegative("label noise variance", noise)
    h, draws = int(h), int(draws)
    gen = torch.Generator().manual_seed(seed)
    k = trained_layers(depth)
    if init == "orthogonal":
        weights = tuple(haar(draws, h, gen) for _ in range(k))
    else:
        weights = tuple(torch.randn(draws, h, h, generator=gen, dtype=torch.float64) / h**0.5 for _ in range(k))
    if data == "orthogonal":
        sigma = None
        beta = haar(draws, h, gen) / h**0.5 if depth == 2 else _unit(draws, h, gen)
        a = None if depth == 2 else _unit(draws, h, gen)
    else:
        x = torch.randn(draws, h, h, generator=gen, dtype=torch.float64)
        sigma = x.transpose(-1, -2) @ x / h
        shape = (draws, h, h) if depth == 2 else (draws, h, 1)
        beta = torch.randn(*shape, generator=gen, dtype=torch.float64) / (h if depth == 2 else h**0.5)
        a = None if depth == 2 else torch.randn(draws, h, 1, generator=gen, dtype=torch.float64) / h**0.5
    noise_xt = noise_sq = None
    if noise > 0 and data == "gaussian":
        xi = torch.randn(*beta.shape, generator=gen, dtype=torch.float64) * noise**0.5
        noise_xt, noise_sq = x.transpose(-1, -2) @ xi / h, (xi**2).sum(dim=(-2, -1)) / h
    elif noise > 0:  # orthogonal data: Q_x^T xi / sqrt(n), i.i.d. N(0, rho / n) (docstring)
        noise_xt = torch.randn(*beta.shape, generator=gen, dtype=torch.float64) * (noise / h) ** 0.5
        noise_sq = (noise_xt**2).sum(dim=(-2, -1))
    return LinearSetup(depth, h, weights, a, beta, sigma, float(h) if depth == 2 else h**0.5, noise_xt, noise_sq)


def signal_variance(depth: int, h: int) -> float:
    """Variance of one noiseless label entry ``x^T beta`` of the data of :func:`sample_setup`: ``1/h`` at depth 2,
    ``1`` deeper, for both kinds. Gaussian data (``x ~ N(0, I_h)``): ``h / h^2`` and ``h / h``. Orthogonal data
    (``X = sqrt(n) Q_x``): the mean square of the entries of ``X beta`` is ``||X beta||_F^2 / (n m) =
    ||beta||_F^2 / m`` over the ``m`` outputs, ``(h / d) / h = 1/h`` at depth 2 (``beta = Q_beta / sqrt(d)``, the
    official ``2-NN-Orthogonal-experiment.py:114``, so rho = 0.001 is SNR 1 at d = 1000) and ``1`` deeper (a unit
    ``beta``). A label SNR ``r`` is the noise variance ``signal_variance / r``."""
    check_depth(depth, allowed=tuple(range(2, 65)))
    return 1.0 / h if depth == 2 else 1.0


def _mul(x, y):
    """Matrix product where None stands for the identity."""
    if x is None:
        return y
    if y is None:
        return x
    return x @ y


def _t(x):
    return None if x is None else x.transpose(-1, -2)


def output_map(setup: LinearSetup, weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """The end-to-end linear map ``W_1 ... W_k a / c`` (what multiplies ``x^T``)."""
    out = setup.a
    for w in reversed(weights):
        out = _mul(w, out)
    return out / setup.c


def population_loss(setup: LinearSetup, weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """Population test loss per draw, ``||W_1..W_k a / c - beta||_F^2``."""
    return ((output_map(setup, weights) - setup.beta) ** 2).sum(dim=(-2, -1))


def train_loss(setup: LinearSetup, weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """Training loss ``(1/2n) ||X W a / c - Y||_F^2`` per draw with ``X`` eliminated: ``(1/2) tr(E^T Sigma E)``,
    ``E = W a / c - beta``, and with label noise ``- <E, X^T xi / n> + ||xi||^2 / 2n`` added."""
    e = output_map(setup, weights) - setup.beta
    loss = 0.5 * (e * _mul(setup.sigma, e)).sum(dim=(-2, -1))
    if setup.noise_xt is not None:
        loss = loss - (e * setup.noise_xt).sum(dim=(-2, -1)) + 0.5 * setup.noise_sq
    return loss


def gradient_parts(setup: LinearSetup, weights: Sequence[torch.Tensor]):
    """The split ``grad W_l = B_l - A_l`` (module docstring); returns the lists ``(A, B)``."""
    k = len(weights)
    left = [None] * k  # W_1 .. W_{l-1}
    right = [None] * k  # W_{l+1} .. W_k a
    for i in range(1, k):
        left[i] = _mul(left[i - 1], weights[i - 1])
    right[k - 1] = setup.a
    for i in range(k - 2, -1, -1):
        right[i] = _mul(weights[i + 1], right[i + 1])
    signal = _mul(setup.sigma, setup.beta)  # X^T Y / n
    if setup.noise_xt is not None:
        signal = signal + setup.noise_xt
    residual = _mul(setup.sigma, output_map(setup, weights))
    a_parts = [_mul(_mul(_t(left[i]), signal), _t(right[i])) / setup.c for i in range(k)]
    b_parts = [_mul(_mul(_t(left[i]), residual), _t(right[i])) / setup.c for i in range(k)]
    return a_parts, b_parts


def gradient(setup: LinearSetup, weights: Sequence[torch.Tensor], surrogate: bool = False):
    """The update direction per layer: ``-A_l`` for the surrogate, the true gradient ``B_l - A_l`` otherwise."""
    a_parts, b_parts = gradient_parts(setup, weights)
    if surrogate:
        return [-a for a in a_parts]
    return [b - a for a, b in zip(a_parts, b_parts, strict=True)]


RatesFn = Callable[[Sequence[torch.Tensor], Sequence[torch.Tensor], int], Sequence]


def descend(weights, grad_fn, loss_fn, rates_fn: RatesFn, steps: int):
    """Gradient descent with per-layer rates: ``W_l <- W_l - eta_l^t g_l``; the one loop of Part III.

    ``grad_fn(weights)`` gives the per-layer directions, ``rates_fn(weights, grads, t)`` the per-layer rates at
    step ``t`` (scalars, or tensors of shape (draws,)), ``loss_fn(weights)`` the per-draw loss recorded before the
    first and after every step. Returns ``(losses (steps + 1, draws), rates (steps, layers, draws), weights)``.
    """
    weights = list(weights)
    losses, rates = [loss_fn(weights)], []
    for t in range(steps):
        grads = grad_fn(weights)
        etas = [torch.as_tensor(e, dtype=torch.float64) * torch.ones(len(weights[0]), dtype=torch.float64)
                for e in rates_fn(weights, grads, t)]
        weights = [w - e.view(-1, 1, 1) * g for w, e, g in zip(weights, etas, grads, strict=True)]
        losses.append(loss_fn(weights))
        rates.append(torch.stack(etas))
    empty = torch.zeros(0, len(weights), len(weights[0]), dtype=torch.float64)
    return torch.stack(losses), torch.stack(rates) if rates else empty, weights


def layer_rates(depth: int, eta1: float, eta2: float) -> list[float]:
    """Per-layer rates: ``eta1`` for the first trained layer, ``eta2`` for every later one."""
    return [eta1] + [eta2] * (trained_layers(depth) - 1)


@dataclass(frozen=True)
class MonteCarlo:
    """Mean test loss per step over draws, its standard error, and the per-draw losses (draws, steps + 1)."""

    mean: np.ndarray
    sem: np.ndarray
    losses: np.ndarray


def simulate(depth: int, h: int, eta1: float, eta2: float, steps: int = 2, surrogate: bool = True,
             init: str = "orthogonal", data: str = "orthogonal", seed: int = 0, draws: int = 1000,
             chunk: int | None = None) -> MonteCarlo:
    """Test loss after 0..``steps`` steps of GD with constant rates, averaged over ``draws`` sampled problems.

    ``surrogate=True`` runs the A-only update the closed forms describe; ``False`` runs literal float64 GD on the
    training loss (with ``X^T X / n`` in place of ``X``, exact). ``depth >= 4`` gives ``eta2`` to every trained
    layer after the first. Draws are processed ``chunk`` at a time (default: about 64 MB of weights per chunk).
    """
    nonnegative("learning rate eta1", eta1)
    nonnegative("learning rate eta2", eta2)
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
    chunk = chunk or max(1, min(draws, 2_000_000 // (h * h)))
    rates = layer_rates(depth, eta1, eta2)
    per_draw = []
    for i, start in enumerate(range(0, draws, chunk)):
        setup = sample_setup(depth, h, min(chunk, draws - start), init, data, seed=seed * 100_003 + i)
        losses, _, _ = descend(setup.weights, lambda w, s=setup: gradient(s, w, surrogate),
                               lambda w, s=setup: population_loss(s, w), lambda w, g, t: rates, steps)
        per_draw.append(losses.T.numpy())
    losses = np.concatenate(per_draw)
    sem = losses.std(axis=0, ddof=1) / np.sqrt(draws) if draws > 1 else np.full(steps + 1, np.nan)
    return MonteCarlo(losses.mean(axis=0), sem, losses)


def gradient_norms(setup: LinearSetup, weights: Sequence[torch.Tensor] | None = None) -> list[dict[str, float]]:
    """Operator and Frobenius norms of ``A_l`` and ``B_l`` per layer, averaged over draws.

    In the orthogonal depth-2 setting ``||A||_op = h^{-3/2}``, ``||A||_F = h^{-1}``, ``||B||_op = h^{-2}``,
    ``||B||_F = h^{-3/2}``: A dominates B by ``sqrt(h)`` in both norms.
    """
    a_parts, b_parts = gradient_parts(setup, setup.weights if weights is None else weights)
    rows = []
    for layer, (a, b) in enumerate(zip(a_parts, b_parts, strict=True), start=1):
        rows.append({"layer": layer,
                     "A_op": torch.linalg.matrix_norm(a, ord=2).mean().item(),
                     "A_F": torch.linalg.matrix_norm(a).mean().item(),
                     "B_op": torch.linalg.matrix_norm(b, ord=2).mean().item(),
                     "B_F": torch.linalg.matrix_norm(b).mean().item()})
    return rows


# The 3-layer ReLU net of the scheduler comparison ("A balancing scheduler"), the one setting that is not linear.


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


def autograd_gradient(loss_fn: Callable[[Sequence[torch.Tensor]], torch.Tensor],
                      ) -> Callable[[Sequence[torch.Tensor]], list[torch.Tensor]]:
    """The gradient function of a per-draw loss by autograd: ``weights -> [d (sum of loss_fn(weights)) / d W_l]``
    (the draws are independent, so the sum's gradient holds each draw's own)."""
    def grads(weights):
        ws = [w.detach().requires_grad_(True) for w in weights]
        return [g.detach() for g in torch.autograd.grad(loss_fn(ws).sum(), ws)]
    return grads
