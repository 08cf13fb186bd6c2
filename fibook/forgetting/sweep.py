"""Running an experiment's grid: resumable, parallel on local worker processes or any Dask cluster.

``run_sweep(name, preset)`` trains every run of the experiment that its results file does not hold yet and
appends each finished run as soon as it is done; interrupted at any point, a rerun picks up exactly the runs
that are missing, and a run stopped part way resumes from its last saved epoch (:mod:`fibook.forgetting.progress`).
A run finished under another experiment of the same scale (same config, same id) is copied instead of retrained.
Divergence is a result (``diverged``); an exception inside a run is recorded as ``failed`` with its traceback, the
sweep goes on, and a rerun tries that run again.

Parallelism: ``workers=1`` trains in this process; more workers, or a ``cluster`` address, use Dask distributed
(:mod:`fibook.forgetting.cluster`, which trains each group of runs and checks every worker of a cluster before it
trains). ``fuse=True`` trains runs that differ only in sigma_w and seed as one fused network
(:mod:`fibook.forgetting.fused`), the fast path on a GPU. A fused network sums in another order than one network
at a time, so in fp32 its numbers differ and its runs are other runs: their configs say ``fused: true`` and have
their own ids (in fp64 the two agree to 1e-12, which ``tests/forgetting/test_fused.py`` checks).

Serves every Part I chapter's rerun cell (``RERUN = True``) and ``python -m fibook sweep``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fibook.checks import whole
from fibook.forgetting import results
from fibook.forgetting.cluster import WORKER_TIMEOUT, check_workers, connect, distributed_quiet, execute
from fibook.forgetting.config import FUSABLE, TrainConfig
from fibook.forgetting.devices import check_device
from fibook.forgetting.experiments import EXPERIMENTS, get_experiment, run_id, runs
from fibook.forgetting.records import Record
from fibook.forgetting.train import dataset
from fibook.presets import get_preset

DEFAULT_POPULATION = 16  # the largest fused population unless a sweep is told otherwise
MAX_WORKERS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a sweep; ``kept`` runs of this call were recorded and a rerun continues from them."""

    def __init__(self, kept: int, path):
        super().__init__(f"interrupted: {kept} run(s) of this sweep kept in {path}; rerun to continue")
        self.kept = kept


def group_runs(configs: list[TrainConfig], max_population: int) -> list[list[TrainConfig]]:
    """Unfused runs one by one; fused runs in populations of up to ``max_population`` that differ only in
    sigma_w and seed."""
    singles: list[list[TrainConfig]] = []
    buckets: dict[str, list[TrainConfig]] = {}
    for c in configs:
        if not c.fused:
            singles.append([c])
            continue
        key = repr(sorted((k, repr(v)) for k, v in c.to_dict().items() if k not in FUSABLE))
        buckets.setdefault(key, []).append(c)
    return singles + [b[i:i + max_population] for b in buckets.values() for i in range(0, len(b), max_population)]


@dataclass
class Plan:
    """What a sweep has left to do."""

    experiment: str
    preset: str
    total: int
    done: dict[str, Record]  # id -> latest record, ok or diverged
    failed: dict[str, Record]
    reusable: dict[str, Record]  # id -> a finished record of another experiment at this preset
    pending: list[TrainConfig]


def plan(name: str, preset: str, fuse: bool = False, device: str = "auto",
         auto: str | None = None) -> Plan:
    """Compare the experiment's grid (its fused runs with ``fuse``, at the precision a preset's ``auto`` stands for
    on ``device``, or at ``auto`` when given: the workers' answer) with its results file and the other
    experiments' files of this preset."""
    exp = get_experiment(name)
    preset_name = get_preset(preset).name
    configs = runs(exp.name, preset_name, fused=fuse, device=check_device(device, here=auto is None), auto=auto)
    records = {r.id: r for r in results.latest(results.read_records(results.results_path(name, preset_name)))}
    ids = [run_id(c) for c in configs]
    done = {i: records[i] for i in ids if i in records and records[i].status != "failed"}
    failed = {i: records[i] for i in ids if i in records and records[i].status == "failed"}
    others: dict[str, Record] = {}
    for other in EXPERIMENTS:
        if other != name:
            others |= {r.id: r for r in _neighbour_records(results.results_path(other, preset_name))
                       if r.status != "failed"}
    todo = [(i, c) for i, c in zip(ids, configs, strict=True) if i not in done]
    reusable = {i: others[i] for i, _ in todo if i in others}
    pending = [c for i, c in todo if i not in reusable]
    return Plan(exp.name, preset_name, len(configs), done, failed, reusable, pending)


def _neighbour_records(path) -> list[Record]:
    """The records of another experiment's results file, whose finished runs a sweep may reuse; a file that
    cannot be read is skipped with a warning naming it (it blocks only its own experiment's sweeps)."""
    try:
        return results.read_records(path)
    except results.ResultsError as e:
        print(f"warning: not reusing runs of {path}: {e}", file=sys.stderr)
        return []


def check_data(configs: list[TrainConfig]) -> None:
    """Load every dataset that ``configs`` train on, so that a missing one stops a sweep before its first run
    with the loader's message (:class:`fibook.forgetting.data.DatasetError`, naming the command that fetches it) instead
    of failing every run. Each is loaded once per process, so training in this process reuses it."""
    for name in sorted({c.dataset for c in configs}):
        dataset(name)


