"""Synthetic Part I records with known answers, for the tests of arms, checkpoints, noise, clocks, loading, the
collapse and verdicts (records with given curves, and records of an experiment's grid runs as a sweep stores them);
independent reference computations of the statistics the verdicts read (an exact bootstrap enumerated here,
Student-t quantiles from scipy); random data of a dataset's shape and a tiny config for the trainer's tests; and
Part II's small random regression problems, with Figure 7.1's small sparse regression; and the numbers a quoted
text prints, for the tests of the papers' registries; and Part III schedule runs with given final losses."""

import dataclasses
import itertools
import math
import re

import numpy as np
import torch
from scipy import stats as scipy_stats

from fibook.forgetting import metrics
from fibook.forgetting.config import TrainConfig
from fibook.forgetting.evaluation import Summary
from fibook.forgetting.experiments import run_id
from fibook.forgetting.records import Record
from fibook.forgetting.splits import DatasetSplits, Split
from fibook.layerwise.scheduler import ScheduleRun

COLLAPSED_LOSS = 5.0  # the train loss of a run at the epoch it fell out of its fit (far above ln 10)


def rec(sigma, seed, acc, tau, final_norm, optimizer="sgd", lr=0.01, wd=0.0, status="ok", final_acc=None,
        experiment="x", collapse_to=None, **config):
    """A finished run at ``sigma``/``seed`` with selected test accuracy ``acc``, interpolation epoch ``tau``,
    initial weight norm 10 sigma and final norm ``final_norm``; ``config`` overrides other config fields. Train
    accuracy is 0.9 before ``tau`` and 1 from it on (train loss 0.3 and 0.01); with ``collapse_to`` the last
    epoch's train accuracy falls to that value (train loss :data:`COLLAPSED_LOSS` there)."""
    init = 10.0 * sigma
    c = TrainConfig(optimizer=optimizer, lr=lr, weight_decay=wd, sigma_w=sigma, seed=seed, **({"epochs": 3} | config))
    final_acc = acc if final_acc is None else final_acc
    clocks = {k: v * c.epochs / 3 for k, v in {"T_SGD": 1e-3, "T_L2": 5.0 * wd, "T_adapt": 0.5}.items()}
    summary = Summary(selected_epoch=1, selected_test_acc=acc, selected_val_acc=acc, final_train_acc=1.0,
                      final_test_acc=final_acc, tau_interp=tau, repair_gap=None,
                      init_weight_norm=init, final_weight_norm=final_norm, clocks=clocks, steps=3)
    e = c.epochs
    # epoch 1 has the lowest validation loss; the training set is fitted from tau on; clocks grow linearly
    train = [0.1] + [1.0 if tau is not None and t >= tau else 0.9 for t in range(1, e + 1)]
    loss = [2.3] + [0.01 if a == 1.0 else 0.3 for a in train[1:]]
    if collapse_to is not None:
        train[-1], loss[-1] = collapse_to, COLLAPSED_LOSS
    val_loss = [2.3, 0.3] + [0.5 + 0.01 * t for t in range(2, e + 1)]
    test_acc = [0.1, acc] + [final_acc] * (e - 1)
    history = {"epoch": list(range(e + 1)), "val_loss": val_loss, "val_acc": test_acc, "test_loss": val_loss,
               "test_acc": test_acc, "train_acc": train, "train_loss": loss,
               "weight_norm": [init] + [init * 1.1] * (e - 1) + [final_norm], "layer_norms": [[]] * (e + 1),
               "steps": list(range(e + 1)), **{k: [v * t / e for t in range(e + 1)] for k, v in clocks.items()}}
    return Record(id=run_id(c), experiment=experiment, scale="smoke", status=status, config=c, summary=summary,
                  history=history, layer_names=[], diverged_epoch=None)


def record(i, status="ok", experiment="x", **config):
    """A valid record of run ``i`` (sigma_w = 0.1 (i + 1)) of ``experiment`` at the smoke preset."""
    r = rec(0.1 * (i + 1), 0, 0.5, 1, 1.0, status=status, experiment=experiment, **config)
    if status == "failed":
        return dataclasses.replace(r, summary=None, history=None, layer_names=None,
                                   error="Traceback ...\nRuntimeError: boom\n")
    return dataclasses.replace(r, diverged_epoch=1) if status == "diverged" else r


def grid_records(spread_pp, sigmas, seeds, epochs, tau=1, **kw):
    """Runs over ``sigmas`` x ``seeds`` of ``epochs`` epochs: selected test accuracy falling linearly from 0.9 at
    the smallest sigma_w by ``spread_pp`` at the largest, each seed k lower by 0.3 k pp at the largest (so
    that seeds disagree), final norm 10 sigma^0.9; ``kw`` as for :func:`rec`."""
    out = []
    for seed in seeds:
        for i, s in enumerate(sigmas):
            drop = (spread_pp + 0.3 * seed) * i / (len(sigmas) - 1) / 100
            out.append(rec(s, seed, 0.9 - drop, tau, 10.0 * s**0.9, epochs=epochs, **kw))
    return out


