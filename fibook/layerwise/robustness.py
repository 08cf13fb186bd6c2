"""Part III: where the paper's transition (unequal rates best after one step, equal rates from the second on)
holds beyond the orthogonal closed forms, on literal gradient descent (chapter "Unequal first, equal next",
sections "Robustness" and "The width windows").

A **split curve** trains the same sampled problems once per split of a fixed budget ``S``: the first trained
layer gets ``eta_1 = phi S`` and the ``k − 1`` others ``(1 − phi) S / (k − 1)`` each, for ``phi = i / 20``,
``i = 1..19`` (:func:`split_curve`; the ``fixed`` schedule of :mod:`fibook.layerwise.scheduler`, so label noise,
Gaussian init and the ReLU net come with it). At each step the **preferred split** of the mean curve is
``equal`` when its best split (:func:`fibook.layerwise.closed_forms.best_splits`) is the one grid point nearest
the all-equal ``phi = 1/k``, else ``unequal``; it is ``mixed`` when the single draws do not all prefer what the
mean prefers, and ``diverged`` when any draw had diverged by then at any split (:func:`preference`). The
transition holds in a setting when step 1 prefers ``unequal`` and every later step checked prefers ``equal``; it
is contradicted ("no") when step 1 prefers ``equal`` or a later step ``unequal`` in every draw, whatever the other
steps show; otherwise it is not resolved when a step is ``mixed`` or ``diverged`` (:func:`transition_holds`). Where
the paper's statement covers fewer steps than are checked (the deep nets: equal rates best at step 2), its
verdict reads only those (:func:`claim_holds`).

Each case runs either at the scale's simulation width (``sim_width``, ``robust_draws`` draws) or at the paper's
width (``wide_width``, ``wide_draws``; h = 1000 at the ``book`` scale): a case in the paper's own setting (its
init, data, noise and budget, at its width) where the paper states what happens decides a verdict against the
paper; a fibook variant (other data, or another width), or the paper's setting where its claim is not public (the
Gaussian budget 45000), gives a result of fibook's own (:attr:`Case.own`). The paper's depth-2 budgets are its
``lr_max`` at d = h = n = 1000, carried to width ``h`` as ``S = (lr_max / 1000^1.5) h^1.5``
(:func:`paper_budget`), so that at h = 1000 a case runs at exactly the official ``lr_max``.

The split curves of the robustness table are the chapter's one heavy computation (about 13 minutes on one core at
the ``book`` preset); :func:`stored_runs` keeps them in a results file, ``data/results/layerwise_robustness/
PRESET.json`` (:func:`store_path`), with the provenance of each curve, computes only the curves it lacks and
resumes an interrupted run with the curves already written.

The width window of the step-2 optimum is where the closed form's split curvature is positive at equal rates
(:func:`step2_window`); its edges are fitted as powers of ``h`` (:func:`fibook.stats.log_slope`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fibook import stats
from fibook.layerwise import simulation as sim
from fibook.layerwise.closed_forms import best_splits, split_curvature
from fibook.layerwise.scheduler import EVAL_SEED, Setting, diverged_draws, run_schedule
from fibook.paths import results_dir
from fibook.provenance import provenance

GRID_POINTS = 19  # phi = i / 20, i = 1..19: the paper's split grid
WINDOW_WIDTHS = tuple(2**k for k in range(8, 15))  # h = 256 ... 16384, where the window's edges are fitted
WINDOW_RANGE = {2: (1.0, 1e9), 3: (1e-3, 1e6)}  # per-layer rates searched; wider than the window at every width


@dataclass(frozen=True)
class SplitCurve:
    """Losses along a budget's split grid: ``splits`` (points,) the first layer's fractions ``phi``; ``test`` and
    ``train`` (points, steps + 1, draws) per-draw test and training losses at steps 0..T; ``layers`` the number
    ``k`` of trained layers."""

    setting: Setting
    splits: np.ndarray
    test: np.ndarray
    train: np.ndarray
    layers: int

    @property
    def equal(self) -> float:
        """The grid point nearest the all-equal split ``phi = 1/k`` (the smaller one on a tie)."""
        return float(self.splits[np.argmin(np.abs(self.splits - 1 / self.layers))])

    def diverged(self, step: int) -> np.ndarray:
        """(points, draws): which draws diverged by ``step`` at which split
        (:func:`fibook.layerwise.scheduler.diverged_draws` on steps 0..step)."""
        return np.stack([diverged_draws(train[: step + 1]) for train in self.train])

    def mean(self, step: int) -> np.ndarray:
        """Mean test loss over draws after ``step`` steps, per split (NaN where a draw diverged by then)."""
        return np.where(self.diverged(step).any(axis=-1), np.nan, self.test[:, step].mean(axis=-1))


def split_curve(setting: Setting, h: int, steps: int, draws: int, seed: int = EVAL_SEED,
                points: int = GRID_POINTS) -> SplitCurve:
    """Literal GD on ``draws`` problems of ``setting`` at width ``h`` for ``steps`` steps, once per split
    ``phi = i / (points + 1)`` of the budget ``setting.budget``; every split starts from the same problems."""
    if int(points) != points or points < 3 or points % 2 == 0:
        raise ValueError(f"a split grid has an odd number (>= 3) of points, got {points!r}")
    splits = np.arange(1, points + 1) / (points + 1)
    runs = [run_schedule("fixed", setting.budget, steps, setting, h, draws, seed, float(phi)) for phi in splits]
    return SplitCurve(setting, splits, np.stack([r.test for r in runs]), np.stack([r.train for r in runs]),
                      sim.trained_layers(setting.depth))


def preferred(splits: np.ndarray, loss: np.ndarray, equal: float) -> str:
    """``equal`` when the best split of ``loss`` along ``splits`` (ties within
    :data:`fibook.layerwise.closed_forms.TIE_RTOL`) is the single point ``equal``, else ``unequal``."""
    return "equal" if best_splits(splits, loss, 1.0) == (equal,) else "unequal"


def preference(curve: SplitCurve, step: int) -> str:
    """The split ``curve`` prefers after ``step`` steps: ``diverged`` when any draw had diverged by then at any
    split; else the mean curve's :func:`preferred` when every single draw's curve prefers the same, and ``mixed``
    when the draws disagree (the preference is within the noise of the sampled problems)."""
    if curve.diverged(step).any():
        return "diverged"
    want = preferred(curve.splits, curve.mean(step), curve.equal)
    return want if draws_agreeing(curve, step, want) == curve.test.shape[-1] else "mixed"


def draws_agreeing(curve: SplitCurve, step: int, want: str) -> int:
    """In how many single draws the curve after ``step`` steps prefers ``want`` (:func:`preferred`)."""
    return sum(preferred(curve.splits, curve.test[:, step, d], curve.equal) == want
               for d in range(curve.test.shape[-1]))


def _contradicted(preferences: dict[int, str]) -> bool:
    """A step prefers the opposite of the transition in every draw: step 1 ``equal``, or a later step
    ``unequal``."""
    return any(p == ("equal" if step == 1 else "unequal") for step, p in preferences.items())


def _undecided(preferences: dict[int, str]) -> str | None:
    """``diverged`` when a step diverged, else ``not resolved`` when a step is ``mixed``, else None."""
    if "diverged" in preferences.values():
        return "diverged"
    return "not resolved" if "mixed" in preferences.values() else None


def transition_holds(preferences: dict[int, str]) -> str:
    """``no`` when a step contradicts the transition in every draw (step 1 prefers ``equal``, or a later step
    ``unequal``), whatever the other steps show; else ``diverged`` when a step diverged, ``not resolved`` when a
    step is ``mixed``, and ``yes`` (step 1 prefers ``unequal``, every later step ``equal``) otherwise.
    ``preferences`` maps step -> :func:`preference`."""
    if 1 not in preferences or len(preferences) < 2:
        raise ValueError(f"a transition needs step 1 and a later step, got steps {sorted(preferences)}")
    if _contradicted(preferences):
        return "no"
    return _undecided(preferences) or "yes"


def claim_holds(preferences: dict[int, str], claimed: tuple[int, ...]) -> str:
    """The paper's statement about the steps ``claimed``: :func:`transition_holds` on those steps when they include
    step 1; otherwise (equal rates best at the later steps) ``no`` when a claimed step prefers ``unequal`` in every
    draw, else ``diverged`` and ``not resolved`` as there, else ``yes`` (every claimed step prefers ``equal``)."""
    missing = set(claimed) - set(preferences)
    if not claimed or missing:
        raise ValueError(f"claimed steps {claimed} must be among the checked steps {sorted(preferences)}")
    said = {step: preferences[step] for step in claimed}
    if 1 in said:
        return transition_holds(said)
    if _contradicted(said):
        return "no"
    return _undecided(said) or "yes"


PAPER_WIDTH = 1000  # d = h = n of every official 2-NN script
PAPER_LR_MAX = {"low": 27000, "high": 45000}  # the official lr_max sweep's first point, and its 45000 (1.42 h^1.5)


def paper_budget(lr_max: float, h: float) -> float:
    """The official 2-NN budget ``lr_max`` (``eta_1 + eta_2`` at d = h = n = 1000; ``2-NN-*-experiment.py``
    ``--lr-max-start 27000``, step 2000) in the chapters' natural units carried to width ``h``:
    ``S = (lr_max / 1000^1.5) h^1.5``, exactly ``lr_max`` at h = 1000 (27000 is 0.8538 h^1.5, 45000 is
    1.4230 h^1.5)."""
    return lr_max / PAPER_WIDTH**1.5 * h**1.5


@dataclass(frozen=True)
class Case:
    """One robustness setting: what the paper says about it, the setting, the steps checked and the steps the
    paper's statement covers (``claimed``; all checked steps when empty). ``width`` is where it runs: ``"sim"``
    (the scale's ``sim_width`` with ``robust_draws`` draws) or ``"paper"`` (``wide_width`` with ``wide_draws``,
    the paper's h = 1000 at the ``book`` scale). ``own``: a row that tests no statement of the paper, a fibook
    variant of its setting (other data or another width) or its setting where what it claims is not public; the
    row is a result of fibook's own."""

    name: str
    paper: str
    setting: Setting
    steps: tuple[int, ...]
    claimed: tuple[int, ...] = ()
    width: str = "sim"
    own: bool = False

    @property
    def claim_steps(self) -> tuple[int, ...]:
        return self.claimed or self.steps


NOISE_PAPER = ("holds with label noise: the official orthogonal 2-NN at ρ = 0.001 (SNR 1), d = h = n = 1000, "
               "lr_max 27000…63000, steps 1, 2, 5 seeds (2-NN-Orthogonal-experiment.py:97-98, outputs rho_0.001)")
VARIANT = "none: a Gaussian-data variant (not the paper's setting; its noisy runs are orthogonal)"
GAUSS_LOW_PAPER = ("equal from step 2 on: the official Gaussian 2-NN (d = h = n = 1000, 5 seeds) plots steps 1, 2, "
                   "4, 8 at lr_max 27000…63000 (2-NN-Gaussian-experiment.py:30-35). The summary's \"up to 512 "
                   "steps\" and the 16-step heatmap at small rates are not tested here")
GAUSS_HIGH_PAPER = ("not public: the paper's Gaussian figure includes 45000 with no equal-rate marker; Corollary "
                    "5.4(b), as a secondary summary gives it (equal rates a step-2 local minimum for S = 2h^α, "
                    "1 < α ≤ 3/2, once h is large), is asymptotic in h, and the orthogonal closed forms put a "
                    "step-2 minimum here")


def robustness_cases(h: int) -> list[Case]:
    """The settings the paper says its transition survives, at width ``h``, with the paper's budgets in the
    chapters' natural units (depth 2: :func:`paper_budget`, the official 27000 and 45000 at h = 1000;
    ``S / sqrt(h)`` deeper: 30…50 at h = 1000 is about 1…1.6). Label SNR = signal variance / noise variance
    (:func:`fibook.layerwise.simulation.signal_variance`). Cases with ``width="paper"`` are run at the paper's
    width by :func:`robustness_plan`; the others at the simulation width, where the depth-2 Gaussian cases are
    fibook's variants (``own``) of the paper-width runs."""
    low, high, deep = paper_budget(PAPER_LR_MAX["low"], h), paper_budget(PAPER_LR_MAX["high"], h), h**0.5
    return [
        Case("label noise SNR 10, Gaussian data (variant)", VARIANT, Setting("linear", 2, "gaussian", low, 10.0),
             (1, 2), own=True),
        Case("label noise SNR 1, Gaussian data (variant)", VARIANT, Setting("linear", 2, "gaussian", low, 1.0),
             (1, 2), own=True),
        Case("label noise SNR 1, orthogonal (the paper's setting)", NOISE_PAPER,
             Setting("linear", 2, "orthogonal", low, 1.0), (1, 2), width="paper"),
        Case("Gaussian, S = 0.854 h^1.5, steps 1–8 (variant at the simulation width)",
             "none: the paper's Gaussian setting at another width", Setting("linear", 2, "gaussian", low),
             (1, 2, 4, 8), own=True),
        Case("Gaussian, S = 0.854 h^1.5 (the paper's 27000), steps 1–8", GAUSS_LOW_PAPER,
             Setting("linear", 2, "gaussian", low), (1, 2, 4, 8), width="paper"),
        Case("Gaussian, S = 1.42 h^1.5 (variant at the simulation width)",
             "none: the paper's Gaussian setting at another width", Setting("linear", 2, "gaussian", high), (1, 2),
             own=True),
        Case("Gaussian, S = 1.42 h^1.5 (the paper's 45000)", GAUSS_HIGH_PAPER,
             Setting("linear", 2, "gaussian", high), (1, 2), width="paper", own=True),
        Case("3-layer ReLU, S = √h", "holds beyond linear nets (secondary summaries; no setting public)",
             Setting("relu", 3, "gaussian", deep), (1, 2)),
        Case("4-layer linear, S = 1.25 √h", "all-equal best at step 2 (step 1 not stated)",
             Setting("linear", 4, "orthogonal", 1.25 * deep), (1, 2), (2,)),
        Case("8-layer linear, S = 1.25 √h", "all-equal best at step 2 (step 1 not stated)",
             Setting("linear", 8, "orthogonal", 1.25 * deep), (1, 2), (2,)),
    ]


def step2_window(depth: int, h: float, lo: float, hi: float, points: int = 4000) -> tuple[float, float]:
    """The per-layer equal rates ``eta`` (log grid on ``[lo, hi]``) where equal rates are a step-2 minimum of the
    closed form (:func:`fibook.layerwise.closed_forms.split_curvature` of the budget ``2 eta`` positive): its
    smallest and largest point. Raises when the window is empty, not one interval, or touches an end of the grid
    (the grid would have cut it)."""
    eta = np.geomspace(lo, hi, points)
    inside = split_curvature(depth, h, 2 * eta, 2) > 0
    if not inside.any():
        raise ValueError(f"equal rates are nowhere a step-2 minimum for depth {depth}, h = {h} on [{lo}, {hi}]")
    if inside[0] or inside[-1]:
        raise ValueError(f"the step-2 window of depth {depth}, h = {h} reaches an end of [{lo}, {hi}]; widen it")
    if np.count_nonzero(np.diff(inside.astype(int))) != 2:
        raise ValueError(f"the step-2 window of depth {depth}, h = {h} on [{lo}, {hi}] is not one interval")
    return float(eta[inside].min()), float(eta[inside].max())


@dataclass(frozen=True)
class CaseResult:
    """A :class:`Case` run at width ``h``: its split curve, the :func:`preference` per checked step and the
    :func:`transition_holds` verdict over all of them; ``claim`` is :func:`claim_holds` on the paper's steps."""

    case: Case
    h: int
    curve: SplitCurve
    preferences: dict[int, str]
    transition: str

    @property
    def draws(self) -> int:
        return self.curve.test.shape[-1]

    @property
    def claim(self) -> str:
        return claim_holds(self.preferences, self.case.claim_steps)

    def step_text(self, step: int) -> str:
        """``equal (φ = 0.50, 5/5 draws)``: the preference after ``step`` steps, the mean curve's best split(s)
        and how many single draws prefer what the mean prefers; a diverged step counts its diverged runs."""
        want = self.preferences[step]
        if want == "diverged":
            return f"diverged ({int(self.curve.diverged(step).sum())} of {self.curve.diverged(step).size} runs)"
        best = " and ".join(f"{f:.2f}" for f in best_splits(self.curve.splits, self.curve.mean(step), 1.0))
        mean = preferred(self.curve.splits, self.curve.mean(step), self.curve.equal)
        return f"{want} (φ = {best}, {draws_agreeing(self.curve, step, mean)}/{self.draws} draws)"


def run_case(case: Case, h: int, draws: int, seed: int = EVAL_SEED) -> CaseResult:
    """:func:`split_curve` of ``case`` for its largest checked step, with its preferences and transition."""
    return case_result(case, h, split_curve(case.setting, h, max(case.steps), draws, seed))


def case_result(case: Case, h: int, curve: SplitCurve) -> CaseResult:
    """``case`` read off its split ``curve`` at width ``h``: the :func:`preference` of every checked step and the
    :func:`transition_holds` verdict over them."""
    preferences = {step: preference(curve, step) for step in case.steps}
    return CaseResult(case, h, curve, preferences, transition_holds(preferences))


STORE = "layerwise_robustness"  # results_dir() / STORE / f"{preset}.json"


def store_path(preset: str) -> Path:
    """The results file of the robustness split curves at ``preset``."""
    return results_dir() / STORE / f"{preset}.json"


def run_key(case: Case, h: int, draws: int, seed: int = EVAL_SEED) -> str:
    """What a stored split curve was computed from: every field of the case's setting (the budget to full
    precision), the width, draws, steps, seed and split grid. A curve is reused only under the same key, so a
    changed setting is computed again."""
    return json.dumps({"setting": dataclasses.asdict(case.setting), "h": int(h), "draws": int(draws),
                       "steps": max(case.steps), "seed": int(seed), "points": GRID_POINTS}, sort_keys=True)


def _read_store(path: Path) -> dict[str, dict]:
    if not path.is_file():
        return {}
    try:
        curves = json.loads(path.read_text())["curves"]
        return {c["key"]: c for c in curves}
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a robustness results file ({error}); move it away and rerun to compute "
                         f"its curves again") from None


