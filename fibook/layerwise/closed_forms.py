"""Part III, layer-wise learning rates (Pang et al., ICML 2026): the exact expected test losses of linear nets
after one and two GD steps (book chapters "Two steps, exactly" and "Unequal first, equal next").

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

import numpy as np

from fibook.checks import choice, nonnegative, positive

DEPTHS_CLOSED_FORM = (2, 3)
STEPS_CLOSED_FORM = (0, 1, 2)
VARIANTS = ("paper", "official_code")
# The budgets S = eta1 + eta2 of the paper's split curves at h = 1000 (chapter "Unequal first, equal next"):
# depth 2 from 27,000 to 63,000 (S / h^1.5 from 0.85 to 2), depth 3 from 30 to 100 (S / sqrt(h) from 0.95 to 3.2).
PAPER_BUDGETS = {2: tuple(range(27_000, 63_001, 4_000)), 3: tuple(range(30, 101, 10))}


def check_depth(depth, allowed=DEPTHS_CLOSED_FORM) -> int:
    """A depth (trained linear layers + the fixed output) among ``allowed``."""
    if depth not in allowed:
        raise ValueError(f"depth must be one of {allowed} (trained linear layers + fixed output), got {depth!r}")
    return int(depth)


def check_step(step) -> int:
    if step not in STEPS_CLOSED_FORM:
        raise ValueError(f"step must be one of {STEPS_CLOSED_FORM} (closed forms exist after 0, 1 or 2 GD steps), "
                         f"got {step!r}")
    return int(step)



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
    depth, step = check_depth(depth), check_step(step)
    choice("variant", variant, VARIANTS)
    h = positive("width h", h)
    eta1, eta2 = nonnegative("learning rate eta1", eta1), nonnegative("learning rate eta2", eta2)
    return _loss_sp(depth, h, eta1 + eta2, eta1 * eta2, step, variant)


def exact_one_step_loss(h, eta1, eta2):
    r"""Expected test loss of the depth-2 net after one step of true GD (residual ``B`` kept), orthogonal setting.

    The residual after the step is ``E (1 - s/h^2) + (p/h^3) E W^T E`` with ``E = W/h - beta``. With
    ``u = 1 - s/h^2``, ``c_W = u/h + p/h^5``, ``c_beta = u + 2p/h^4``, ``c_M = p/h^3``:

        E L_1 = h c_W^2 + c_beta^2 + c_M^2 / h + 2 c_W c_M / h.

    Its gap to :func:`closed_form_loss` (depth 2, step 1) is about ``4p/h^4``, i.e. O(1/h) for ``p = O(h^3)``.
    """
    h = positive("width h", h)
    eta1, eta2 = nonnegative("learning rate eta1", eta1), nonnegative("learning rate eta2", eta2)
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
    depth, step = check_depth(depth), check_step(step)
    h = positive("width h", h)
    budget = nonnegative("budget", budget)
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
