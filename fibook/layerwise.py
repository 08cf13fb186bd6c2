"""Part III, layer-wise learning rates (Pang et al., ICML 2026): closed forms and gradient descent on linear nets.

Notation (book chapter "Two steps, exactly"): width ``h``, layer rates ``eta1, eta2``, and the two symmetric
functions the losses depend on, ``s = eta1 + eta2`` and ``p = eta1 * eta2``.

* depth 2 ("2-NN"): ``f(x) = x^T W1 W2 / h`` (fixed ``a = I_h``), matrix target ``beta`` (d x h).
* depth 3 ("3-NN"): ``f(x) = x^T W1 W2 a / sqrt(h)`` with a fixed vector ``a``; vector target ``beta``.
* depth L >= 4 (experiments only): ``f(x) = x^T W1 ... W_{L-1} a / sqrt(h)``.

Training loss ``(1/2n) ||X W a / c - Y||^2`` (``c = h`` or ``sqrt(h)``, ``W`` the product of the trained layers),
test loss the population value ``E_x ||f(x) - beta^T x||^2 = ||W a / c - beta||_F^2`` (no 1/2, summed over
outputs). Each gradient splits into a label-aligned part and a residual part, ``grad W_l = B_l - A_l`` with

    A_l = (1/c) (W_1..W_{l-1})^T  Sigma beta         (W_{l+1}..W_k a)^T
    B_l = (1/c) (W_1..W_{l-1})^T  Sigma (W a / c)    (W_{l+1}..W_k a)^T,     Sigma = X^T X / n.

The *surrogate* update keeps only ``A`` (the paper's approximation, its Eqs. 12-14): ``W_l <- W_l + eta_l A_l``;
the closed forms below are expectations of the surrogate's test loss over a random orthogonal setup
(d = h = n, ``X^T X = n I``, Haar weights, no label noise). Everything here is float64.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

DEPTHS_CLOSED_FORM = (2, 3)
STEPS_CLOSED_FORM = (0, 1, 2)
SETTINGS = ("orthogonal", "gaussian")
VARIANTS = ("paper", "official_code")


# --------------------------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------------------------

def _check_depth(depth, allowed=DEPTHS_CLOSED_FORM) -> int:
    if depth not in allowed:
        raise ValueError(f"depth must be one of {allowed} (trained linear layers + fixed output), got {depth!r}")
    return int(depth)


def _check_step(step) -> int:
    if step not in STEPS_CLOSED_FORM:
        raise ValueError(f"step must be one of {STEPS_CLOSED_FORM} (closed forms exist after 0, 1 or 2 GD steps), "
                         f"got {step!r}")
    return int(step)


def _check_width(h):
    h_arr = np.asarray(h, dtype=float)
    if not np.all(np.isfinite(h_arr)) or np.any(h_arr <= 0):
        raise ValueError(f"width h must be a positive number, got {h!r}")
    return h_arr


def _check_rates(**rates):
    out = []
    for name, value in rates.items():
        arr = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise ValueError(f"learning rate {name} must be finite and >= 0, got {value!r}")
        out.append(arr)
    return out


def _check_choice(name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


# --------------------------------------------------------------------------------------------------------------
# Closed forms (orthogonal setting, d = h = n, rho = 0)
# --------------------------------------------------------------------------------------------------------------

def _loss_sp(depth: int, h, s, p, step: int, variant: str = "paper"):
    """Expected surrogate test loss as a polynomial in (s, p); works for real and complex s, p."""
    paper = variant == "paper"
    if step == 0:
        return 1 + 1 / h + 0 * s + 0 * p
    if depth == 2:
        if step == 1:
            return 1 + 1 / h - 2 * s / h**2 + s**2 / h**4 + p**2 / h**7 + (2 * p / h**5 if paper else 0)
        c = 1 + p / h**3
        return c**4 / h + (2 * c * s / h**2 - 1) ** 2 + 16 * p**2 / h**7 + 8 * p * c**2 / h**5
    if step == 1:
        return 1 + 1 / h - 2 * s / h + s**2 / h**2 + p**2 / h**4 + (2 * p / h**3 if paper else 0)
    return ((2 * s * (h + p) / h**2 - 1) ** 2 + 1 / h + 2 * p / h**2 + 10 * p / h**3 + p**2 / h**3
            + 37 * p**2 / h**4 + 12 * p**3 / h**5 + p**4 / h**6)


def closed_form_loss(depth: int, h, eta1, eta2, step: int, variant: str = "paper"):
    r"""Expected test loss of the surrogate (A-part only) dynamics after ``step`` GD steps; broadcasts over arrays.

    With ``s = eta1 + eta2``, ``p = eta1 eta2`` (same rates at every step), orthogonal setting d = h = n:

    * step 0, both depths: ``1 + 1/h``.
    * depth 2, step 1 (paper Thm 5.3, Eq. 82): ``1 + 1/h - 2s/h^2 + s^2/h^4 + p^2/h^7 + 2p/h^5``.
    * depth 2, step 2: ``c^4/h + (2cs/h^2 - 1)^2 + 16p^2/h^7 + 8pc^2/h^5`` with ``c = 1 + p/h^3``.
    * depth 3, step 1 (paper Thm 5.5): ``1 + 1/h - 2s/h + s^2/h^2 + p^2/h^4 + 2p/h^3``.
    * depth 3, step 2: ``(2s(h+p)/h^2 - 1)^2 + 1/h + 2p/h^2 + 10p/h^3 + p^2/h^3 + 37p^2/h^4 + 12p^3/h^5
      + p^4/h^6``.

    ``variant="official_code"`` drops the ``2p/h^5`` (depth 2) and ``2p/h^3`` (depth 3) step-1 terms, as the
    authors' plotting scripts do; Monte Carlo rejects that variant at small width.
    """
    depth, step = _check_depth(depth), _check_step(step)
    _check_choice("variant", variant, VARIANTS)
    h = _check_width(h)
    eta1, eta2 = _check_rates(eta1=eta1, eta2=eta2)
    return _loss_sp(depth, h, eta1 + eta2, eta1 * eta2, step, variant)


def exact_one_step_loss(h, eta1, eta2):
    r"""Expected test loss of the depth-2 net after one step of true GD (residual ``B`` kept), orthogonal setting.

    The residual after the step is ``E (1 - s/h^2) + (p/h^3) E W^T E`` with ``E = W/h - beta``. With
    ``u = 1 - s/h^2``, ``c_W = u/h + p/h^5``, ``c_beta = u + 2p/h^4``, ``c_M = p/h^3``:

        E L_1 = h c_W^2 + c_beta^2 + c_M^2 / h + 2 c_W c_M / h.

    Its gap to :func:`closed_form_loss` (depth 2, step 1) is about ``4p/h^4``, i.e. O(1/h) for ``p = O(h^3)``.
    """
    h = _check_width(h)
    eta1, eta2 = _check_rates(eta1=eta1, eta2=eta2)
    s, p = eta1 + eta2, eta1 * eta2
    u = 1 - s / h**2
    c_w, c_beta, c_m = u / h + p / h**5, u + 2 * p / h**4, p / h**3
    return h * c_w**2 + c_beta**2 + c_m**2 / h + 2 * c_w * c_m / h


def split_curvature(depth: int, h, budget, step: int, variant: str = "paper"):
    r"""Curvature ``d^2 L / dt^2`` at ``t = 0`` along ``eta1 = S/2 + t, eta2 = S/2 - t`` (closed form).

    There ``p = S^2/4 - t^2`` and ``s = S``, so the curvature is ``-2 dL/dp``: positive means equal rates are a
    local minimum of the split, negative a local maximum. ``dL/dp`` is taken by a complex step (exact for these
    polynomials to rounding).
    """
    depth, step = _check_depth(depth), _check_step(step)
    h = _check_width(h)
    (budget,) = _check_rates(budget=budget)
    p = budget**2 / 4
    dp = 1e-20 * np.maximum(1.0, p)
    dl_dp = np.imag(_loss_sp(depth, h, budget + 0j, p + 1j * dp, step, variant)) / dp
    return -2 * dl_dp


def budget_grid(budget: float, points: int = 19):
    """The split grid ``eta1 = i S / (points + 1)``, ``i = 1..points``, and ``eta2 = S - eta1`` (exact budget)."""
    eta1 = budget * np.arange(1, points + 1) / (points + 1)
    return eta1, budget - eta1


TIE_RTOL = 1e-9


def best_splits(eta1, loss, budget: float, rtol: float = TIE_RTOL) -> tuple[float, ...]:
    r"""Every ``eta1 / S`` of a split grid whose loss ties with the lowest, in ascending order.

    A point ties when ``L_i - L_min <= rtol |L_min|``. Many of the book's curves are symmetric under
    ``eta1 <-> eta2`` in exact arithmetic (the depth-2 closed forms depend on ``s`` and ``p`` only, and literal GD
    from a Haar initialization is symmetric at step 1), so their two ends are exact minimizers that rounding
    separates by ~1e-16: which one ``argmin`` picks depends on the CPU's kernels. ``rtol = 1e-9`` is ~10^7 times
    float64 rounding and far below the gap between neighbouring grid points of the book's curves (>= 1e-6
    relative), so the answer is the same on every machine: both ends for a symmetric curve, one point otherwise.
    """
    eta1, loss = np.asarray(eta1, dtype=float), np.asarray(loss, dtype=float)
    if eta1.shape != loss.shape or eta1.ndim != 1 or len(eta1) == 0:
        raise ValueError(f"eta1 and loss must be 1-d arrays of one length, got shapes {eta1.shape} and {loss.shape}")
    if not np.all(np.isfinite(loss)):
        raise ValueError("loss has non-finite values; a diverged split has no best split")
    if not 0 <= rtol < 1:
        raise ValueError(f"rtol must be in [0, 1), got {rtol!r}")
    low = loss.min()
    return tuple(float(f) for f in np.sort(eta1[loss - low <= rtol * abs(low)] / budget))


# --------------------------------------------------------------------------------------------------------------
# Sampled networks and gradient descent (batched over Monte-Carlo draws, torch float64)
# --------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LinearSetup:
    """A batch of sampled linear-net problems: trained weights, the fixed output ``a`` and the target.

    ``weights[l]`` has shape (draws, h, h); ``a`` is (draws, h, 1) or None (depth 2, ``a = I``); ``beta`` is
    (draws, h, h) at depth 2, else (draws, h, 1); ``sigma`` is ``X^T X / n`` (draws, h, h) or None when it is the
    identity (orthogonal data); ``c`` is the output scale (``h`` at depth 2, else ``sqrt(h)``).
    """

    depth: int
    h: int
    weights: tuple[torch.Tensor, ...]
    a: torch.Tensor | None
    beta: torch.Tensor
    sigma: torch.Tensor | None
    c: float


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
                 seed: int = 0) -> LinearSetup:
    """Draw ``draws`` independent problems (d = h = n).

    ``init``: "orthogonal" (Haar weights) or "gaussian" (entries N(0, 1/h)). ``data``: "orthogonal"
    (``X = sqrt(n) Q``, so ``Sigma = I``; ``beta`` = Haar/sqrt(h) at depth 2, a unit vector beyond; ``a`` a unit
    vector) or "gaussian" (``X`` standard normal; ``beta`` entries N(0, 1/h^2) at depth 2, N(0, 1/h) beyond;
    ``a ~ N(0, I/h)``).
    """
    _check_depth(depth, allowed=tuple(range(2, 65)))
    _check_width(h)
    _check_choice("init", init, SETTINGS)
    _check_choice("data", data, SETTINGS)
    if int(h) != h or int(draws) != draws or draws < 1:
        raise ValueError(f"width h and draws must be positive integers, got h={h!r}, draws={draws!r}")
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
    return LinearSetup(depth, h, weights, a, beta, sigma, float(h) if depth == 2 else h**0.5)


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
    """Training loss per draw with ``X`` eliminated: ``(1/2) tr(E^T Sigma E)``, ``E = W a / c - beta``."""
    e = output_map(setup, weights) - setup.beta
    return 0.5 * (e * _mul(setup.sigma, e)).sum(dim=(-2, -1))


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
    signal = _mul(setup.sigma, setup.beta)
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
    _check_rates(eta1=eta1, eta2=eta2)
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
