"""Named scales: the one table of experiment sizes that chapters, the CLI and the tests read.

Every experiment in the book runs at one of four scales:

* ``smoke`` -- seconds on one CPU core; what the test-suite runs.
* ``book``  -- what the rendered book shows; CPU, Fashion-MNIST, a narrow ResNet.
* ``gpu``   -- the paper's CIFAR-10 protocol on one GPU, one seed.
* ``paper`` -- the paper's CIFAR-10 protocol in full (all seeds).

Select one by name, or through the environment variable ``FIBOOK_SCALE``; the default is ``book``.
No size is written anywhere else: code that needs a size asks :func:`get_scale`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

SCALE_ENV = "FIBOOK_SCALE"
DEFAULT_SCALE = "book"

# The fibook sigma_w grid (digest of Das et al., section 6): 7 geometric points 0.1 * 25**(i/6).
SIGMA_W_GRID = tuple(round(0.1 * 25 ** (i / 6), 3) for i in range(7))
SIGMA_W_QUICK = (0.1, 0.5, 2.5)


@dataclass(frozen=True)
class DataScale:
    """Which dataset and how many images of each split (None: the whole split)."""

    dataset: str
    n_train: int | None
    n_val: int | None
    n_test: int | None


@dataclass(frozen=True)
class ForgettingScale:
    """Part I sizes: the data, the ResNet-9 width (channels of its first conv; 64 is Myrtle's full net),
    the epochs of a main run, the sigma_w grid and the seeds."""

    data: DataScale
    width: int
    epochs: int
    sigma_w: tuple[float, ...]
    seeds: tuple[int, ...]

    @property
    def images_per_run(self) -> int | None:
        """Training images processed by one main run: epochs x training-set size."""
        if self.data.n_train is None:
            return None
        return self.epochs * self.data.n_train


@dataclass(frozen=True)
class LayerwiseScale:
    """Part III sizes (layer-wise learning rates; the paper's settings at ``gpu``/``paper``).

    ``width``: h of the closed-form figures; ``mc_widths``/``mc_draws``: widths and sampled networks of the
    closed form vs Monte-Carlo check; ``gap_widths``/``gap_draws``: widths and draws of surrogate vs true GD;
    ``grid``: points per axis of the (eta1, eta2) landscape; ``sim_width``: h of the simulated GD curves;
    ``sched_steps``/``sched_draws``: GD steps and sampled problems per scheduler comparison.
    """

    width: int
    mc_widths: tuple[int, ...]
    mc_draws: int
    gap_widths: tuple[int, ...]
    gap_draws: int
    grid: int
    sim_width: int
    sched_steps: int
    sched_draws: int


@dataclass(frozen=True)
class Scale:
    """One named preset: what it is for, where it is meant to run, and the sizes of every Part."""

    name: str
    purpose: str
    device: str
    forgetting: ForgettingScale
    layerwise: LayerwiseScale


_FULL_FASHION = DataScale("fashion_mnist", 50_000, 10_000, 10_000)
_FULL_CIFAR = DataScale("cifar10", 40_000, 10_000, 10_000)

SCALES: dict[str, Scale] = {
    "smoke": Scale(
        name="smoke",
        purpose="tests: every code path in seconds",
        device="cpu",
        forgetting=ForgettingScale(
            data=DataScale("fashion_mnist", 512, 256, 256), width=8, epochs=2,
            sigma_w=(0.1, 2.5), seeds=(0,),
        ),
        layerwise=LayerwiseScale(width=1000, mc_widths=(16,), mc_draws=2000, gap_widths=(16, 32, 64), gap_draws=4,
                                 grid=41, sim_width=32, sched_steps=4, sched_draws=2),
    ),
    "book": Scale(
        name="book",
        purpose="what the rendered book shows (CPU)",
        device="cpu",
        forgetting=ForgettingScale(
            data=DataScale("fashion_mnist", 5_000, 2_000, 3_000), width=16, epochs=60,
            sigma_w=SIGMA_W_GRID, seeds=(0,),
        ),
        layerwise=LayerwiseScale(width=1000, mc_widths=(16, 32), mc_draws=8000, gap_widths=(32, 64, 128, 256, 512),
                                 gap_draws=8, grid=101, sim_width=256, sched_steps=16, sched_draws=8),
    ),
    "gpu": Scale(
        name="gpu",
        purpose="the paper's CIFAR-10 protocol on one GPU, one seed",
        device="cuda",
        forgetting=ForgettingScale(
            data=_FULL_CIFAR, width=64, epochs=300, sigma_w=SIGMA_W_GRID, seeds=(0,),
        ),
        layerwise=LayerwiseScale(width=1000, mc_widths=(16, 24, 32, 64), mc_draws=20000,
                                 gap_widths=(64, 128, 256, 512, 1000), gap_draws=2, grid=200, sim_width=1000,
                                 sched_steps=16, sched_draws=2),
    ),
    "paper": Scale(
        name="paper",
        purpose="the paper's CIFAR-10 protocol in full",
        device="cuda",
        forgetting=ForgettingScale(
            data=_FULL_CIFAR, width=64, epochs=300, sigma_w=SIGMA_W_GRID, seeds=(0, 1, 2),
        ),
        layerwise=LayerwiseScale(width=1000, mc_widths=(16, 24, 32, 64), mc_draws=20000,
                                 gap_widths=(64, 128, 256, 512, 1000), gap_draws=5, grid=200, sim_width=1000,
                                 sched_steps=16, sched_draws=5),
    ),
}

SCALE_NAMES = tuple(SCALES)


def get_scale(name: str | Scale | None = None) -> Scale:
    """Return the preset called ``name``; ``None`` reads ``$FIBOOK_SCALE`` and falls back to ``book``."""
    if isinstance(name, Scale):
        return name
    if name is None:
        name = os.environ.get(SCALE_ENV) or DEFAULT_SCALE
        source = f"${SCALE_ENV}" if os.environ.get(SCALE_ENV) else "default"
    else:
        source = "argument"
    key = str(name).strip().lower()
    if key not in SCALES:
        raise ValueError(f"unknown scale {name!r} (from {source}); choose one of: {', '.join(SCALE_NAMES)}")
    return SCALES[key]


def scale_table() -> list[dict[str, object]]:
    """One row per scale with its Part I sizes, for display (the intro chapter prints this)."""
    rows = []
    for s in SCALES.values():
        f = s.forgetting
        d = f.data

        def size(n: int | None) -> str:
            return "all" if n is None else f"{n:,}"

        rows.append({
            "scale": s.name,
            "purpose": s.purpose,
            "device": s.device,
            "dataset": d.dataset,
            "train / val / test": f"{size(d.n_train)} / {size(d.n_val)} / {size(d.n_test)}",
            "ResNet-9 width": f.width,
            "epochs": f.epochs,
            "σ_w grid": ", ".join(f"{x:g}" for x in f.sigma_w),
            "seeds": len(f.seeds),
            "images per run": f"{f.images_per_run:,}" if f.images_per_run else "",
        })
    return rows
