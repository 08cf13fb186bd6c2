"""Where a number came from: code version, library versions, hardware and date, as a plain dict.

Serves the results records of every sweep and the benchmarks; the appendix "Reproducibility" says what it holds.
"""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess

import torch

import fibook
from fibook.paths import PROJECT_ROOT


def git_commit() -> str:
    """The checkout's commit hash, with ``+dirty`` when tracked files are modified; ``unknown`` outside git."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10)

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return "unknown"
        dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty else "")


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, or what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device: str | torch.device = "cpu") -> str:
    """A readable name of a torch device: the GPU's model for CUDA, the CPU's otherwise."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return cpu_model()


def provenance(device: str | torch.device = "cpu") -> dict[str, object]:
    """Everything needed to say where a result came from."""
    return {
        "fibook_version": fibook.__version__,
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": str(torch.device(device)),
        "device_name": device_name(device),
        "cpu": cpu_model(),
        "threads": torch.get_num_threads(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
