"""One Part I run as it trains and once it has finished: :class:`RunState` (its history so far, its status, its
divergence) and :class:`RunResult` (what :func:`fibook.forgetting.train.train` returns and a results record holds).

A run is ``diverged`` when an epoch's mean training loss is non-finite or exceeds ``DIVERGENCE_FACTOR`` times
max(initial training loss, ln C): training stops there and the run is recorded; it never raises.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fibook.forgetting import metrics
from fibook.forgetting.config import TrainConfig
from fibook.forgetting.evaluation import Summary, summarize

DIVERGENCE_FACTOR = 1e3


@dataclass
class RunResult:
    """One finished run: its config, status (``ok`` or ``diverged``), per-epoch history and summary; ``resumed``
    lists the parts of it that earlier processes trained, when it was resumed (:mod:`fibook.forgetting.progress`)."""

    config: TrainConfig
    status: str
    history: dict[str, list]
    layer_names: list[str]
    summary: Summary
    wall_seconds: float
    device: str
    diverged_epoch: int | None = None
    resumed: list[dict] = field(default_factory=list)


HISTORY_KEYS = ("epoch", "train_loss", "train_acc", "val_loss", "val_acc", "test_loss", "test_acc", "weight_norm",
                "layer_norms", "init_distance", "init_cosine", "layer_distance", "layer_cosine", "steps", "T_SGD",
                "T_L2", "T_adapt")


@dataclass
class RunState:
    """One run of a population while it trains: its config, its history so far (:data:`HISTORY_KEYS`), its
    status (``ok`` or ``diverged``), and once it has diverged, the epoch and the optimizer steps taken by then.
    ``loss_limit`` is the mean training loss above which it counts as diverged (set once epoch 0 is recorded).
    Its network and optimizer are those of the block of :func:`fibook.forgetting.train.build_blocks` that holds it
    (one block may hold several runs)."""

    config: TrainConfig
    history: dict[str, list] = field(default_factory=lambda: {k: [] for k in HISTORY_KEYS})
    status: str = "ok"
    diverged_epoch: int | None = None
    steps_taken: int | None = None
    loss_limit: float = math.inf

    @property
    def live(self) -> bool:
        """Still training and recorded."""
        return self.status == "ok"

    def set_loss_limit(self, classes: int) -> None:
        """``DIVERGENCE_FACTOR`` times max(the training loss at epoch 0, ln ``classes``)."""
        self.loss_limit = DIVERGENCE_FACTOR * max(self.history["train_loss"][0], math.log(classes))

    def record(self, epoch: int, scores: dict[str, tuple[float, float]], norms: dict[str, float], geometry: dict,
               steps: int, clocks: dict[str, float]) -> None:
        """Append one epoch: (loss, accuracy) per evaluation split, the weight norms by layer with their
        ``total``, the geometry to the initialization (:func:`fibook.forgetting.models.member_init_geometry`),
        and the optimizer steps and clocks up to here."""
        h = self.history
        h["epoch"].append(epoch)
        for name, (loss, acc) in scores.items():
            h[f"{name}_loss"].append(loss)
            h[f"{name}_acc"].append(acc)
        h["weight_norm"].append(norms["total"])
        h["layer_norms"].append([v for name, v in norms.items() if name != "total"])
        h["init_distance"].append(geometry["total_distance"])
        h["init_cosine"].append(geometry["total_cosine"])
        h["layer_distance"].append(geometry["distance"])
        h["layer_cosine"].append(geometry["cosine"])
        h["steps"].append(steps)
        for key, value in clocks.items():
            h[key].append(value)

    def check_divergence(self, epoch: int, mean_loss: float, steps: int) -> None:
        """Mark the run diverged at ``epoch`` (after ``steps`` optimizer steps) when its mean training loss there
        is non-finite or above ``loss_limit``."""
        if self.live and not (math.isfinite(mean_loss) and mean_loss <= self.loss_limit):
            self.status, self.diverged_epoch, self.steps_taken = "diverged", epoch, steps

    def result(self, lrs: list[float], layer_names: list[str], wall_seconds: float, device: str,
               resumed: list[dict]) -> RunResult:
        """The finished run; ``lrs`` are the learning rates of all the population's steps, of which it took the
        first ``steps_taken`` (all of them if it never diverged); ``resumed`` the parts earlier processes trained."""
        c = self.config
        steps = len(lrs) if self.steps_taken is None else self.steps_taken
        clocks = metrics.forgetting_clocks(lrs[:steps], c.batch_size, c.weight_decay)
        return RunResult(config=c, status=self.status, history=self.history, layer_names=layer_names,
                         summary=summarize(self.history, steps, clocks), wall_seconds=wall_seconds, device=device,
                         diverged_epoch=self.diverged_epoch, resumed=resumed)