def _write_store(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"curves": records}, indent=1) + "\n")
    os.replace(tmp, path)


def stored_runs(plan: list[tuple[Case, int, int]], path: Path, seed: int = EVAL_SEED) -> list[CaseResult]:
    """:func:`run_case` for every ``(case, width, draws)`` of ``plan``, each split curve read from the results file
    ``path`` when it holds one under the same :func:`run_key`, and computed otherwise. The file is rewritten
    (atomically) after each computed curve, so an interrupted run keeps what it finished; it ends holding the plan's
    curves only, each with the :func:`fibook.provenance.provenance` of the code that computed it. Stored losses are
    float64 written exactly (JSON's shortest round-trip form, NaN and Infinity for diverged runs)."""
    stored = _read_store(path)
    keys = [run_key(case, h, draws, seed) for case, h, draws in plan]
    results = []
    for (case, h, draws), key in zip(plan, keys, strict=True):
        record = stored.get(key)
        if record is None:
            curve = split_curve(case.setting, h, max(case.steps), draws, seed)
            record = {"key": key, "case": case.name, "splits": curve.splits.tolist(), "test": curve.test.tolist(),
                      "train": curve.train.tolist(), "provenance": provenance()}
            stored[key] = record
            _write_store(path, list(stored.values()))
        curve = SplitCurve(case.setting, np.array(record["splits"], dtype=float),
                           np.array(record["test"], dtype=float), np.array(record["train"], dtype=float),
                           sim.trained_layers(case.setting.depth))
        results.append(case_result(case, h, curve))
    if list(stored) != keys:  # curves of an older plan: dropped, in the plan's order
        _write_store(path, [stored[k] for k in keys])
    return results


