"""Synthetic Part I arms with known answers, shared by the tests of the claims modules
(``tests/forgetting/claims/``): every rule is tested just above and just below each of its thresholds, and with
too little data to decide.

An arm's spread of seed-means is built to be the mean of its per-seed spreads (its smallest sigma_w's accuracy is
the same for every seed), so the seed-bootstrap standard error is computable by hand: three seeds scattered by
-DELTA, 0, +DELTA around m give the bootstrap SE of a mean, computed here by enumerating the 27 resamples
(:func:`synthetic.enumerated_bootstrap`), and scipy gives the t quantile on 2 degrees of freedom. A contrast of a
scattered arm with an arm whose seeds agree (``flat``) is paired and carries that same SE, so each threshold is
reached by moving m by a small EPS either side of it.
"""

import math

import numpy as np
from scipy.stats import linregress
from synthetic import enumerated_bootstrap, rec, t95, t975

from fibook.forgetting.arms import arms
from fibook.forgetting.loading import Finished
from fibook.forgetting.noise import NoiseFloor

EPS = 1e-6  # a nudge in pp well above rounding and well below any printed digit
SEEDS = (0, 1, 2)
DELTA = 0.6  # the per-seed scatter of a scattered arm's spread (pp)
SCATTER = {2: (-1.0, 1.0), 3: (-1.0, 0.0, 1.0)}
SE3 = enumerated_bootstrap([-DELTA, 0.0, DELTA])  # the bootstrap SE of a mean of three seeds scattered +-DELTA
H3 = t975(2) * SE3  # the half-width of its two-sided 95 % interval (2 degrees of freedom)
R3 = t95(2) * SE3  # the reach of one one-sided test at 5 % (the equivalence test and "under")
SE2 = enumerated_bootstrap([-DELTA, DELTA])  # two seeds: 1 degree of freedom
# one-seed arms borrow a spread std of 0.5 pp on 4 degrees of freedom; their unpaired difference adds two of them
NOISE = NoiseFloor(seed_std_pp=0.3, spread_std_pp=0.5, n_test=3000, seeds=3, spread_arms=2, spread_df=4)
SE1 = math.hypot(0.5, 0.5)
H1 = t975(4) * SE1
UNSTABLE_NOTE = "(a run fell out of its fit, see the stability table)"


def arm(spread_pp, optimizer="sgd", lr=0.01, wd=0.0, radial=1.0, final_spread_pp=None, tau=1, seeds=(0,),
        collapse=False, **config):
    """One arm over sigma_w = 1 and e: test accuracy 0.9 and 0.9 - spread / 100 (``spread_pp`` a number, or one
    per seed), final norm 10 sigma^R; every selected checkpoint interpolates unless ``tau`` is None; every run
    falls to 50 % train accuracy at its last epoch with ``collapse`` (an unstable arm)."""
    sigmas = (1.0, 2.718281828459045)
    per_seed = spread_pp if isinstance(spread_pp, tuple) else (spread_pp,) * len(seeds)
    records = []
    for seed, spread in zip(seeds, per_seed, strict=True):
        accs = (0.9, 0.9 - spread / 100)
        finals = (0.9, 0.9 - (spread if final_spread_pp is None else final_spread_pp) / 100)
        for s, a, fa in zip(sigmas, accs, finals, strict=True):
            records.append(rec(s, seed, a, tau, 10.0 * s**radial, optimizer=optimizer, lr=lr, wd=wd, final_acc=fa,
                               collapse_to=0.5 if collapse else None, **config))
    (a,) = arms(records, show=("lr", "weight_decay"))
    return a


def scattered(m, optimizer="sgd", seeds=SEEDS, delta=DELTA, **kw):
    """An arm whose seeds' spreads are m - delta, (m,) m + delta: seed-mean spread m."""
    return arm(tuple(m + delta * k for k in SCATTER[len(seeds)]), optimizer, seeds=seeds, **kw)


def flat(s, optimizer="sgd", seeds=SEEDS, **kw):
    """An arm whose seeds agree: spread s at every seed."""
    return arm((s,) * len(seeds), optimizer, seeds=seeds, **kw)


def finished(*arms, total_arms=None):
    runs = sum(len(a.records) for a in arms)
    return Finished("x", "smoke", list(arms), runs, runs, len(arms) if total_arms is None else total_arms)



LOG_SIGMAS = np.arange(4.0)  # sigma_w = e^0 .. e^3
WOBBLE = 0.05 * np.array([1.0, -1.0, -1.0, 1.0])  # log-norm residuals orthogonal to 1 and log sigma: slope exact
R_SE = linregress(LOG_SIGMAS, WOBBLE).stderr
R_H = t975(2) * R_SE  # four sigma_w: 2 degrees of freedom


def radial_arm(r, optimizer="adam", lr=1e-3, sigmas=LOG_SIGMAS, wobble=WOBBLE, collapse=False):
    """An arm whose log final norm is r log sigma_w + ``wobble``: radial memory R = r with the standard error
    ``R_SE``; unstable with ``collapse`` (as in :func:`arm`)."""
    norms = np.exp(r * sigmas + wobble)
    records = [rec(float(np.exp(x)), 0, 0.9, 1, float(n), optimizer=optimizer, lr=lr,
                   collapse_to=0.5 if collapse else None)
               for x, n in zip(sigmas, norms, strict=True)]
    (a,) = arms(records)
    return a


UP, DOWN = (-DELTA, 0.0, DELTA), (DELTA, 0.0, -DELTA)  # the scatter of three seeds, rising and falling
SE, DF = 0.4, 2  # a difference given directly: its standard error (pp) and degrees of freedom
H = t975(DF) * SE  # the half-width of its two-sided 95 % interval
