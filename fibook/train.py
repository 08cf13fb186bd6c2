"""Training one Part I run: a BatchNorm ResNet at one sigma_w, recording every quantity of the forgetting paper.

``train(config)`` returns a :class:`RunResult` whose history holds, for epochs 0 (the initialization) to E:
train loss/accuracy (eval mode, no augmentation), validation and test loss/accuracy, the Frobenius norm of every
Conv2d/Linear weight and their total, and the cumulative clocks sum eta, sum eta^2 / b and lambda sum eta over the
optimizer steps taken. Epoch 0 is evaluated on a copy of the model whose BatchNorm statistics were estimated on
the training split (freshly reset running statistics would make the untrained network's eval-mode outputs scale
like sigma_w^depth); the training run itself is untouched by this.

A run is ``diverged`` when an epoch's mean training loss is non-finite or exceeds ``DIVERGENCE_FACTOR`` times
max(initial training loss, ln C): training stops there and the run is recorded; it never raises.
"""

from __future__ import annotations

import copy
import functools
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F

from fibook import metrics
from fibook.batches import Batches
from fibook.data import DatasetSplits, load_dataset
from fibook.models import build_model, init_sigma_w_, weight_norms
from fibook.optimizers import make_optimizer

EVAL_BATCH = 1000
DIVERGENCE_FACTOR = 1e3
PRECISIONS = ("auto", "fp32", "bf16")


def constant_schedule(step: int, total_steps: int) -> float:
    """eta_k = eta: no warm-up, no decay (the forgetting protocol)."""
    return 1.0


def cosine_schedule(step: int, total_steps: int) -> float:
    """eta_k = eta (1 + cos(pi k / K)) / 2."""
    return 0.5 * (1.0 + math.cos(math.pi * step / max(total_steps, 1)))


SCHEDULES: dict[str, Callable[[int, int], float]] = {"constant": constant_schedule, "cosine": cosine_schedule}


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a run. Sizes ``n_train``/``n_val``/``n_test`` take the stratified first N images
    of each split (None: the whole split); ``precision`` ``auto`` means bf16 autocast + channels_last on CUDA and
    fp32 on the CPU; ``options`` go to the optimizer (e.g. ``{"adam_lr": 1e-3}`` for Muon)."""

    dataset: str = "fashion_mnist"
    arch: str = "resnet9"
    width: int = 16
    sigma_w: float = 1.0
    optimizer: str = "sgd"
    lr: float = 1e-3
    weight_decay: float = 0.0
    batch_size: int = 128
    epochs: int = 10
    seed: int = 0
    n_train: int | None = None
    n_val: int | None = None
    n_test: int | None = None
    augment: str = "none"
    schedule: str = "constant"
    precision: str = "auto"
    options: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}; choose one of: {', '.join(SCHEDULES)}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}; choose one of: {', '.join(PRECISIONS)}")
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError(f"epochs and batch_size must be >= 1, got {self.epochs} and {self.batch_size}")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class RunResult:
    """One finished run: its config, status (``ok`` or ``diverged``), per-epoch history and summary."""

    config: TrainConfig
    status: str
    history: dict[str, list]
    layer_names: list[str]
    summary: dict[str, object]
    wall_seconds: float
    device: str
    diverged_epoch: int | None = None


@functools.lru_cache(maxsize=2)
def _dataset(name: str) -> DatasetSplits:
    return load_dataset(name)


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``auto``: CUDA when present, else the CPU."""
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _use_bf16(precision: str, device: torch.device) -> bool:
    return precision == "bf16" or (precision == "auto" and device.type == "cuda")


