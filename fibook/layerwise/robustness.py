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
is not resolved when a step is ``mixed`` (:func:`transition_holds`). Where the paper's statement covers fewer
steps than are checked (the deep nets: equal rates best at step 2), its verdict reads only those
(:func:`claim_holds`).

The width window of the step-2 optimum is where the closed form's split curvature is positive at equal rates
(:func:`step2_window`); its edges are fitted as powers of ``h`` (:func:`fibook.layerwise.claims.log_slope`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fibook.layerwise import simulation as sim
from fibook.layerwise.claims import Slope, log_slope
from fibook.layerwise.closed_forms import best_splits, split_curvature
from fibook.layerwise.scheduler import EVAL_SEED, Setting, diverged_draws, run_schedule

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


def transition_holds(preferences: dict[int, str]) -> str:
    """``yes`` when step 1 prefers ``unequal`` and every later step ``equal``; ``diverged`` when a step diverged,
    else ``not resolved`` when a step is ``mixed``, else ``no``. ``preferences`` maps step -> :func:`preference`."""
    if 1 not in preferences or len(preferences) < 2:
        raise ValueError(f"a transition needs step 1 and a later step, got steps {sorted(preferences)}")
    if "diverged" in preferences.values():
        return "diverged"
    if "mixed" in preferences.values():
        return "not resolved"
    later = [p for step, p in preferences.items() if step > 1]
    return "yes" if preferences[1] == "unequal" and all(p == "equal" for p in later) else "no"


def claim_holds(preferences: dict[int, str], claimed: tuple[int, ...]) -> str:
    """The paper's statement about the steps ``claimed``: :func:`transition_holds` on those steps when they include
    step 1; otherwise (equal rates best at the later steps) ``yes`` when every claimed step prefers ``equal``, with
    ``diverged`` and ``not resolved`` as there."""
    missing = set(claimed) - set(preferences)
    if not claimed or missing:
        raise ValueError(f"claimed steps {claimed} must be among the checked steps {sorted(preferences)}")
    said = {step: preferences[step] for step in claimed}
    if 1 in said:
        return transition_holds(said)
    if "diverged" in said.values():
        return "diverged"
    if "mixed" in said.values():
        return "not resolved"
    return "yes" if all(p == "equal" for p in said.values()) else "no"


@dataclass(frozen=True)
class Case:
    """One robustness setting: what the paper says about it, the setting, the steps checked and the steps the
    paper's statement covers (``claimed``; all checked steps when empty)."""

    name: str
    paper: str
    setting: Setting
    steps: tuple[int, ...]
    claimed: tuple[int, ...] = ()

    @property
    def claim_steps(self) -> tuple[int, ...]:
        return self.claimed or self.steps


def robustness_cases(h: int) -> list[Case]:
    """The settings the paper says its transition survives, at width ``h``, with the paper's budgets in the
    chapters' natural units (``S / h^1.5`` at depth 2: the paper's 27000 and 45000 at h = 1000 are 0.85 and 1.4;
    ``S / sqrt(h)`` deeper: 30…50 at h = 1000 is about 1…1.6). Label noise at SNR 10 and 1 (signal variance /
    noise variance)."""
    two, deep = h**1.5, h**0.5
    return [
        Case("label noise, SNR 10", "holds with label noise", Setting("linear", 2, "gaussian", 0.85 * two, 10.0),
             (1, 2)),
        Case("label noise, SNR 1", "holds with label noise", Setting("linear", 2, "gaussian", 0.85 * two, 1.0),
             (1, 2)),
        Case("Gaussian, S = 0.85 h^1.5", "equal from step 2 on (steps 1, 2, 4, 8 shown)",
             Setting("linear", 2, "gaussian", 0.85 * two), (1, 2, 4, 8)),
        Case("Gaussian, S = 1.4 h^1.5", "equal at step 2 (the paper's 45000 at h = 1000)",
             Setting("linear", 2, "gaussian", 1.4 * two), (1, 2)),
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
    curve = split_curve(case.setting, h, max(case.steps), draws, seed)
    preferences = {step: preference(curve, step) for step in case.steps}
    return CaseResult(case, h, curve, preferences, transition_holds(preferences))


def robustness_plan(sim_width: int, draws: int, wide_width: int, wide_draws: int) -> list[tuple[Case, int, int]]:
    """The (case, width, draws) runs of the robustness table: every :func:`robustness_cases` at ``sim_width`` with
    ``draws`` draws, then the many-step Gaussian case (S = 0.85 h^1.5, steps 1, 2, 4, 8) again at ``wide_width``
    with ``wide_draws`` draws, unless that is the same run."""
    if min(sim_width, draws, wide_width, wide_draws) < 1:
        raise ValueError(f"widths and draws must be positive, got sim_width={sim_width}, draws={draws}, "
                         f"wide_width={wide_width}, wide_draws={wide_draws}")
    plan = [(case, sim_width, draws) for case in robustness_cases(sim_width)]
    if (wide_width, wide_draws) != (sim_width, draws):
        (wide,) = [c for c in robustness_cases(wide_width) if max(c.steps) > 2]
        plan.append((wide, wide_width, wide_draws))
    return plan


def window_fits(depth: int, widths=WINDOW_WIDTHS, points: int = 4000) -> tuple[np.ndarray, Slope, Slope]:
    """The :func:`step2_window` edges of ``depth`` (searched over ``WINDOW_RANGE[depth]``) at each of ``widths``,
    each fitted as a power of ``h`` (:func:`fibook.layerwise.claims.log_slope`): ``(edges, lower fit, upper
    fit)``, ``edges`` (widths, 2)."""
    if depth not in WINDOW_RANGE:
        raise ValueError(f"the step-2 window has a closed form at depths {sorted(WINDOW_RANGE)}, got {depth!r}")
    edges = np.array([step2_window(depth, h, *WINDOW_RANGE[depth], points) for h in widths])
    return edges, log_slope(widths, edges[:, 0]), log_slope(widths, edges[:, 1])
