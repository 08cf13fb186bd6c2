"""Where and in what precision a Part I run computes: the device (one of :data:`DEVICES` or ``cuda:N``, checked by
:func:`check_device`; ``auto``: CUDA when present), the precision ``auto`` stands for there (the faster of bf16 and
fp32), the settings training runs under (one CPU thread, so a CPU run's numbers are the same on every machine;
autotuned cuDNN convolutions), and the forward pass under bf16 autocast.

Serves every Part I sweep and the rerun cost tables of the Part I chapters (:mod:`fibook.forgetting.cost`).
"""

from __future__ import annotations

import contextlib
import re

import torch

DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "fp32", "bf16", "fp64")


def check_device(device: str, here: bool = True) -> str:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` with N a visible GPU's index; CUDA must be present (``here``:
    on this machine; else only the name is checked, as for a cluster, whose workers are asked)."""
    if not isinstance(device, str) or (device not in DEVICES and not re.fullmatch(r"cuda:\d+", device)):
        raise ValueError(f"unknown device {device!r}; choose one of: {', '.join(DEVICES)} (or cuda:N, N = 0, 1, ...)")
    if not here:
        return device
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} was asked for but torch sees no CUDA device; use --device cpu")
    if device.startswith("cuda:") and int(device[5:]) >= torch.cuda.device_count():
        raise ValueError(f"device {device!r}: torch sees {torch.cuda.device_count()} GPU(s), "
                         f"indices 0 to {torch.cuda.device_count() - 1}")
    return device


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``auto``: CUDA when present, else the CPU."""
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")  # /proc/cpuinfo's names of x86 instructions that do bf16 math natively


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux lists them in /proc/cpuinfo (none where that file is missing)."""
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return frozenset()
    return frozenset(flag for line in text.splitlines() if line.startswith("flags") for flag in line.split()[2:])


def auto_precision(device: str | torch.device, *, flags: frozenset[str] | None = None,
                   cuda_bf16: bool | None = None) -> str:
    """The precision ``auto`` stands for on ``device``: the faster of bf16 and fp32 there.

    Rule: on CUDA, ``bf16`` when the GPU computes in bf16 natively (compute capability 8.0 or newer,
    ``torch.cuda.is_bf16_supported(including_emulation=False)``), else ``fp32``; on the CPU, ``bf16`` when it
    has AMX or AVX512-BF16 (flag ``amx_bf16`` or ``avx512_bf16``), else ``fp32`` (without them bf16 is
    emulated, about 10x slower than fp32); on any other device ``fp32``. ``flags`` (the CPU's, default
    :func:`cpu_flags`) and ``cuda_bf16`` (default: asked from torch) stand in for the machine's answers."""
    device = torch.device(device)
    if device.type == "cuda":
        if cuda_bf16 is None:
            cuda_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False)
        return "bf16" if cuda_bf16 else "fp32"
    if device.type == "cpu":
        return "bf16" if set(BF16_CPU_FLAGS) & (cpu_flags() if flags is None else flags) else "fp32"
    return "fp32"


def resolve_precision(precision: str, device: str | torch.device) -> str:
    """``precision`` itself, or for ``auto`` the one :func:`auto_precision` picks on ``device``."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of: {', '.join(PRECISIONS)}")
    return auto_precision(device) if precision == "auto" else precision


def forward_logits(net, xb: torch.Tensor, bf16: bool) -> torch.Tensor:
    """``net(xb)`` under bf16 autocast with channels_last inputs when ``bf16`` (BatchNorm keeps fp32 parameters
    and statistics and normalizes in fp32), as is otherwise; bf16 logits are taken to fp32 for the loss."""
    if bf16:
        xb = xb.contiguous(memory_format=torch.channels_last)
    with torch.autocast(xb.device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = net(xb)
    return logits.float() if logits.dtype == torch.bfloat16 else logits


@contextlib.contextmanager
def one_cpu_thread():
    """Run the block with one torch intra-op thread, then restore the previous count. A CPU conv sums in a
    thread-count-dependent order, so this is what makes a CPU run's numbers the same on every machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def cudnn_autotuned():
    """Run the block with ``torch.backends.cudnn.benchmark`` on, then restore it: cuDNN times its convolution
    algorithms at a shape's first call and keeps the fastest, which pays off as a run's shapes never change."""
    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        yield
    finally:
        torch.backends.cudnn.benchmark = before


def device_settings(dev: torch.device):
    """The settings training runs under on ``dev``: one CPU thread (:func:`one_cpu_thread`) on the CPU,
    autotuned convolutions (:func:`cudnn_autotuned`) on CUDA."""
    if dev.type == "cpu":
        return one_cpu_thread()
    return cudnn_autotuned() if dev.type == "cuda" else contextlib.nullcontext()