def robustness_plan(sim_width: int, draws: int, wide_width: int, wide_draws: int) -> list[tuple[Case, int, int]]:
    """The (case, width, draws) runs of the robustness table, in the order of :func:`robustness_cases`: a case with
    ``width="sim"`` at ``sim_width`` with ``draws`` draws, one with ``width="paper"`` at ``wide_width`` with
    ``wide_draws``. A variant at the simulation width whose run would repeat a paper-width run exactly (the same
    setting, width and draws, as when ``sim_width == wide_width``) is left out."""
    if min(sim_width, draws, wide_width, wide_draws) < 1:
        raise ValueError(f"widths and draws must be positive, got sim_width={sim_width}, draws={draws}, "
                         f"wide_width={wide_width}, wide_draws={wide_draws}")
    at = {"sim": (sim_width, draws), "paper": (wide_width, wide_draws)}
    cases = {where: robustness_cases(width) for where, (width, _) in at.items()}
    plan = [(case, *at[case.width]) for case in cases["sim"] if case.width == "sim"]
    plan += [(case, *at[case.width]) for case in cases["paper"] if case.width == "paper"]
    paper_runs = {(c.setting, h, d) for c, h, d in plan if c.width == "paper"}
    plan = [(c, h, d) for c, h, d in plan if not (c.width == "sim" and c.own and (c.setting, h, d) in paper_runs)]
    order = {c.name: i for i, c in enumerate(robustness_cases(sim_width))}
    return sorted(plan, key=lambda run: order[run[0].name])


def window_fits(depth: int, widths=WINDOW_WIDTHS, points: int = 4000) -> tuple[np.ndarray, stats.Slope, stats.Slope]:
    """The :func:`step2_window` edges of ``depth`` (searched over ``WINDOW_RANGE[depth]``) at each of ``widths``,
    each fitted as a power of ``h`` (:func:`fibook.stats.log_slope`): ``(edges, lower fit, upper
    fit)``, ``edges`` (widths, 2)."""
    if depth not in WINDOW_RANGE:
        raise ValueError(f"the step-2 window has a closed form at depths {sorted(WINDOW_RANGE)}, got {depth!r}")
    edges = np.array([step2_window(depth, h, *WINDOW_RANGE[depth], points) for h in widths])
    return edges, stats.log_slope(widths, edges[:, 0]), stats.log_slope(widths, edges[:, 1])