def run_sweep(name: str, preset: str, workers: int = 1, device: str = "auto",
              cluster: str | None = None, fuse: bool = False, max_population: int = DEFAULT_POPULATION,
              progress: bool = True, worker_timeout: float = WORKER_TIMEOUT) -> dict[str, int]:
    """Run what is missing of experiment ``name`` at ``preset``; returns counts by status of this call's runs.

    The results file is locked for the whole sweep (a second sweep of it raises
    :class:`.results.ResultsBusyError`); Ctrl-C raises :class:`SweepInterrupted` after the runs finished so
    far are recorded."""
    whole("workers", workers)
    if cluster is None and workers > MAX_WORKERS:
        raise ValueError(f"workers must be at most {MAX_WORKERS}, the CPU cores this process may use (one "
                         f"single-threaded worker per core), got {workers}")
    whole("max_population", max_population)
    if not (isinstance(worker_timeout, (int, float)) and worker_timeout > 0):
        raise ValueError(f"worker_timeout must be a number of seconds > 0, got {worker_timeout!r}")
    exp, preset_name = get_experiment(name), get_preset(preset).name
    device = check_device(device, here=cluster is None)  # with a cluster, the workers are asked
    path = results.results_path(exp.name, preset_name)
    counts = {s: 0 for s in results.STATUSES} | {"reused": 0}
    with results.writing(path) as appender, contextlib.ExitStack() as stack:
        # what this call keeps is counted in the file: Ctrl-C can land between a record's write and its count
        before = len(results.read_records(path))
        client, auto = None, None
        if cluster is not None:
            stack.enter_context(distributed_quiet())
            client = connect(cluster, worker_timeout)
            stack.callback(client.close)
            auto = check_workers(client, cluster, device, get_preset(preset_name).forgetting.precision)
        p = plan(exp.name, preset_name, fuse, device, auto=auto)
        if client is None:
            check_data(p.pending)
        elif p.pending:
            missing = [e for e in client.run(check_data, p.pending, on_error="return").values() if e is not None]
            if missing:
                raise missing[0]
        for record in p.reusable.values():
            counts["reused"] += appender.append(dataclasses.replace(record, experiment=p.experiment))
        groups = group_runs(p.pending, max_population)
        prune_progress(p.experiment, p.preset, groups)
        from tqdm.auto import tqdm

        bar = tqdm(total=len(p.pending), desc=f"{p.experiment} [{p.preset}]", unit="run", disable=not progress)
        try:
            for records in execute(groups, p.experiment, p.preset, device, workers, client, cluster,
                                   worker_timeout):
                for record in records:
                    counts[record.status] += appender.append(record)
                bar.update(len(records))
        except KeyboardInterrupt:
            raise SweepInterrupted(len(results.read_records(path)) - before, path) from None
        finally:
            bar.close()
    return counts


def prune_progress(name: str, preset: str, groups: list[list[TrainConfig]]) -> list[Path]:
    """Remove the saved states of experiment ``name`` at ``preset`` that no group of ``groups`` (what a sweep is
    about to train) would resume: of runs finished since, or grouped otherwise (another ``--fuse`` or
    ``max_population``), and half-written ``.tmp`` files. Returns the paths removed."""
    keep = {results.progress_path(name, preset, [run_id(c) for c in g]) for g in groups}
    folder = results.progress_dir(name, preset)
    stale = [f for f in (sorted(folder.iterdir()) if folder.is_dir() else []) if f.is_file() and f not in keep]
    for f in stale:
        f.unlink()
    return stale


def time_left(per_epoch: Sequence[float], epochs: Sequence[int], workers: int) -> float | None:
    """Seconds to train runs of ``epochs`` epochs on ``workers`` parallel workers, at the median of the wall seconds
    per epoch that finished runs took (``per_epoch``): median x sum(epochs) / workers. By the epoch, not the run,
    since the arms of one experiment may differ tenfold in length (``clock_ladder``). None without a measurement."""
    return statistics.median(per_epoch) * sum(epochs) / workers if per_epoch else None


def status(name: str, preset: str, workers: int = 1, fuse: bool = False,
           device: str = "auto") -> dict[str, object]:
    """Done / diverged / failed / remaining runs (of the fused runs with ``fuse``, in populations of
    ``DEFAULT_POPULATION``; at the precision a sweep on ``device`` runs, :func:`plan`), how many remaining runs are
    part-trained (a sweep resumes them where they stopped), and the time left at ``workers`` parallel workers,
    estimated by :func:`time_left` (a part-trained run counted whole)."""
    p = plan(name, preset, fuse, device)
    finished = list(p.done.values())
    per_epoch = [r.provenance["wall_seconds"] / r.config.epochs for r in finished
                 if r.status == "ok" and "wall_seconds" in r.provenance]
    remaining = len(p.pending) + len(p.reusable)
    eta = time_left(per_epoch, [c.epochs for c in p.pending], workers)
    part = sum(len(g) for g in group_runs(p.pending, DEFAULT_POPULATION)
               if results.progress_path(p.experiment, p.preset, [run_id(c) for c in g]).exists())
    return {
        "experiment": p.experiment, "preset": p.preset, "total": p.total,
        "ok": sum(r.status == "ok" for r in finished),
        "diverged": sum(r.status == "diverged" for r in finished),
        "failed": len(p.failed), "remaining": remaining, "reusable": len(p.reusable), "part_trained": part,
        "eta_seconds": eta, "path": str(results.results_path(p.experiment, p.preset)),
    }
