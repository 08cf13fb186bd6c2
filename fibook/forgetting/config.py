"""What defines a Part I run: :class:`TrainConfig`, validated when made, and which of its fields a fused population
may vary (:data:`FUSABLE`). Every module that reads runs without training them needs only this one.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field

from fibook.checks import whole
from fibook.forgetting.devices import PRECISIONS
from fibook.forgetting.schedules import SCHEDULES

FUSABLE = ("sigma_w", "seed")  # the fields in which the runs of one population may differ


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a run. Sizes ``n_train``/``n_val``/``n_test`` take the stratified first N images
    of each split (None: the whole split); ``precision`` ``bf16`` is bf16 autocast + channels_last, ``fp64`` is
    for checks, ``auto`` is the one that is fast on the training device
    (:func:`fibook.forgetting.devices.auto_precision`; a trained run's config records the precision it ran at);
    ``options`` go to the optimizer (e.g. ``{"adam_lr": 1e-3}``); ``fused`` runs train as one network with the
    others of their population (:mod:`fibook.forgetting.fused`), whose fp32 sums run in another order: a fused run
    is a run of its own, with its own id."""

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
    fused: bool = False

    def __post_init__(self):
        for name in ("dataset", "arch", "optimizer", "augment", "schedule", "precision"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, got {getattr(self, name)!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}; choose one of: {', '.join(SCHEDULES)}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}; choose one of: {', '.join(PRECISIONS)}")
        for name, least in (("width", 1), ("batch_size", 1), ("epochs", 1), ("seed", 0)):
            whole(name, getattr(self, name), least)
        for name in ("n_train", "n_val", "n_test"):
            if getattr(self, name) is not None:
                whole(name, getattr(self, name), 1, "or None (the whole split)")
        for name, positive in (("sigma_w", True), ("lr", True), ("weight_decay", False)):
            value = getattr(self, name)
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
            if not ok or value < 0 or (positive and value == 0):
                raise ValueError(f"{name} must be a finite number {'> 0' if positive else '>= 0'}, got {value!r}")
        if not isinstance(self.options, dict):
            raise ValueError(f"options must be a dict of optimizer keyword arguments, got {self.options!r}")
        if not isinstance(self.fused, bool):
            raise ValueError(f"fused must be True or False, got {self.fused!r}")

    def to_dict(self) -> dict:
        return asdict(self)
