"""BatchNorm ResNets of Part I and the sigma_w initialization (chapter "The question and the protocol" checks
its scale invariance; "Depth" uses the CIFAR ResNets).

* :func:`resnet9` -- Myrtle's ResNet-9 (Page 2018): prep 64, layer1 128 + residual, layer2 256, layer3 512 +
  residual, global max pool, linear head; every conv is bias-free and followed by BatchNorm and ReLU. ``width``
  is the channel count of the prep conv (64 is the full net); the others scale with it. Myrtle's 0.125 logit
  multiplier is **not** applied: the head's output is used as is.
* :func:`cifar_resnet` -- He et al. (2016) CIFAR ResNets of depth 6n+2 (20, 56, 110): basic blocks, stage widths
  16-32-64 (times ``width / 16``), option-A shortcuts (stride-2 subsampling and zero-padded channels), global
  average pool, linear head with bias.
* :func:`init_sigma_w_` -- every Conv2d/Linear weight ~ N(0, sigma_w^2 / fan_in), biases 0, BatchNorm gamma = 1,
  beta = 0, with common random numbers: for one seed the standard-normal draws are shared by every sigma_w, so
  W0(sigma) = sigma * W0(1) exactly.
"""

from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F
from torch import nn


def conv_bn(c_in: int, c_out: int, stride: int = 1) -> nn.Sequential:
    """3x3 convolution (no bias) -> BatchNorm -> ReLU."""
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True)
    )


class Residual(nn.Module):
    """x + f(x)."""

    def __init__(self, *layers: nn.Module):
        super().__init__()
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.body(x)


def resnet9(width: int = 64, in_channels: int = 3, num_classes: int = 10) -> nn.Sequential:
    """Myrtle ResNet-9 with ``width`` channels in its prep layer (6.57M parameters at width 64, 3 channels)."""
    w = width
    return nn.Sequential(
        conv_bn(in_channels, w),
        conv_bn(w, 2 * w), nn.MaxPool2d(2), Residual(conv_bn(2 * w, 2 * w), conv_bn(2 * w, 2 * w)),
        conv_bn(2 * w, 4 * w), nn.MaxPool2d(2),
        conv_bn(4 * w, 8 * w), nn.MaxPool2d(2), Residual(conv_bn(8 * w, 8 * w), conv_bn(8 * w, 8 * w)),
        nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(8 * w, num_classes, bias=False),
    )


class BasicBlock(nn.Module):
    """He et al.'s basic block: conv-BN-ReLU-conv-BN plus an option-A shortcut, then ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.stride = stride
        self.pad = c_out - c_in
        self.population = 1  # models stacked along channels (fibook.forgetting.fused); padding is per model

    def shortcut(self, x):
        if self.stride > 1:
            x = x[:, :, :: self.stride, :: self.stride]
        if self.pad:
            b, c, h, w = x.shape
            x = x.reshape(b, self.population, c // self.population, h, w)
            x = F.pad(x, (0, 0, 0, 0, self.pad // 2, self.pad - self.pad // 2))
            x = x.reshape(b, -1, h, w)
        return x

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


def cifar_resnet(depth: int, width: int = 16, in_channels: int = 3, num_classes: int = 10) -> nn.Sequential:
    """He et al. (2016) CIFAR ResNet with ``depth = 6n + 2`` layers and stage widths (1, 2, 4) x ``width``."""
    if depth < 8 or (depth - 2) % 6:
        raise ValueError(f"CIFAR ResNet depth must be 6n+2 with n >= 1 (8, 14, 20, 56, 110, ...), got {depth}")
    n = (depth - 2) // 6
    layers: list[nn.Module] = [nn.Conv2d(in_channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width),
                               nn.ReLU(inplace=True)]
    c_in = width
    for stage, mult in enumerate((1, 2, 4)):
        c_out = width * mult
        for block in range(n):
            layers.append(BasicBlock(c_in, c_out, stride=2 if stage > 0 and block == 0 else 1))
            c_in = c_out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, num_classes)]
    return nn.Sequential(*layers)


class StackedLinear(nn.Module):
    """K independent linear maps: input (B, K n_in) viewed as (B, K, n_in), output (B, K, n_out)."""

    def __init__(self, k: int, n_in: int, n_out: int, bias: bool):
        super().__init__()
        self.k, self.in_features, self.out_features = k, n_in, n_out
        self.weight = nn.Parameter(torch.empty(k, n_out, n_in))
        self.bias = nn.Parameter(torch.zeros(k, n_out)) if bias else None

    def forward(self, x):
        out = torch.einsum("bki,koi->bko", x.reshape(x.size(0), self.k, self.in_features), self.weight)
        return out if self.bias is None else out + self.bias


ARCHITECTURES = "resnet9, or resnetD for a CIFAR ResNet of depth D = 6n+2 (resnet20, resnet56, resnet110, ...)"


def build_model(arch: str, width: int, in_channels: int = 3, num_classes: int = 10) -> nn.Module:
    """A model by name: ``resnet9`` (``width`` = prep channels) or ``resnet<6n+2>`` (``width`` = first stage)."""
    if width < 1:
        raise ValueError(f"width must be a positive number of channels, got {width}")
    if arch == "resnet9":
        return resnet9(width, in_channels, num_classes)
    match = re.fullmatch(r"resnet(\d+)", arch)
    if match and int(match.group(1)) != 9:
        return cifar_resnet(int(match.group(1)), width, in_channels, num_classes)
    raise ValueError(f"unknown architecture {arch!r}; choose {ARCHITECTURES}")


def weight_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The Conv2d and Linear layers (stacked ones included), in order, with their names: the weights that
    sigma_w scales."""
    return [(name, m) for name, m in model.named_modules() if isinstance(m, nn.Conv2d | nn.Linear | StackedLinear)]


