"""Metrics of the forgetting paper (Das et al. 2026) as pure functions; where the paper's exact definition is not
public, fibook's convention (stated in the chapter "The question and the protocol").

Accuracies are fractions in [0, 1]; spreads and gaps are returned in percentage points (pp). Epoch lists are
indexed from 0 (the initialization) to E (the last epoch); checkpoints are selected among epochs 1..E.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

INTERPOLATION_THRESHOLD = 0.995
# A run "collapses" when, after it first fit the training set (tau_interp), its train accuracy falls below 90 %.
# Fixed on 2026-12-05, after every Part I result but clock_ladder's and tsgd_pair's existed, when an audit found the
# book's SGD + L2 clock arm (eta 0.01, lambda 0.1, 120 epochs) falling to 16-88 % and to chance after fitting.
COLLAPSE_TRAIN_ACC = 0.90


def spread_pp(acc_by_sigma: Mapping[float, float]) -> float:
    """Spread = max_sigma Acc(sigma) - min_sigma Acc(sigma), in percentage points.

    ``acc_by_sigma`` maps each sigma_w to its (seed-mean) test accuracy as a fraction.
    """
    accs = [float(a) for a in acc_by_sigma.values()]
    if len(accs) < 2:
        raise ValueError(f"a spread needs accuracies at two or more sigma_w values, got {len(accs)}")
    if not all(0.0 <= a <= 1.0 for a in accs):
        raise ValueError(f"accuracies must be fractions in [0, 1], got {accs}")
    return 100.0 * (max(accs) - min(accs))


def selected_epoch(val_losses: Sequence[float], first: int = 1) -> int | None:
    """The validation-selected checkpoint: argmin_t ValLoss(theta_t) over epochs t >= ``first`` (>= 1), earliest
    on ties.

    Non-finite losses are never selected; None if no epoch from ``first`` on has a finite loss.
    """
    if first < 1:
        raise ValueError(f"first must be an epoch >= 1 (epoch 0 is the initialization), got {first}")
    best, best_t = math.inf, None
    for t, v in enumerate(val_losses):
        if t >= first and math.isfinite(v) and v < best:
            best, best_t = v, t
    return best_t


def late_window_start(last_epoch: int) -> int:
    """The first epoch of the second half of a run of ``last_epoch`` epochs: floor(E / 2) + 1, so the window is
    E/2 < t <= E (epochs 21..40 of a 40-epoch run, 61..120 of a 120-epoch one). Two constant-rate runs that differ
    only in length share their first E_short epochs; selecting in each run's own second half makes the longer
    run's checkpoint come after the shorter run has ended whenever E_long >= 2 E_short."""
    if last_epoch < 1:
        raise ValueError(f"a run needs at least one epoch, got {last_epoch}")
    return last_epoch // 2 + 1


def fit_fraction(train_accs: Sequence[float], threshold: float = INTERPOLATION_THRESHOLD) -> float:
    """The fraction of the second half's epochs, E/2 < t <= E (:func:`late_window_start`), whose train accuracy is at
    least ``threshold``: 1 for a run that fits the training set and stays fit; 0 for a run with no epoch (one that
    diverged in its first)."""
    last = len(train_accs) - 1
    if last < 1:
        return 0.0
    window = train_accs[late_window_start(last):]
    return sum(a >= threshold for a in window) / len(window)


def deepest_drop_pp(train_accs: Sequence[float], tau_interp: int | None) -> float:
    """How far train accuracy fell after the run first fit the training set: 100 (TrainAcc(tau) - min_{t >= tau}
    TrainAcc(t)) pp; 0 for a run that never fit it (it has no fit to lose)."""
    if tau_interp is None:
        return 0.0
    return 100.0 * (train_accs[tau_interp] - min(train_accs[tau_interp:]))


def peak_loss_after(train_losses: Sequence[float], tau_interp: int | None) -> float:
    """The largest train loss at or after tau_interp (a spike: a loss far above ln(classes), chance, means the
    run left its fit); nan for a run that never fit the training set."""
    if tau_interp is None:
        return math.nan
    return max(float(v) for v in train_losses[tau_interp:])


def collapsed(train_accs: Sequence[float], tau_interp: int | None, floor: float = COLLAPSE_TRAIN_ACC) -> bool:
    """The run fit the training set (tau_interp) and later fell below ``floor`` train accuracy."""
    return tau_interp is not None and min(train_accs[tau_interp:]) < floor


def interpolation_epoch(train_accs: Sequence[float], threshold: float = INTERPOLATION_THRESHOLD) -> int | None:
    """tau_interp = min{t >= 1 : TrainAcc(theta_t) >= threshold} (train accuracy in eval mode, no augmentation);
    None when never reached."""
    for t, a in enumerate(train_accs):
        if t >= 1 and a >= threshold:
            return t
    return None


