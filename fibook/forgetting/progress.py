"""A population's training state saved part way, so that a run stopped mid-way (a machine switched off, a killed
worker, Ctrl-C) resumes from its last saved epoch instead of from epoch 0, with the numbers it would have had
uninterrupted (on the CPU bit for bit; ``tests/forgetting/test_progress.py``).

A :class:`Progress` file holds everything the next epoch depends on: the networks' weights and BatchNorm statistics,
the optimizers' states, the weights at initialization (the geometry to the initialization is measured from them),
each run's history and status, the learning rate of every step taken, and the training seconds spent. It also says
which code trained each part (:func:`origin`): a resumed run's record lists the earlier parts
(``provenance["resumed"]``), since its own provenance is that of the process that finished it. The data order needs
nothing: an epoch's draws depend on (seed, epoch) only (:func:`fibook.forgetting.batches.epoch_generator`).

:meth:`Progress.save` writes after an epoch once ``SAVE_SECONDS`` of training have passed since the last save (and
never more than ``MAX_SHARE`` of the time), atomically (a temporary file, then a rename), so a file is always a
whole epoch. :meth:`Progress.load` returns the saved state only when it is of the same runs (same configs); a file
of other runs, or one that cannot be read, is reported on stderr and training starts from epoch 0 (the file is
replaced at the next save). The file is removed once the population has finished.

Serves :func:`fibook.forgetting.train.train_population` and, through it, every sweep
(:func:`fibook.forgetting.results.progress_path` names the file of a group of runs).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

# Saves are at least SAVE_SECONDS of training apart, and at least 1 / MAX_SHARE times the last save's duration, so
# saving never takes more than MAX_SHARE of the time (a large fused population on a GPU saves GBs). A book-preset
# Adam run at epoch 400 saves 10 MB in 0.13 s (measured on a 2-core x86 CPU): 0.1 % of its training time.
SAVE_SECONDS = 120.0
MAX_SHARE = 0.01
# The layout of a saved state; a file of a layout not in READABLE is not read. Layout 1 lacks "parts" (which code
# trained up to which epoch): its one earlier part is read as of an origin not recorded (NOT_RECORDED).
FORMAT = 2
READABLE = (1, 2)
NOT_RECORDED = "not recorded (saved in layout 1)"


ORIGIN_KEYS = ("fibook_version", "git_commit", "torch", "cpu")


def origin() -> dict[str, str]:
    """What trains this part of a run: fibook's version and git commit, torch's version and the CPU."""
    import fibook
    from fibook.provenance import cpu_model, git_commit

    return dict(zip(ORIGIN_KEYS, (fibook.__version__, git_commit(), str(torch.__version__), cpu_model()), strict=True))


@dataclass
class Saved:
    """What :meth:`Progress.load` returns: the last epoch recorded, each block's network and optimizer state, the
    weights at initialization per block, each run's state (the fields of
    :class:`fibook.forgetting.run_state.RunState` but its config), the learning rate of every step taken, the
    training seconds spent before the save, and the parts trained up to it (each an :func:`origin` with the last
    epoch it recorded, ``until_epoch``)."""

    epoch: int
    nets: list[dict]
    optimizers: list[dict]
    inits: list[list[torch.Tensor]]
    runs: list[dict]
    lrs: list[float]
    seconds: float
    parts: list[dict]


class Progress:
    """The saved state of the population ``configs`` at ``path`` (None: nothing is saved or read)."""

    def __init__(self, path: str | os.PathLike | None, configs: list):
        self.path = None if path is None else Path(path)
        self.configs = [c.to_dict() for c in configs]
        self.last, self.wait = time.perf_counter(), SAVE_SECONDS
        self.earlier: list[dict] = []  # the parts of these runs trained by earlier processes, once restored
        self.origin: dict | None = None  # this process's, asked at its first save

    def load(self, device: torch.device) -> Saved | None:
        """The state saved for these runs, its tensors on ``device``; None when there is none to resume."""
        if self.path is None or not self.path.exists():
            return None
        try:
            blob = torch.load(self.path, map_location=device, weights_only=True)
            if blob.get("format") in READABLE and blob.get("configs") == self.configs:
                if blob["format"] == 1:
                    blob["parts"] = [{**dict.fromkeys(ORIGIN_KEYS, NOT_RECORDED), "until_epoch": blob["epoch"]}]
                return Saved(**{f.name: blob[f.name] for f in dataclasses.fields(Saved)})
            why = f"it is of other runs or of a layout not in {READABLE}"
        except Exception as e:  # noqa: BLE001 - any file that cannot be resumed means: train from epoch 0
            why = f"it cannot be read ({type(e).__name__}: {e})"
        print(f"warning: not resuming from {self.path}: {why}; training from epoch 0", file=sys.stderr)
        return None

    def restore(self, device: torch.device, blocks: list, inits: list[list[torch.Tensor]], runs: list,
                lrs: list[float]) -> tuple[int, float] | None:
        """Put the saved state into ``blocks`` (networks and optimizers), ``inits``, ``runs`` and ``lrs``, in
        place; returns (the last epoch recorded, the training seconds spent), or None when there is nothing to
        resume (nothing is changed then)."""
        saved = self.load(device)
        if saved is None:
            return None
        for block, net, opt in zip(blocks, saved.nets, saved.optimizers, strict=True):
            block.net.load_state_dict(net)
            block.opt.load_state_dict(opt)
        inits[:] = saved.inits
        for run, state in zip(runs, saved.runs, strict=True):
            for name, value in state.items():
                setattr(run, name, value)
        lrs[:] = saved.lrs
        self.earlier = saved.parts
        return saved.epoch, saved.seconds

    def save(self, epoch: int, blocks: list, inits: list[list[torch.Tensor]], runs: list, lrs: list[float],
             seconds: float) -> bool:
        """Save the state after ``epoch`` (``blocks`` with ``net`` and ``opt``; ``runs`` the
        :class:`~fibook.forgetting.run_state.RunState` of each run) when a save is due (see ``SAVE_SECONDS``,
        ``MAX_SHARE``); returns whether it saved."""
        start = time.perf_counter()
        if self.path is None or start - self.last < self.wait:
            return False
        self.origin = self.origin or origin()
        blob = {"format": FORMAT, "configs": self.configs, "epoch": epoch,
                "parts": [*self.earlier, {**self.origin, "until_epoch": epoch}],
                "nets": [b.net.state_dict() for b in blocks], "optimizers": [b.opt.state_dict() for b in blocks],
                "inits": inits, "lrs": list(lrs), "seconds": seconds,
                "runs": [{f.name: getattr(run, f.name) for f in dataclasses.fields(run) if f.name != "config"}
                         for run in runs]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        torch.save(blob, tmp)
        os.replace(tmp, self.path)
        self.last = time.perf_counter()
        self.wait = max(SAVE_SECONDS, (self.last - start) / MAX_SHARE)
        return True

    def finish(self) -> None:
        """The population has finished: its saved state is not needed any more."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)