def fan_in(weight: torch.Tensor) -> int:
    """Inputs feeding one output unit: c_in * k_h * k_w for a conv, in_features for a Linear."""
    return math.prod(weight.shape[1:])


@torch.no_grad()
def init_sigma_w_(model: nn.Module, sigma_w: float, seed: int = 0) -> nn.Module:
    """Initialize in place: W ~ N(0, sigma_w^2 / fan_in) for every Conv2d/Linear weight, biases 0, BN gamma 1, beta 0.

    The standard-normal draws come from a CPU generator seeded by ``seed``, layer by layer, so for one seed the
    weights of every sigma_w are the same tensors times sigma_w (common random numbers).
    """
    if not (isinstance(sigma_w, int | float) and math.isfinite(sigma_w) and sigma_w > 0):
        raise ValueError(f"sigma_w must be a finite number > 0, got {sigma_w!r}")
    gen = torch.Generator().manual_seed(seed)
    for _, layer in weight_layers(model):
        w = layer.weight
        z = torch.randn(w.shape, generator=gen, dtype=torch.float64)
        w.copy_((z * (sigma_w / math.sqrt(fan_in(w)))).to(w.dtype))
        if layer.bias is not None:
            layer.bias.zero_()
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
    return model


@torch.no_grad()
def member_weight_norms(model: nn.Module, k: int = 1) -> list[dict[str, float]]:
    """For each of the ``k`` models held by ``model`` (k > 1: a fused population, see
    :mod:`fibook.forgetting.fused`): the Frobenius norm of every Conv2d/Linear weight by layer name, and their
    total under ``"total"``,
    ||W||_total = sqrt(sum_l ||W_l||_F^2)."""
    rows: list[dict[str, float]] = [{} for _ in range(k)]
    for name, m in weight_layers(model):
        per_member = m.weight.detach().double().reshape(k, -1).norm(dim=1).tolist()
        for row, value in zip(rows, per_member, strict=True):
            row[name] = value
    for row in rows:
        row["total"] = math.sqrt(sum(v * v for v in row.values()))
    return rows


@torch.no_grad()
def weight_snapshot(model: nn.Module) -> list[torch.Tensor]:
    """A float64 copy of every Conv2d/Linear weight, in :func:`weight_layers` order (the reference that
    :func:`member_init_geometry` measures from)."""
    return [m.weight.detach().double().clone() for _, m in weight_layers(model)]


@torch.no_grad()
def member_init_geometry(model: nn.Module, init: list[torch.Tensor], k: int = 1) -> list[dict]:
    """How far each of the ``k`` models held by ``model`` has moved from its weights ``init``
    (:func:`weight_snapshot` taken at initialization), per Conv2d/Linear layer and in total:

        distance_l = ||W_l - W_l(0)||_F,     cosine_l = <W_l, W_l(0)>_F / (||W_l||_F ||W_l(0)||_F),

    and the same over all layers flattened into one vector (``"total_distance"``, ``"total_cosine"``). The
    distance measures what the radial view (the norm ||W||) cannot: a weight can keep its norm and turn away from
    its initialization. Returns per member ``{"distance": [...], "cosine": [...], "total_distance": d,
    "total_cosine": c}`` (layers in :func:`weight_layers` order)."""
    rows = [{"distance": [], "cosine": []} for _ in range(k)]
    dot = torch.zeros(k, dtype=torch.float64)
    sq_now = torch.zeros(k, dtype=torch.float64)
    sq_init = torch.zeros(k, dtype=torch.float64)
    sq_diff = torch.zeros(k, dtype=torch.float64)
    layers = [m for _, m in weight_layers(model)]
    if len(layers) != len(init):
        raise ValueError(f"the snapshot has {len(init)} weights, the model {len(layers)}")
    for m, w0 in zip(layers, init, strict=True):
        w = m.weight.detach().double().cpu().reshape(k, -1)
        w0 = w0.cpu().reshape(k, -1)
        layer_dot, n, n0 = (w * w0).sum(1), (w * w).sum(1), (w0 * w0).sum(1)
        diff = ((w - w0) ** 2).sum(1)
        dot, sq_now, sq_init, sq_diff = dot + layer_dot, sq_now + n, sq_init + n0, sq_diff + diff
        cos = layer_dot / (n * n0).sqrt()
        for j, row in enumerate(rows):
            row["distance"].append(math.sqrt(diff[j].item()))
            row["cosine"].append(cos[j].item())
    total_cos = dot / (sq_now * sq_init).sqrt()
    for j, row in enumerate(rows):
        row["total_distance"] = math.sqrt(sq_diff[j].item())
        row["total_cosine"] = total_cos[j].item()
    return rows


def weight_norms(model: nn.Module) -> dict[str, float]:
    """Frobenius norm of every Conv2d/Linear weight of one model by layer name, and their total under ``"total"``."""
    return member_weight_norms(model)[0]