@torch.no_grad()
def evaluate(model, batches: Batches, bf16: bool) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of ``model`` in eval mode over all of ``batches``."""
    model.eval()
    loss_sum, correct, n = 0.0, 0, 0
    for xb, yb in batches.epoch(0):
        if bf16:
            xb = xb.contiguous(memory_format=torch.channels_last)
        with torch.autocast(batches.device.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(xb)
        loss_sum += float(F.cross_entropy(logits.float(), yb, reduction="sum"))
        correct += int((logits.argmax(1) == yb).sum())
        n += len(yb)
    return loss_sum / n, correct / n


@torch.no_grad()
def recalibrated_copy(model, batches: Batches, bf16: bool):
    """A copy of ``model`` whose BatchNorm running statistics are the exact averages over ``batches``
    (cumulative averaging: BN momentum None), for evaluating a network that has not been trained yet."""
    twin = copy.deepcopy(model)
    for m in twin.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    twin.train()
    for xb, _ in batches.epoch(0):
        if bf16:
            xb = xb.contiguous(memory_format=torch.channels_last)
        with torch.autocast(batches.device.type, dtype=torch.bfloat16, enabled=bf16):
            twin(xb)
    return twin


def summarize(history: dict[str, list]) -> dict[str, object]:
    """The run's summary from its history: the validation-selected epoch and its test accuracy, tau_interp,
    the repair gap (pp), initial and final total weight norm, the final clocks."""
    sel = metrics.selected_epoch(history["val_loss"])
    tau = metrics.interpolation_epoch(history["train_acc"])
    return {
        "selected_epoch": sel,
        "selected_test_acc": None if sel is None else history["test_acc"][sel],
        "selected_val_acc": None if sel is None else history["val_acc"][sel],
        "final_train_acc": history["train_acc"][-1],
        "final_test_acc": history["test_acc"][-1],
        "tau_interp": tau,
        "repair_gap": metrics.repair_gap(history["val_acc"], tau),
        "init_weight_norm": history["weight_norm"][0],
        "final_weight_norm": history["weight_norm"][-1],
        "clocks": {k: history[k][-1] for k in ("T_SGD", "T_L2", "T_adapt")},
        "steps": history["steps"][-1],
    }


def train(config: TrainConfig, device: str | torch.device | None = "auto") -> RunResult:
    """Train one run and record its history (see the module docstring). Same config and seed, same numbers
    (on the CPU bit for bit)."""
    start = time.perf_counter()
    dev = resolve_device(device)
    bf16 = _use_bf16(config.precision, dev)
    ds = _dataset(config.dataset).subset(config.n_train, config.n_val, config.n_test)
    model = build_model(config.arch, config.width, ds.image_shape[0], len(ds.classes))
    init_sigma_w_(model, config.sigma_w, seed=config.seed)
    model.to(dev)
    if bf16:
        model.to(memory_format=torch.channels_last)
    opt = make_optimizer(config.optimizer, model, config.lr, config.weight_decay, **config.options)
    base_lrs = [g["lr"] for g in opt.param_groups]
    schedule = SCHEDULES[config.schedule]
    stats = dict(mean=ds.mean, std=ds.std, device=dev)
    train_batches = Batches(ds.train, config.batch_size, shuffle=True, augment=config.augment, drop_last=True,
                            seed=config.seed, **stats)
    evals = {name: Batches(split, EVAL_BATCH, shuffle=False, drop_last=False, **stats)
             for name, split in (("train", ds.train), ("val", ds.val), ("test", ds.test))}
    total_steps = config.epochs * len(train_batches)
    keys = ("epoch", "train_loss", "train_acc", "val_loss", "val_acc", "test_loss", "test_acc", "weight_norm",
            "layer_norms", "steps", "T_SGD", "T_L2", "T_adapt")
    history: dict[str, list] = {k: [] for k in keys}
    lrs: list[float] = []

    def record(epoch: int) -> None:
        history["epoch"].append(epoch)
        evaluated = model if epoch > 0 else recalibrated_copy(model, evals["train"], bf16)
        for name, batches in evals.items():
            loss, acc = evaluate(evaluated, batches, bf16)
            history[f"{name}_loss"].append(loss)
            history[f"{name}_acc"].append(acc)
        norms = weight_norms(model)
        history["weight_norm"].append(norms.pop("total"))
        history["layer_norms"].append(list(norms.values()))
        history["steps"].append(len(lrs))
        for k, v in metrics.forgetting_clocks(lrs, config.batch_size, config.weight_decay).items():
            history[k].append(v)

    record(0)
    layer_names = list(weight_norms(model))[:-1]
    loss_limit = DIVERGENCE_FACTOR * max(history["train_loss"][0], math.log(len(ds.classes)))
    status, diverged_epoch = "ok", None
    for epoch in range(1, config.epochs + 1):
        model.train()
        loss_sum = torch.zeros((), device=dev)
        for xb, yb in train_batches.epoch(epoch):
            mult = schedule(len(lrs), total_steps)
            for group, base in zip(opt.param_groups, base_lrs, strict=True):
                group["lr"] = base * mult
            if bf16:
                xb = xb.contiguous(memory_format=torch.channels_last)
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
                loss = F.cross_entropy(model(xb).float(), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            lrs.append(config.lr * mult)
            loss_sum += loss.detach()
        mean_loss = float(loss_sum) / len(train_batches)
        if not (math.isfinite(mean_loss) and mean_loss <= loss_limit):
            status, diverged_epoch = "diverged", epoch
            break
        record(epoch)
    return RunResult(config=config, status=status, history=history, layer_names=layer_names,
                     summary=summarize(history), wall_seconds=time.perf_counter() - start,
                     device=str(dev), diverged_epoch=diverged_epoch)
