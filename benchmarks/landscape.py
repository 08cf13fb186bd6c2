"""A 200 x 200 (eta1, eta2) test-loss landscape of the two-layer linear net at h = 1000: closed form vs simulation.

The closed form (fibook.layerwise.closed_forms.closed_form_loss) evaluates the whole grid at once. Simulating
it means two GD steps from a shared initialization for each of the 40,000 pairs; a random subsample of pairs is
simulated (both the surrogate update and literal float64 GD, one sampled network), the time per pair is
extrapolated to the grid,
and the closed form is compared with the simulations on the subsample. Both timings come from this one run.

Usage: python benchmarks/landscape.py [--pairs 12] [--h 1000] [--grid 200]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import torch

from fibook.layerwise import closed_forms as lw
from fibook.layerwise import simulation as sim


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--h", type=int, default=1000)
    ap.add_argument("--grid", type=int, default=200)
    ap.add_argument("--pairs", type=int, default=12, help="simulated pairs (subsample of the grid)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    h, n = args.h, args.grid
    eta_max = h**1.5  # per layer, so budgets S = eta1 + eta2 reach 2 h^1.5 (the paper's 27k-63k at h = 1000)
    axis = np.linspace(0, eta_max, n)
    e1, e2 = np.meshgrid(axis, axis, indexing="ij")

    repeats = 20
    t0 = time.perf_counter()
    for _ in range(repeats):
        grid = {step: lw.closed_form_loss(2, h, e1, e2, step) for step in (1, 2)}
    t_closed = (time.perf_counter() - t0) / repeats

    setup = sim.sample_setup(2, h, 1, seed=2020)
    rng = np.random.default_rng(0)
    picks = rng.choice(n * n, size=args.pairs, replace=False)
    sims = {True: [], False: []}
    t_sim = {True: 0.0, False: 0.0}
    for idx in picks:
        i, j = divmod(int(idx), n)
        rates = [e1[i, j], e2[i, j]]
        for surrogate in (True, False):
            t0 = time.perf_counter()
            losses, _, _ = sim.descend(setup.weights, lambda w, s=surrogate: sim.gradient(setup, w, s),
                                      lambda w: sim.population_loss(setup, w), lambda w, g, t, r=rates: r,
                                      steps=2)
            t_sim[surrogate] += time.perf_counter() - t0
            sims[surrogate].append(losses[:, 0].numpy())
    budgets = (e1 + e2).flat[picks] / h**1.5

    print(f"# landscape benchmark: h = d = n = {h}, {n} x {n} grid, eta_l in [0, {eta_max:.0f}], "
          f"{args.pairs} simulated pairs, 1 network (seed 2020), float64, 1 thread")
    print(f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, numpy {np.__version__}")
    print(f"closed form, whole grid, steps 1 and 2: {t_closed * 1e3:.2f} ms")
    print("| simulation | time per pair (s) | grid time, extrapolated (s) | speed ratio vs closed form |")
    print("|---|---|---|---|")
    for surrogate, name in ((True, "surrogate update (A only)"), (False, "literal GD (A - B)")):
        per = t_sim[surrogate] / args.pairs
        print(f"| {name} | {per:.3f} | {per * n * n:.0f} | {per * n * n / t_closed:.3g}x |")
    print()
    print("| compared with closed form | budget S / h^1.5 | pairs | max rel. diff step 1 | max rel. diff step 2 |")
    print("|---|---|---|---|---|")
    for surrogate, name in ((True, "surrogate update"), (False, "literal GD")):
        losses = np.array(sims[surrogate])
        rel = {step: np.abs(losses[:, step] - grid[step].flat[picks]) / grid[step].flat[picks] for step in (1, 2)}
        for lo, hi in ((0, 1), (1, 2)):
            m = ((budgets > lo) | (lo == 0)) & (budgets <= hi)
            if m.any():
                print(f"| {name} | [{lo}, {hi}] | {m.sum()} | {rel[1][m].max():.2e} | {rel[2][m].max():.2e} |")


if __name__ == "__main__":
    main()
