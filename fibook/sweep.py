"""Running an experiment's grid: resumable, parallel on local worker processes or any Dask cluster.

``run_sweep(name, scale)`` trains every run of the experiment that its results file does not hold yet and
appends each finished run as soon as it is done; interrupted at any point, a rerun picks up exactly the runs
that are missing. A run finished under another experiment of the same scale (same config, same id) is copied
instead of retrained. Divergence is a result (``diverged``); an exception inside a run is recorded as
``failed`` with its traceback, the sweep goes on, and a rerun tries that run again.

Parallelism: ``workers=1`` trains in this process. More workers, or a ``cluster`` address, use Dask
distributed: a ``LocalCluster`` of ``workers`` processes with one thread each (on a shared CPU, two threads per
process were measured up to 11x slower than one), or the scheduler at ``cluster`` (a dask-jobqueue Slurm/PBS
cluster, a multi-GPU dask-cuda cluster, ...). ``fuse=True`` trains runs that differ only in sigma_w and seed as
one fused network (:mod:`fibook.forgetting.fused`), the fast path on a GPU. A fused network sums in another
order than one network at a time, so in fp32 its numbers differ and its runs are other runs: their configs say
``fused: true`` and have their own ids (in fp64 the two agree to 1e-12, which ``tests/test_fused.py`` checks).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import signal
import statistics
import sys
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass

import torch

from fibook import results
from fibook.checks import whole
from fibook.forgetting.experiments import EXPERIMENTS, get_experiment, run_id, runs
from fibook.forgetting.train import FUSABLE, RunResult, TrainConfig, dataset, train_population
from fibook.provenance import provenance
from fibook.results import Record
from fibook.scales import get_scale

DEVICES = ("auto", "cpu", "cuda")
WORKER_TIMEOUT = 60.0  # seconds to wait for a scheduler to answer and for its first worker to join
MAX_WORKERS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class SweepError(RuntimeError):
    """A sweep cannot start or go on (no scheduler, no workers); the message says what to do."""


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a sweep; ``kept`` runs of this call were recorded and a rerun continues from them."""

    def __init__(self, kept: int, path):
        super().__init__(f"interrupted: {kept} run(s) of this sweep kept in {path}; rerun to continue")
        self.kept = kept