def rec_with_curves(val_loss, test_acc, train_acc, epochs=None, **kw):
    """A synthetic record with the given per-epoch curves (epoch 0 first); T_adapt = epoch / 10."""
    e = len(val_loss) - 1
    r = rec(1.0, 0, test_acc[1], None, 1.0, epochs=epochs or e, **kw)
    history = dict(r.history, epoch=list(range(e + 1)), val_loss=val_loss, test_acc=test_acc, train_acc=train_acc,
                   T_SGD=[0.0] * (e + 1), T_L2=[0.0] * (e + 1), T_adapt=[t / 10 for t in range(e + 1)])
    best = metrics.selected_epoch(val_loss)
    summary = dataclasses.replace(r.summary, selected_epoch=best, selected_test_acc=test_acc[best],
                                  tau_interp=metrics.interpolation_epoch(train_acc))
    return dataclasses.replace(r, history=history, summary=summary)


def stored(config, experiment):
    """A finished record of grid run ``config`` as experiment ``experiment`` writes it."""
    return dataclasses.replace(rec(config.sigma_w, config.seed, 0.5, 1, 1.0), config=config, id=run_id(config),
                               experiment=experiment)


def t975(df):
    """The 0.975 quantile of Student's t on ``df`` degrees of freedom (scipy): a two-sided 95 % half-width in
    standard errors."""
    return float(scipy_stats.t.ppf(0.975, df))


def t95(df):
    """The 0.95 quantile of Student's t on ``df`` degrees of freedom (scipy): one one-sided test at 5 %."""
    return float(scipy_stats.t.ppf(0.95, df))


def enumerated_bootstrap(values, statistic=np.mean):
    """The standard deviation of ``statistic`` over every one of the n**n resamples (with replacement) of the n
    ``values`` (rows of an array), each enumerated here with itertools, times sqrt(n / (n - 1)): the exact bootstrap
    standard error on the scale of sd / sqrt(n) (ddof 1) that :func:`fibook.stats.bootstrap` reports."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    draws = [statistic(values[list(idx)]) for idx in itertools.product(range(n), repeat=n)]
    return float(np.std(draws)) * math.sqrt(n / (n - 1))


def random_splits(channels=3, size=32, classes=2, n=8, seed=0):
    """A :class:`~fibook.forgetting.splits.DatasetSplits` of random uint8 images (``channels`` x ``size`` x ``size``),
    ``n`` per split with labels cycling through ``classes`` classes:
    data of a real dataset's shape without the files."""
    gen = torch.Generator().manual_seed(seed)

    def split():
        x = torch.randint(0, 256, (n, channels, size, size), generator=gen, dtype=torch.uint8)
        return Split(x, torch.arange(n) % classes)

    return DatasetSplits(name="random", classes=tuple(f"class {k}" for k in range(classes)), train=split(),
                         val=split(), test=split(), mean=(0.5,) * channels, std=(0.25,) * channels)


def tiny(**kw):
    """A one-epoch config of width 2, batch 4, eta = 0.01 (``kw`` overrides): what the trainer's tests train on
    :func:`random_splits`."""
    return TrainConfig(**{"width": 2, "epochs": 1, "batch_size": 4, "lr": 0.01, **kw})


def regression_problem(seed):
    """A random (X, y) of the smoke preset's Part II size (N = 10 samples, d = 30 features), standard normal."""
    from fibook.presets import get_preset

    small = get_preset("smoke").shape
    rng = np.random.default_rng(seed)
    return rng.standard_normal((small.n_small, small.d_small)), rng.standard_normal(small.n_small)


def rel(a, b):
    """The relative distance ||a - b|| / ||b||."""
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def schedule_run(final, steps=4, diverged=None):
    """A schedule run whose draws end at test losses ``final`` (a number: one draw)."""
    final = np.atleast_1d(np.asarray(final, dtype=float))
    test = np.vstack([np.ones((steps, final.size)), final])
    diverged = np.zeros(final.size, bool) if diverged is None else np.asarray(diverged)
    return ScheduleRun("x", 1.0, None, test, test.copy(), np.ones((steps, 2)), diverged)


def fig71_problem():
    """A small sparse regression (d = 40, N = 20, 2-sparse teacher) whose exact-limit error rises from below to
    above the midpoint of its min-l1 (0.023) and min-l2 (0.549) errors, at kappa = 0.046."""
    from fibook.shape import interpolators, sparse_recovery

    data = sparse_recovery.draw_sparse_regression(d=40, n_train=20, sparsity=2, noise_var=0.01, n_test=500, seed=0)
    return (data, sparse_recovery.population_error(data, interpolators.min_l1(data.X, data.y)),
            sparse_recovery.population_error(data, interpolators.min_l2(data.X, data.y)))


def printed_numbers(text):
    """The numbers a quoted number's text prints, in order (thousands separators dropped), leaving out a
    parenthetical (where it was read off: "(read off Figure 7.1)")."""
    text = re.sub(r"\(.*?\)", "", text)
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?(?:e-?\d+)?", text)]
