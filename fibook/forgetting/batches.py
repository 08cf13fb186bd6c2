"""A tensor-resident batch iterator: the whole split lives on the training device, batches are index gathers
(every Part I run; chapter "Data and protocol" shows its augmentation).

Shuffling and augmentation draws come from a CPU ``torch.Generator`` seeded by ``(seed, epoch)``, so an epoch's
batches are identical on CPU and CUDA and do not depend on how many epochs were iterated before. Augmentation
(random crop with padding, horizontal flip) is applied on the device, to the whole batch at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from fibook.forgetting.splits import Split


@dataclass(frozen=True)
class Augment:
    """Training-time augmentation: random crop after ``crop_padding`` pixels of padding, and a random
    horizontal flip with probability 1/2. ``pad_mode`` is ``reflect`` or ``zeros``."""

    crop_padding: int = 0
    flip: bool = False
    pad_mode: str = "reflect"

    def __post_init__(self):
        if self.crop_padding < 0:
            raise ValueError(f"crop_padding must be >= 0 pixels, got {self.crop_padding}")
        if self.pad_mode not in ("reflect", "zeros"):
            raise ValueError(f"pad_mode must be 'reflect' or 'zeros', got {self.pad_mode!r}")

    @property
    def active(self) -> bool:
        return self.crop_padding > 0 or self.flip


NO_AUGMENT = Augment()
CROP_FLIP = Augment(crop_padding=4, flip=True)
AUGMENTS = {"none": NO_AUGMENT, "crop_flip": CROP_FLIP}


def get_augment(name: str | Augment) -> Augment:
    """An :class:`Augment` by name (``none`` or ``crop_flip``), or the one given."""
    if isinstance(name, Augment):
        return name
    if name not in AUGMENTS:
        raise ValueError(f"unknown augmentation {name!r}; choose one of: {', '.join(AUGMENTS)}")
    return AUGMENTS[name]


def epoch_generator(seed: int, epoch: int) -> torch.Generator:
    """The CPU generator for one epoch's draws; distinct and reproducible for every (seed, epoch)."""
    return torch.Generator().manual_seed(seed * 1_000_003 + epoch)


def random_crop(x: torch.Tensor, padding: int, offsets: torch.Tensor, pad_mode: str = "reflect") -> torch.Tensor:
    """Crop each image of ``x`` (B, C, H, W) at ``offsets`` (B, 2) in its ``padding``-padded version.

    Offset (0, 0) is the top-left corner of the padded image and (padding, padding) the original image.
    """
    b, c, h, w = x.shape
    mode = "reflect" if pad_mode == "reflect" else "constant"
    padded = F.pad(x, (padding,) * 4, mode=mode)
    rows = offsets[:, 0, None] + torch.arange(h, device=x.device)  # (B, H)
    cols = offsets[:, 1, None] + torch.arange(w, device=x.device)  # (B, W)
    bi = torch.arange(b, device=x.device)[:, None, None, None]
    ci = torch.arange(c, device=x.device)[None, :, None, None]
    return padded[bi, ci, rows[:, None, :, None], cols[:, None, None, :]]


class Batches:
    """Iterate over ``(images, labels)`` batches of a :class:`~fibook.forgetting.splits.Split` held on ``device``.

    Images are normalized once, ``(x / 255 - mean) / std``, and stored on the device as ``dtype``.
    ``shuffle`` draws a fresh permutation per epoch; ``drop_last`` drops the final short batch (the forgetting
    protocol takes ``floor(N / b)`` steps per epoch).
    """

    def __init__(self, split: Split, batch_size: int, *, mean, std, shuffle: bool = True,
                 augment: str | Augment = NO_AUGMENT, drop_last: bool = True, seed: int = 0,
                 device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32):
        mean_t = torch.tensor(mean, dtype=dtype).view(1, -1, 1, 1)
        std_t = torch.tensor(std, dtype=dtype).view(1, -1, 1, 1)
        x = ((split.x.to(dtype) / 255.0 - mean_t) / std_t).to(device)
        self._iterate(x, split.y.to(device), batch_size, shuffle, get_augment(augment), drop_last, seed)

    def _iterate(self, x: torch.Tensor, y: torch.Tensor, batch_size: int, shuffle: bool, augment: Augment,
                 drop_last: bool, seed: int) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        if drop_last and batch_size > len(y):
            raise ValueError(f"batch_size {batch_size} exceeds the split's {len(y)} images with drop_last=True")
        self.x, self.y, self.device = x, y, x.device
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.augment = augment
        self.drop_last = drop_last
        self.seed = seed

    def sharing(self, batch_size: int, *, shuffle: bool = True, augment: str | Augment = NO_AUGMENT,
                drop_last: bool = True, seed: int = 0) -> Batches:
        """Another iterator over this one's images, with its own batch size, order and augmentation: the
        normalized split on the device is shared, not copied (one copy serves a whole population of runs)."""
        other = Batches.__new__(Batches)
        other._iterate(self.x, self.y, batch_size, shuffle, get_augment(augment), drop_last, seed)
        return other

    def __len__(self) -> int:
        n = len(self.y)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def epoch(self, epoch: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """The batches of epoch ``epoch``: the same for the same (seed, epoch) on every device.

        The epoch's draws are made on the CPU and copied to the device once; every batch is then gathered by
        device-resident indices, with no host-device transfer per batch."""
        n = len(self.y)
        gen = epoch_generator(self.seed, epoch)
        order = torch.randperm(n, generator=gen) if self.shuffle else torch.arange(n)
        order = order.to(self.device)
        aug = self.augment
        if aug.active:
            offsets = torch.randint(0, 2 * aug.crop_padding + 1, (n, 2), generator=gen).to(self.device)
            flips = (torch.rand(n, generator=gen) < 0.5).to(self.device)
        for k in range(len(self)):
            idx = order[k * self.batch_size:(k + 1) * self.batch_size]
            xb = self.x[idx]
            if aug.crop_padding:
                xb = random_crop(xb, aug.crop_padding, offsets[idx], aug.pad_mode)
            if aug.flip:
                xb = torch.where(flips[idx][:, None, None, None], xb.flip(-1), xb)
            yield xb, self.y[idx]

    def __iter__(self):
        return self.epoch(0)