def repair_gap(val_accs: Sequence[float], tau_interp: int | None) -> float | None:
    """RepairGap = ValAcc(theta_E) - ValAcc(theta_tau_interp) in pp, E the final epoch; None without tau_interp.

    Positive: validation accuracy still improved after the training set was interpolated.
    """
    if tau_interp is None:
        return None
    return 100.0 * (float(val_accs[-1]) - float(val_accs[tau_interp]))


def forgetting_clocks(lrs: Sequence[float], batch_size: int, weight_decay: float = 0.0) -> dict[str, float]:
    """The forgetting clocks of Das et al. (2026) over the optimizer steps actually taken:

        T_SGD = sum_k eta_k^2 / b,   T_L2 = lambda sum_k eta_k,   T_adapt = sum_k eta_k .

    ``lrs`` is the per-step learning-rate sequence.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
    eta = np.asarray(lrs, dtype=np.float64)
    total = float(eta.sum())
    return {"T_SGD": float(np.square(eta).sum()) / batch_size, "T_L2": weight_decay * total, "T_adapt": total}


def radial_memory_slope(sigmas: Sequence[float], final_norms: Sequence[float]) -> float:
    """Radial memory R: the least-squares slope of log ||W_E|| against log sigma_w,

        R = Cov(log sigma, log ||W_E||) / Var(log sigma).

    R = 1: the final norm is still proportional to sigma_w (full memory); R = 0: the norm forgot sigma_w.
    """
    x = np.log(np.asarray(sigmas, dtype=np.float64))
    y = np.log(np.asarray(final_norms, dtype=np.float64))
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"need two or more (sigma, norm) pairs of equal length, got {len(x)} and {len(y)}")
    if np.ptp(x) == 0:
        raise ValueError("the sigma_w values must not all be equal")
    xc = x - x.mean()
    return float(np.dot(xc, y - y.mean()) / np.dot(xc, xc))


def rank_correlation(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation rho of two equal-length sequences (``scipy.stats.spearmanr``, ties averaged),

        rho = 1 - 6 sum_i d_i^2 / (n (n^2 - 1))   without ties, d_i the difference of the ranks of x_i and y_i.

    Used to ask whether a spread falls as a clock grows across arms. None with fewer than three pairs or when
    either sequence is constant (no ordering to compare).
    """
    from scipy.stats import spearmanr

    if len(x) != len(y):
        raise ValueError(f"x and y must have equal length, got {len(x)} and {len(y)}")
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(spearmanr(x, y).statistic)


def expected_range(k: int) -> float:
    """d_k = E[max - min] of k independent standard normal draws,

        d_k = integral over x of 1 - Phi(x)^k - (1 - Phi(x))^k dx     (d_2 = 2 / sqrt(pi) = 1.128, d_3 = 1.693,
                                                                       d_5 = 2.326),

    so a spread over k sigma_w values that do not matter at all is d_k s on average when each accuracy carries
    noise of standard deviation s.
    """
    from scipy.integrate import quad
    from scipy.stats import norm

    if not (isinstance(k, int) and k >= 2):
        raise ValueError(f"a range needs k >= 2 values, got {k!r}")
    value, _ = quad(lambda x: 1.0 - norm.cdf(x) ** k - norm.sf(x) ** k, -np.inf, np.inf)
    return float(value)


def binomial_se_pp(accuracy: float, n: int) -> float:
    """The standard error of an accuracy measured on ``n`` independent test images, 100 sqrt(p (1 - p) / n) pp."""
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"accuracy must be a fraction in [0, 1], got {accuracy}")
    if n < 1:
        raise ValueError(f"the test set needs at least one image, got {n}")
    return 100.0 * math.sqrt(accuracy * (1.0 - accuracy) / n)


def decreasing_fit(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """The least-squares non-increasing fit of y on x (isotonic regression by pool-adjacent-violators): the
    values f_i minimising sum_i (y_i - f_i)^2 subject to f_i >= f_j whenever x_i < x_j, returned in the order of
    ``x``. Points at equal x are pooled to their mean first (one fitted value per x)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or len(x) == 0:
        raise ValueError(f"x and y must be non-empty 1-d sequences of equal length, got {x.shape} and {y.shape}")
    xs, inverse = np.unique(x, return_inverse=True)
    weights = np.bincount(inverse).astype(np.float64)
    means = np.bincount(inverse, weights=y) / weights
    blocks: list[list[float]] = []  # [mean, weight, count of distinct x]
    for m, w in zip(means, weights, strict=True):
        blocks.append([m, w, 1])
        while len(blocks) > 1 and blocks[-2][0] < blocks[-1][0]:  # violates non-increasing: pool
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    fitted = np.concatenate([np.full(int(c), m) for m, _, c in blocks])
    return fitted[inverse]
