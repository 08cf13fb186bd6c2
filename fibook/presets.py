"""Size presets: the one table of experiment sizes that chapters, the CLI and the tests read (the grids and
rates of Part I's experiments at each preset are in :mod:`fibook.forgetting.experiments`). In the book, "scale"
means the initialization scale (σ_w in Part I, α in Part II) and nothing else; how large a rerun is, is its preset.

Every experiment in the book runs at one of four presets:

* ``smoke`` -- seconds on one CPU core; what the test-suite runs.
* ``book``  -- what the rendered book shows; CPU, Fashion-MNIST, a narrow ResNet.
* ``gpu``   -- the paper's CIFAR-10 protocol on one GPU, one seed.
* ``paper`` -- the paper's CIFAR-10 protocol in full (all seeds).

An entry point (the command line, a chapter's :func:`fibook.notebook.setup`) turns a name into a :class:`Preset`
once, from its argument or from the environment (:func:`preset_from_environment`: ``$FIBOOK_PRESET``, or the
former ``$FIBOOK_SCALE``; default ``book``); everything below takes the preset (or its name) and never reads the
environment. No size is written anywhere else. A results file's records name their preset in a field called
``scale``, kept so that every committed result still reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

PRESET_ENV = "FIBOOK_PRESET"
FORMER_ENV = "FIBOOK_SCALE"  # the variable's former name, still read when PRESET_ENV is unset
DEFAULT_PRESET = "book"

# The fibook sigma_w grid over the paper's range [0.1, 2.5]: 7 geometric points 0.1 * 25**(i/6).
SIGMA_W_GRID = tuple(round(0.1 * 25 ** (i / 6), 3) for i in range(7))
SIGMA_W_FIVE = tuple(round(0.1 * 25 ** (i / 4), 3) for i in range(5))


@dataclass(frozen=True)
class DataPreset:
    """Which dataset and how many images of each split (None: the whole split)."""

    dataset: str
    n_train: int | None
    n_val: int | None
    n_test: int | None


@dataclass(frozen=True)
class ForgettingPreset:
    """Part I sizes: the data, ``width`` (the channel count of ResNet-9's first conv; 64 is Myrtle's full net;
    CIFAR ResNets use 16 per first stage at every preset), ``epochs`` of a main run, the main ``sigma_w`` grid,
    the ``seeds`` of every run, and the trainer's ``precision`` (fp32 is the reference; bf16 + channels_last is
    2-3x faster on a CPU with AMX and about 10x slower on one without native bf16; ``auto`` is the faster of the
    two on the device a sweep runs on, fixed in each run's config, :func:`fibook.forgetting.devices.auto_precision`).
    The grids and rates of each experiment at the preset are in
    :data:`fibook.forgetting.experiments.GRIDS`."""

    data: DataPreset
    width: int
    epochs: int
    sigma_w: tuple[float, ...]
    seeds: tuple[int, ...]
    precision: str

    @property
    def images_per_run(self) -> int | None:
        """Training images processed by one main run: epochs x training-set size."""
        if self.data.n_train is None:
            return None
        return self.epochs * self.data.n_train


# ---- Part II: initialization shape (Azulay et al. 2021) ------------------------------------------------------
# The paper's Figure 7.1 grid: alpha = logspace(-5, -0.6, 20), shapes s in {0, 0.5, 0.7, 0.9, 0.99}.
SHAPE_ALPHA_LOG10 = (-5.0, -0.6)
SHAPE_SHAPES = (0.0, 0.5, 0.7, 0.9, 0.99)


@dataclass(frozen=True)
class ShapePreset:
    """Part II sizes: the sparse-regression data (d inputs, n_train / n_test examples, an r-sparse teacher,
    label-noise variance), the alpha x s grid of Figure 7.1 (n_alpha log-spaced values in 10**alpha_log10,
    the shapes), data draws averaged (seed 1993 first), grid points re-run with the paper's GD protocol and its
    step cap, frames of the static explorer per slider (alpha, s), and the random small problems
    (n_small x d_small) of the closed-form checks."""

    d: int
    n_train: int
    n_test: int
    sparsity: int
    noise_var: float
    alpha_log10: tuple[float, float]
    n_alpha: int
    shapes: tuple[float, ...]
    n_instances: int
    gd_checks: int
    gd_max_steps: int
    explorer_frames: tuple[int, int]
    n_small: int
    d_small: int


@dataclass(frozen=True)
class LayerwisePreset:
    """Part III sizes (layer-wise learning rates; the paper's settings at ``gpu``/``paper``).

    ``width``: h of the closed-form figures; ``mc_widths``/``mc_draws``: widths and sampled networks of the
    closed form vs Monte-Carlo check; ``gap_widths``/``gap_draws``: widths and draws of surrogate vs true GD;
    ``grid``: points per axis of the (eta1, eta2) landscape; ``sim_width``: h of the simulated GD curves;
    ``sched_width``/``sched_steps``: width and GD steps of the scheduler comparison; ``sched_draws``: sampled
    problems each schedule is evaluated on (the same for every schedule); ``sched_tune_draws``: the separate
    problems its budget is tuned on; ``robust_draws``: sampled problems of each robustness split curve (at
    ``sim_width``); ``wide_width``/``wide_draws``: width and problems of the robustness settings run at the
    paper's width (label noise on orthogonal data, the Gaussian budgets of the official script).
    """

    width: int
    mc_widths: tuple[int, ...]
    mc_draws: int
    gap_widths: tuple[int, ...]
    gap_draws: int
    grid: int
    sim_width: int
    sched_width: int
    sched_steps: int
    sched_draws: int
    sched_tune_draws: int
    robust_draws: int
    wide_width: int
    wide_draws: int


@dataclass(frozen=True)
class Preset:
    """One named preset: what it is for, where it is meant to run, and the sizes of every Part."""

    name: str
    purpose: str
    device: str
    forgetting: ForgettingPreset
    shape: ShapePreset
    layerwise: LayerwisePreset
    # seconds one chapter cell may run when `reproduce` executes the book at this preset; a longer cell counts as
    # hung (a kernel that lost its reply waits for ever) and fails its chapter
    cell_timeout: int


_FULL_FASHION = DataPreset("fashion_mnist", 50_000, 10_000, 10_000)
_FULL_CIFAR = DataPreset("cifar10", 40_000, 10_000, 10_000)
_GPU = Preset(
    name="gpu",
    purpose="the paper's CIFAR-10 protocol on one GPU, one seed",
    device="cuda",
    forgetting=ForgettingPreset(data=_FULL_CIFAR, width=64, epochs=300, sigma_w=SIGMA_W_GRID, seeds=(0,),
                               precision="auto"),
    shape=ShapePreset(
        d=1000, n_train=100, n_test=2000, sparsity=5, noise_var=0.01, alpha_log10=SHAPE_ALPHA_LOG10, n_alpha=20,
        shapes=SHAPE_SHAPES, n_instances=5, gd_checks=3, gd_max_steps=10_000_000, explorer_frames=(9, 5),
        n_small=10, d_small=30,
    ),
    layerwise=LayerwisePreset(width=1000, mc_widths=(16, 24, 32, 64), mc_draws=20000,
                             gap_widths=(64, 128, 256, 362, 512, 724, 1000), gap_draws=2, grid=200, sim_width=1000,
                             sched_width=256, sched_steps=16, sched_draws=40, sched_tune_draws=10,
                             robust_draws=5, wide_width=1000, wide_draws=5),
    cell_timeout=3 * 3600,  # a GPU cell that plots many results files
)

PRESETS: dict[str, Preset] = {
    "smoke": Preset(
        name="smoke",
        purpose="tests: every code path in seconds",
        device="cpu",
        forgetting=ForgettingPreset(data=DataPreset("fashion_mnist", 512, 256, 256), width=8, epochs=2,
                                   sigma_w=(0.1, 2.5), seeds=(0,), precision="fp32"),
        shape=ShapePreset(
            d=100, n_train=30, n_test=200, sparsity=5, noise_var=0.01, alpha_log10=SHAPE_ALPHA_LOG10, n_alpha=6,
            shapes=(0.0, 0.9), n_instances=1, gd_checks=1, gd_max_steps=20_000, explorer_frames=(3, 2),
            n_small=10, d_small=30,
        ),
        layerwise=LayerwisePreset(width=1000, mc_widths=(16,), mc_draws=2000, gap_widths=(16, 24, 32, 48, 64),
                                 gap_draws=4,
                                 grid=41, sim_width=32, sched_width=16, sched_steps=4, sched_draws=3,
                                 sched_tune_draws=2, robust_draws=2, wide_width=48, wide_draws=1),
        cell_timeout=600,  # the whole smoke reproduction, sweeps included, takes about 4 min on one core
    ),
    "book": Preset(
        name="book",
        purpose="what the rendered book shows (CPU)",
        device="cpu",
        forgetting=ForgettingPreset(data=DataPreset("fashion_mnist", 5_000, 2_000, 3_000), width=16, epochs=40,
                                   sigma_w=SIGMA_W_FIVE, seeds=(0,), precision="bf16"),
        shape=ShapePreset(
            d=1000, n_train=100, n_test=2000, sparsity=5, noise_var=0.01, alpha_log10=SHAPE_ALPHA_LOG10, n_alpha=20,
            shapes=SHAPE_SHAPES, n_instances=1, gd_checks=3, gd_max_steps=400_000, explorer_frames=(7, 5),
            n_small=10, d_small=30,
        ),
        layerwise=LayerwisePreset(width=1000, mc_widths=(16, 32), mc_draws=8000,
                                 gap_widths=(32, 64, 128, 256, 362, 512, 724),
                                 gap_draws=4, grid=101, sim_width=256, sched_width=64, sched_steps=16,
                                 sched_draws=24, sched_tune_draws=6, robust_draws=5, wide_width=1000,
                                 wide_draws=5),
        cell_timeout=3600,  # the slowest book cell (unequal_equal's robustness curves, from scratch): 13 min
    ),
    "gpu": _GPU,
    "paper": replace(
        _GPU, name="paper", purpose="the paper's CIFAR-10 protocol in full",
        forgetting=replace(_GPU.forgetting, seeds=(0, 1, 2)),
        shape=replace(_GPU.shape, n_instances=20, gd_checks=5),
        layerwise=replace(_GPU.layerwise, gap_draws=5, sched_draws=100, sched_tune_draws=20, robust_draws=20,
                          wide_draws=20),
    ),
}

PRESET_NAMES = tuple(PRESETS)


def get_preset(name: str | Preset) -> Preset:
    """The preset called ``name`` (``name`` itself when it is one); an unknown name is a ValueError that lists
    the presets."""
    return name if isinstance(name, Preset) else _named(name, "argument")


def _named(name: str, source: str) -> Preset:
    key = str(name).strip().lower()
    if key not in PRESETS:
        raise ValueError(f"unknown preset {name!r} (from {source}); choose one of: {', '.join(PRESET_NAMES)}")
    return PRESETS[key]


def preset_from_environment() -> Preset:
    """The preset an entry point runs when none is named: ``$FIBOOK_PRESET``, else the former ``$FIBOOK_SCALE``,
    else ``book``. A blank variable counts as unset (``FIBOOK_PRESET= make test`` runs at ``book``)."""
    for var in (PRESET_ENV, FORMER_ENV):
        value = os.environ.get(var, "").strip()
        if value:
            return _named(value, f"${var}")
    return PRESETS[DEFAULT_PRESET]


def preset_table() -> list[dict[str, object]]:
    """One row per preset with its Part I sizes, for display (the intro chapter prints this)."""
    rows = []
    for s in PRESETS.values():
        f = s.forgetting
        d = f.data

        def size(n: int | None) -> str:
            return "all" if n is None else f"{n:,}"

        rows.append({
            "preset": s.name,
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


def parts_table() -> list[dict[str, object]]:
    """One row per preset with the sizes of Parts II and III, for display."""
    return [{
        "preset": s.name,
        "Part II: d, N": f"{s.shape.d:,}, {s.shape.n_train}",
        "Part II: α × s grid": f"{s.shape.n_alpha} × {len(s.shape.shapes)}",
        "Part II: data draws": s.shape.n_instances,
        "Part III: Monte-Carlo widths × draws":
            f"{', '.join(map(str, s.layerwise.mc_widths))} × {s.layerwise.mc_draws:,}",
        "Part III: (η₁, η₂) grid": f"{s.layerwise.grid} × {s.layerwise.grid}",
        "Part III: scheduler h, steps × draws (tuning)": f"{s.layerwise.sched_width}, {s.layerwise.sched_steps} × "
                                                          f"{s.layerwise.sched_draws} ({s.layerwise.sched_tune_draws})",
    } for s in PRESETS.values()]
