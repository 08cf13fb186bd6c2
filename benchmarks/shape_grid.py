"""Time of the full alpha x s grid of Figure 7.1 (Part II) at a named scale (default ``book``).

Each grid point is one dual-Newton solve of Theorem 4.1's interpolator on the paper's sparse-regression data
(d = 1000, N = 100 at ``book``). Prints one small table. Usage: ``python benchmarks/shape_grid.py [scale]``.
"""

import sys
import time

import numpy as np

from fibook.notebook import markdown_table
from fibook.presets import get_preset
from fibook.provenance import cpu_model
from fibook.shape import sparse_recovery


def main(scale_name=None):
    scale = get_preset(scale_name)
    sc = scale.shape
    t0 = time.perf_counter()
    data = [sparse_recovery.figure71_data(sc, i) for i in range(sc.n_instances)]
    t_data = time.perf_counter() - t0
    alphas = sparse_recovery.figure71_alphas(sc)
    t0 = time.perf_counter()
    errors = np.stack([sparse_recovery.population_error_grid(dd, alphas, sc.shapes) for dd in data])
    t_grid = time.perf_counter() - t0
    n = errors.size
    print(f"scale {scale.name}: d = {sc.d}, N = {sc.n_train}, grid {len(sc.shapes)} shapes x {sc.n_alpha} alphas "
          f"x {sc.n_instances} data draw(s); CPU {cpu_model()}")
    print(markdown_table([
        {"step": "draw data", "solves": "", "seconds": f"{t_data:.2f}", "ms per solve": ""},
        {"step": "alpha x s grid (dual Newton)", "solves": n, "seconds": f"{t_grid:.2f}",
         "ms per solve": f"{1e3 * t_grid / n:.1f}"},
        {"step": "total", "solves": n, "seconds": f"{t_data + t_grid:.2f}", "ms per solve": ""},
    ]))
    print(f"population error range: {errors.min():.4f} .. {errors.max():.4f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