def check_device(device: str) -> str:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` with N a visible GPU's index; CUDA must be present."""
    if not isinstance(device, str) or (device not in DEVICES and not re.fullmatch(r"cuda:\d+", device)):
        raise ValueError(f"unknown device {device!r}; choose one of: {', '.join(DEVICES)} (or cuda:N, N = 0, 1, ...)")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} was asked for but torch sees no CUDA device; use --device cpu")
    if device.startswith("cuda:") and int(device[5:]) >= torch.cuda.device_count():
        raise ValueError(f"device {device!r}: torch sees {torch.cuda.device_count()} GPU(s), "
                         f"indices 0 to {torch.cuda.device_count() - 1}")
    return device


def make_record(result: RunResult, experiment: str, scale: str, prov: dict) -> Record:
    return Record(id=run_id(result.config), experiment=experiment, scale=scale, status=result.status,
                  config=result.config, summary=result.summary, history=result.history,
                  layer_names=result.layer_names, diverged_epoch=result.diverged_epoch,
                  provenance={**prov, "device": result.device, "wall_seconds": round(result.wall_seconds, 3)})


def train_group(configs: list[TrainConfig], experiment: str, scale: str, device: str) -> list[Record]:
    """Train one group of runs (one, or a fusable population) and return their records; never raises."""
    prov = provenance(device if device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu"))
    start = time.perf_counter()
    try:
        return [make_record(r, experiment, scale, prov) for r in train_population(configs, device)]
    except Exception:  # a run that raises is recorded, not lost, and the sweep goes on
        wall = (time.perf_counter() - start) / len(configs)
        return failed_records(configs, experiment, scale, traceback.format_exc(limit=20),
                              {**prov, "wall_seconds": round(wall, 3)})


def failed_records(configs: list[TrainConfig], experiment: str, scale: str, error: str, prov: dict) -> list[Record]:
    """``failed`` records for runs that raised (or whose worker died); a rerun of the sweep retries them."""
    return [Record(id=run_id(c), experiment=experiment, scale=scale, status="failed", config=c, error=error,
                   provenance=prov) for c in configs]


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
    scale: str
    total: int
    done: dict[str, Record]  # id -> latest record, ok or diverged
    failed: dict[str, Record]
    reusable: dict[str, Record]  # id -> a finished record of another experiment at this scale
    pending: list[TrainConfig]


def plan(name: str, scale: str | None = None, fuse: bool = False, device: str = "auto") -> Plan:
    """Compare the experiment's grid (its fused runs with ``fuse``, at the precision a scale's ``auto`` stands for
    on ``device``) with its results file and the other experiments' files of this scale."""
    exp = get_experiment(name)
    scale_name = get_scale(scale).name
    configs = runs(exp.name, scale_name, fused=fuse, device=check_device(device))
    records = {r.id: r for r in results.latest(results.read_records(results.results_path(name, scale_name)))}
    ids = [run_id(c) for c in configs]
    done = {i: records[i] for i in ids if i in records and records[i].status != "failed"}
    failed = {i: records[i] for i in ids if i in records and records[i].status == "failed"}
    others: dict[str, Record] = {}
    for other in EXPERIMENTS:
        if other != name:
            others |= {r.id: r for r in _neighbour_records(results.results_path(other, scale_name))
                       if r.status != "failed"}
    todo = [(i, c) for i, c in zip(ids, configs, strict=True) if i not in done]
    reusable = {i: others[i] for i, _ in todo if i in others}
    pending = [c for i, c in todo if i not in reusable]
    return Plan(exp.name, scale_name, len(configs), done, failed, reusable, pending)


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
    with the loader's message (:class:`fibook.data.DatasetError`, naming the command that fetches it) instead
    of failing every run. Each is loaded once per process, so training in this process reuses it."""
    for name in sorted({c.dataset for c in configs}):
        dataset(name)


@contextlib.contextmanager
def _sigint_ignored():
    """Processes started in the block ignore Ctrl-C (they inherit SIG_IGN), so only this process handles it."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _connect(cluster: str, timeout: float):
    """A client of the scheduler at ``cluster`` once at least one worker has joined it, within ``timeout``."""
    from dask.distributed import Client

    try:
        client = Client(cluster, timeout=timeout)
    except OSError as e:
        raise SweepError(f"no Dask scheduler answered at {cluster} within {timeout:g} s ({e}); check the "
                         "address, or leave out --cluster to use local workers") from None
    print(f"waiting for a worker to join the scheduler at {cluster} (up to {timeout:g} s)", file=sys.stderr)
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:
        client.close()
        raise SweepError(f"no worker joined the scheduler at {cluster} within {timeout:g} s; start workers "
                         f"(e.g. `dask worker {cluster} --nthreads 1`) or raise --worker-timeout") from None
    return client


def _execute(groups: list[list[TrainConfig]], plan_: Plan, device: str, workers: int,
             cluster: str | None, worker_timeout: float) -> Iterable[list[Record]]:
    args = (plan_.experiment, plan_.scale, device)
    if workers == 1 and cluster is None:
        for g in groups:
            yield train_group(g, *args)
        return
    import dask
    from dask.distributed import Client, LocalCluster, as_completed

    local = None
    if cluster is None:
        # Dask starts workers with MALLOC_TRIM_THRESHOLD_=65536, which made a training step 1.5x slower here
        # (glibc returns memory to the OS after nearly every free); keep only its one-thread settings.
        one_thread = {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1}
        with dask.config.set({"distributed.nanny.pre-spawn-environ": one_thread}), _sigint_ignored():
            # local workers log nothing below CRITICAL: a run that fails is recorded with its traceback and a
            # worker that dies fails its future, while Ctrl-C cancels running tasks (a warning per worker) and
            # can close the scheduler under a worker's heartbeat in flight (an ERROR with a traceback)
            local = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                                 silence_logs=logging.CRITICAL)
        client = Client(local)
    else:
        client = _connect(cluster, worker_timeout)
    try:
        futures = {client.submit(train_group, g, *args, pure=False): g for g in groups}
        for future in as_completed(futures):
            try:
                yield future.result()
            except Exception:  # the worker itself died (killed, out of memory, connection lost)
                yield failed_records(futures[future], *args[:2], traceback.format_exc(limit=5), {})
    finally:
        client.close()
        if local is not None:
            local.close()


def run_sweep(name: str, scale: str | None = None, workers: int = 1, device: str = "auto",
              cluster: str | None = None, fuse: bool = False, max_population: int = 16,
              progress: bool = True, worker_timeout: float = WORKER_TIMEOUT) -> dict[str, int]:
    """Run what is missing of experiment ``name`` at ``scale``; returns counts by status of this call's runs.

    The results file is locked for the whole sweep (a second sweep of it raises
    :class:`fibook.results.ResultsBusyError`); Ctrl-C raises :class:`SweepInterrupted` after the runs finished so
    far are recorded."""
    whole("workers", workers)
    if cluster is None and workers > MAX_WORKERS:
        raise ValueError(f"workers must be at most {MAX_WORKERS}, the CPU cores this process may use (one "
                         f"single-threaded worker per core), got {workers}")
    whole("max_population", max_population)
    if not (isinstance(worker_timeout, (int, float)) and worker_timeout > 0):
        raise ValueError(f"worker_timeout must be a number of seconds > 0, got {worker_timeout!r}")
    device = check_device(device)
    exp, scale_name = get_experiment(name), get_scale(scale).name
    if cluster is not None and device == "auto" and get_scale(scale_name).forgetting.precision == "auto":
        raise ValueError(f"scale {scale_name!r} trains at the precision that is fast on the workers' device, which "
                         "this process cannot see: with a cluster, name the device (cuda or cpu)")
    path = results.results_path(exp.name, scale_name)
    counts = {s: 0 for s in results.STATUSES} | {"reused": 0}
    with results.writing(path) as appender:
        # what this call keeps is counted in the file: Ctrl-C can land between a record's write and its count
        before = len(results.read_records(path))
        p = plan(exp.name, scale_name, fuse, device)
        if cluster is None:
            check_data(p.pending)
        for record in p.reusable.values():
            counts["reused"] += appender.append(dataclasses.replace(record, experiment=p.experiment))
        groups = group_runs(p.pending, max_population)
        from tqdm.auto import tqdm

        bar = tqdm(total=len(p.pending), desc=f"{p.experiment} [{p.scale}]", unit="run", disable=not progress)
        try:
            for records in _execute(groups, p, device, workers, cluster, worker_timeout):
                for record in records:
                    counts[record.status] += appender.append(record)
                bar.update(len(records))
        except KeyboardInterrupt:
            raise SweepInterrupted(len(results.read_records(path)) - before, path) from None
        finally:
            bar.close()
    return counts


def status(name: str, scale: str | None = None, workers: int = 1, fuse: bool = False,
           device: str = "auto") -> dict[str, object]:
    """Done / diverged / failed / remaining runs (of the fused runs with ``fuse``; at the precision a sweep on
    ``device`` runs, :func:`plan`), and the time left at ``workers`` parallel workers, estimated from the median
    wall time of the finished runs."""
    p = plan(name, scale, fuse, device)
    finished = list(p.done.values())
    walls = [r.provenance["wall_seconds"] for r in finished if "wall_seconds" in r.provenance]
    remaining = len(p.pending) + len(p.reusable)
    eta = statistics.median(walls) * len(p.pending) / workers if walls else None
    return {
        "experiment": p.experiment, "scale": p.scale, "total": p.total,
        "ok": sum(r.status == "ok" for r in finished),
        "diverged": sum(r.status == "diverged" for r in finished),
        "failed": len(p.failed), "remaining": remaining, "reusable": len(p.reusable),
        "eta_seconds": eta, "path": str(results.results_path(p.experiment, p.scale)),
    }
