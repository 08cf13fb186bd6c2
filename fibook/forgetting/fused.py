"""Fused populations: K networks of one architecture trained as a single network.

A single narrow ResNet at batch 16-128 leaves a GPU mostly idle; K runs that differ only in sigma_w and seed can
share every kernel launch instead. :func:`fuse` rebuilds K models as one network whose layers hold the K models
side by side:

* ``Conv2d(c_in, c_out)``  -> ``Conv2d(K c_in, K c_out, groups=K)``: model k owns channel block k;
* ``BatchNorm2d(c)``       -> ``BatchNorm2d(K c)``: statistics are per channel, hence per model;
* ``Linear(n_in, n_out)``  -> :class:`~fibook.forgetting.models.StackedLinear` with weight (K, n_out, n_in);
* pooling, ReLU and residual sums act per channel and need no change; option-A shortcuts pad per model.

The fused network maps ``(B, K c, H, W)`` -- model k's batch in channel block k -- to logits ``(B, K, classes)``.
Element-wise optimizers (SGD, Adam, AdamW) on the fused parameters are exactly the per-model optimizers; Muon
orthogonalizes each model's block separately (``population=K``). With float64 the fused and one-at-a-time
trajectories agree to rounding (tests/forgetting/test_fused.py).

Serves the sweeps of Part I's ``gpu`` and ``paper`` presets (``--fuse``); no chapter at the ``book`` preset
reads a fused run.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from fibook.forgetting.models import BasicBlock, StackedLinear


class Single(nn.Module):
    """A plain model seen as a population of one: logits (B, classes) -> (B, 1, classes)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x).unsqueeze(1)


@torch.no_grad()
def _fuse_layer(layers: list[nn.Module]) -> nn.Module | None:
    first, k = layers[0], len(layers)
    if isinstance(first, nn.Conv2d):
        if first.groups != 1:
            raise ValueError("fuse() takes convolutions with groups=1")
        fused = nn.Conv2d(k * first.in_channels, k * first.out_channels, first.kernel_size, first.stride,
                          first.padding, groups=k, bias=first.bias is not None).to(first.weight)
        fused.weight.copy_(torch.cat([m.weight for m in layers]))
        if first.bias is not None:
            fused.bias.copy_(torch.cat([m.bias for m in layers]))
        return fused
    if isinstance(first, nn.BatchNorm2d):
        fused = nn.BatchNorm2d(k * first.num_features, eps=first.eps, momentum=first.momentum).to(first.weight)
        for name in ("weight", "bias", "running_mean", "running_var"):
            getattr(fused, name).copy_(torch.cat([getattr(m, name) for m in layers]))
        fused.num_batches_tracked.copy_(first.num_batches_tracked)
        return fused
    if isinstance(first, nn.Linear):
        fused = StackedLinear(k, first.in_features, first.out_features, first.bias is not None).to(first.weight)
        fused.weight.copy_(torch.stack([m.weight for m in layers]))
        if first.bias is not None:
            fused.bias.copy_(torch.stack([m.bias for m in layers]))
        return fused
    return None


def fuse(models: list[nn.Module]) -> nn.Module:
    """One network computing all ``models`` (same architecture) side by side; see the module docstring."""
    k = len(models)
    skeleton = copy.deepcopy(models[0])

    def rebuild(target: nn.Module, sources: list[nn.Module]) -> None:
        for name, child in list(target.named_children()):
            parts = [dict(s.named_children())[name] for s in sources]
            replacement = _fuse_layer(parts)
            if replacement is not None:
                setattr(target, name, replacement)
            else:
                if isinstance(child, BasicBlock):
                    child.population = k
                rebuild(child, parts)

    rebuild(skeleton, models)
    return skeleton
