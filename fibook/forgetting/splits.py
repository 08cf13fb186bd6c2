"""The splits of a Part I dataset: the official training set split stratified into train and validation with a
fixed seed, the official test set, and the per-channel statistics of the training split (:class:`DatasetSplits`);
the class-balanced subsets a preset takes (:meth:`DatasetSplits.subset`); and the split sizes a plan reads before
any file is loaded (:func:`split_sizes`).

Protocol (Das et al. 2026, with fibook's conventions where the paper is not public): the 50,000 CIFAR-10 training
images are split 40,000 / 10,000 with 1,000 validation images per class, drawn with a fixed split seed; the 10,000
official test images are only used for reported test accuracy. Fashion-MNIST follows the same rule: 60,000 -> 50,000
/ 10,000, plus its 10,000 test images.

Serves "Data and protocol" (``data_protocol``: the splits and their statistics), the dataset loaders
(:mod:`fibook.forgetting.data`) and every Part I sweep.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

SPLIT_SEED = 0
# Fraction of each class's training images held out for validation: 1,000 per class on the real files
# (CIFAR-10: 5,000 per class -> 1/5; Fashion-MNIST: 6,000 per class -> 1/6).
VAL_FRACTION = {"cifar10": 1 / 5, "fashion_mnist": 1 / 6}
TRAIN_PER_CLASS = {"cifar10": 5_000, "fashion_mnist": 6_000}  # the official training sets: 10 classes each
TEST_SIZE = {"cifar10": 10_000, "fashion_mnist": 10_000}  # the official test sets


def split_sizes(name: str) -> tuple[int, int, int]:
    """Images in the (train, validation, test) splits of dataset ``name``: the official training set less the
    stratified validation split (``round(VAL_FRACTION * n_c)`` of each class's ``n_c``), that split, and the
    official test set: 50,000 / 10,000 / 10,000 for Fashion-MNIST, 40,000 / 10,000 / 10,000 for CIFAR-10."""
    if name not in TRAIN_PER_CLASS:
        raise ValueError(f"unknown dataset {name!r}; choose one of: {', '.join(TRAIN_PER_CLASS)}")
    per_class = TRAIN_PER_CLASS[name]
    val = 10 * round(VAL_FRACTION[name] * per_class)
    return 10 * per_class - val, val, TEST_SIZE[name]


def train_split_size(name: str) -> int:
    """Images in the training split of dataset ``name`` (:func:`split_sizes`)."""
    return split_sizes(name)[0]


@dataclass(frozen=True)
class Split:
    """Images as uint8 ``(N, C, H, W)`` and labels as int64 ``(N,)``."""

    x: torch.Tensor
    y: torch.Tensor

    def __len__(self) -> int:
        return len(self.y)

    def take(self, index: torch.Tensor | np.ndarray) -> Split:
        index = torch.as_tensor(index, dtype=torch.long)
        return Split(self.x[index], self.y[index])


@dataclass(frozen=True)
class DatasetSplits:
    """Train / validation / test splits with class names and train-split normalization statistics.

    ``mean`` and ``std`` are per-channel statistics of the training split's pixels scaled to [0, 1].
    """

    name: str
    classes: tuple[str, ...]
    train: Split
    val: Split
    test: Split
    mean: tuple[float, ...]
    std: tuple[float, ...]

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return tuple(self.train.x.shape[1:])

    def subset(self, n_train: int | None = None, n_val: int | None = None,
               n_test: int | None = None) -> DatasetSplits:
        """The stratified first-N images of each split (None keeps a split whole).

        Normalization statistics stay those of the full training split, so presets differ only in N.
        """
        def cut(split: Split, n: int | None) -> Split:
            return split if n is None else split.take(stratified_first_n(split.y, n))

        return replace(self, train=cut(self.train, n_train), val=cut(self.val, n_val),
                       test=cut(self.test, n_test))


def stratified_first_n(labels: torch.Tensor | np.ndarray, n: int) -> np.ndarray:
    """Indices of the first images of each class, ``n`` in all, in their original order.

    Every class gets ``n // C`` images and the first ``n % C`` classes (by label value) one more, so the
    subset is class-balanced and does not depend on any random draw; ``n`` must be at least C, so that no
    class is missing.
    """
    labels = np.asarray(labels)
    classes = np.unique(labels)
    if not len(classes) <= n <= len(labels):
        raise ValueError(f"subset size must be between {len(classes)} (one image of each class) and "
                         f"{len(labels)} (the split's size), got {n}")
    base, extra = divmod(n, len(classes))
    chosen = []
    for rank, c in enumerate(classes):
        want = base + (1 if rank < extra else 0)
        members = np.flatnonzero(labels == c)
        if want > len(members):
            raise ValueError(f"subset of {n} needs {want} images of class {c}, but the split has {len(members)}")
        chosen.append(members[:want])
    return np.sort(np.concatenate(chosen))


def stratified_split(labels: np.ndarray, val_fraction: float, seed: int = SPLIT_SEED) -> tuple[np.ndarray, ...]:
    """Split indices into (train, validation), holding out ``round(val_fraction * n_c)`` images of each class.

    Each class's members are permuted with ``numpy.random.default_rng(seed)`` and the first ones go to
    validation. Both index arrays are returned sorted.
    """
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be strictly between 0 and 1, got {val_fraction}")
    rng = np.random.default_rng(seed)
    val = []
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        n_val = round(val_fraction * len(members))
        if not 0 < n_val < len(members):
            raise ValueError(f"class {c} has {len(members)} images, too few to hold out a fraction {val_fraction}")
        val.append(rng.permutation(members)[:n_val])
    val = np.sort(np.concatenate(val))
    train = np.setdiff1d(np.arange(len(labels)), val)
    return train, val


def channel_stats(x_uint8: torch.Tensor) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and standard deviation of uint8 images ``(N, C, H, W)`` scaled to [0, 1]."""
    x = x_uint8.to(torch.float64) / 255.0
    mean = x.mean(dim=(0, 2, 3))
    std = x.std(dim=(0, 2, 3), unbiased=False)
    return tuple(round(float(v), 6) for v in mean), tuple(round(float(v), 6) for v in std)


def assemble(name: str, classes: Sequence[str], x: np.ndarray, y: np.ndarray,
             x_test: np.ndarray, y_test: np.ndarray) -> DatasetSplits:
    """The :class:`DatasetSplits` of dataset ``name`` from its official training images ``x`` and labels ``y`` (split
    by :func:`stratified_split` at ``VAL_FRACTION[name]``) and its test images and labels, with the statistics of
    the training split (:func:`channel_stats`)."""
    train_idx, val_idx = stratified_split(y, VAL_FRACTION[name])
    x_t = torch.from_numpy(np.ascontiguousarray(x))
    y_t = torch.from_numpy(np.asarray(y, dtype=np.int64))
    train = Split(x_t[train_idx], y_t[train_idx])
    mean, std = channel_stats(train.x)
    return DatasetSplits(
        name=name, classes=tuple(classes), train=train, val=Split(x_t[val_idx], y_t[val_idx]),
        test=Split(torch.from_numpy(np.ascontiguousarray(x_test)),
                   torch.from_numpy(np.asarray(y_test, dtype=np.int64))),
        mean=mean, std=std,
    )
