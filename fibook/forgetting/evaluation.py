"""Scoring a Part I run: at each recorded epoch, the eval-mode cross-entropy and accuracy of its networks on the
train, validation and test splits (:func:`evaluate`, in batches of :data:`EVAL_BATCH`), and at its end the
:class:`Summary` its history comes to (:func:`summarize`: the epoch selected by validation loss with its
accuracies, the interpolation epoch, the repair gap, the weight norms and the clocks). Epoch 0 is evaluated on
:func:`recalibrated_copy` of the model, whose BatchNorm statistics are estimated on the training split (freshly
reset running statistics would make the untrained network's eval-mode outputs scale like sigma_w^depth).

Serves the trainer (:mod:`fibook.forgetting.train`), and through the ``summary`` of every results record, every Part I
chapter that shows trained runs; "Data and protocol" (``data_protocol``) states the validation-selected predictor.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from fibook.forgetting import metrics
from fibook.forgetting.batches import Batches
from fibook.forgetting.devices import forward_logits

EVAL_BATCH = 250  # measured on one CPU core: twice as fast as 1000 for the width-16 ResNet-9


@dataclass(frozen=True)
class Summary:
    """What a run's history comes to (accuracies are fractions, the repair gap in percentage points):
    ``selected_epoch``, the epoch of lowest validation cross-entropy (None if the run diverged before any), with
    its ``selected_test_acc`` and ``selected_val_acc``; ``final_train_acc`` and ``final_test_acc`` at the last
    recorded epoch; ``tau_interp``, the first epoch with train accuracy >= 99.5 % (or None); ``repair_gap``;
    ``init_weight_norm`` and ``final_weight_norm``; ``clocks`` {T_SGD, T_L2, T_adapt} and ``steps`` over the
    optimizer steps taken."""

    selected_epoch: int | None
    selected_test_acc: float | None
    selected_val_acc: float | None
    final_train_acc: float
    final_test_acc: float
    tau_interp: int | None
    repair_gap: float | None
    init_weight_norm: float
    final_weight_norm: float
    clocks: dict[str, float]
    steps: int

    def to_dict(self) -> dict:
        return asdict(self)


@torch.no_grad()
def evaluate(net, k: int, batches: Batches, bf16: bool) -> list[tuple[float, float]]:
    """(mean cross-entropy, accuracy) of each of the ``k`` models of ``net`` in eval mode over all of ``batches``;
    every model sees the same images."""
    net.eval()
    loss_sum = torch.zeros(k, dtype=torch.float64, device=batches.device)
    correct = torch.zeros(k, dtype=torch.int64, device=batches.device)
    n = 0
    for xb, yb in batches.epoch(0):
        logits = forward_logits(net, xb.repeat(1, k, 1, 1), bf16)  # (B, k, classes)
        targets = yb[:, None].expand(-1, k)
        loss_sum += F.cross_entropy(logits.permute(0, 2, 1), targets, reduction="none").sum(0).double()
        correct += (logits.argmax(2) == targets).sum(0)
        n += len(yb)
    return [(float(loss) / n, int(c) / n) for loss, c in zip(loss_sum, correct, strict=True)]


@torch.no_grad()
def recalibrated_copy(net, k: int, batches: Batches, bf16: bool):
    """A copy of ``net`` whose BatchNorm running statistics are the exact averages over ``batches``
    (cumulative averaging: BN momentum None), for evaluating networks that have not been trained yet."""
    twin = copy.deepcopy(net)
    for m in twin.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    twin.train()
    for xb, _ in batches.epoch(0):
        forward_logits(twin, xb.repeat(1, k, 1, 1), bf16)
    return twin


def summarize(history: dict[str, list], steps: int, clocks: dict[str, float]) -> Summary:
    """The run's :class:`Summary` from its history; ``steps``/``clocks`` are the optimizer steps taken and the
    clocks over them (for a diverged run these include the epoch it diverged in, which has no history entry; the
    clocks of a recorded epoch are in the history)."""
    sel = metrics.selected_epoch(history["val_loss"])
    tau = metrics.interpolation_epoch(history["train_acc"])
    return Summary(
        selected_epoch=sel,
        selected_test_acc=None if sel is None else history["test_acc"][sel],
        selected_val_acc=None if sel is None else history["val_acc"][sel],
        final_train_acc=history["train_acc"][-1],
        final_test_acc=history["test_acc"][-1],
        tau_interp=tau,
        repair_gap=metrics.repair_gap(history["val_acc"], tau),
        init_weight_norm=history["weight_norm"][0],
        final_weight_norm=history["weight_norm"][-1],
        clocks=clocks,
        steps=steps,
    )
