"""Running an experiment's grid: resumable, parallel on local worker processes or any Dask cluster.

``run_sweep(name, preset)`` trains every run of the experiment that its results file does not hold yet and
appends each finished run as soon as it is done; interrupted at any point, a rerun picks up exactly the runs
that are missing. A run finished under another experiment of the same scale (same config, same id) is copied
instead of retrained. Divergence is a result (``diverged``); an exception inside a run is recorded as
``failed`` with its traceback, the sweep goes on, and a rerun tries that run again.

Parallelism: ``workers=1`` trains in this process. More workers, or a ``cluster`` address, use Dask
distributed: a ``LocalCluster`` of ``workers`` processes with one thread each (on a shared CPU, two threads per
process were measured up to 11x slower than one), or the scheduler at ``cluster`` (a dask-jobqueue Slurm/PBS
cluster, a multi-GPU dask-cuda cluster, ...). Every worker of a cluster is checked before it trains: it runs
this fibook (same version and commit, which every result it returns must carry too), it has the device, and it
says which precision ``auto`` stands for there. A cluster sweep stops with :class:`SweepError`, recording no
unfinished run, when no worker has been connected for ``worker_timeout`` seconds or the scheduler is lost; a
rerun trains what is missing. ``fuse=True`` trains runs that differ only in sigma_w and seed as
one fused network (:mod:`fibook.forgetting.fused`), the fast path on a GPU. A fused network sums in another
order than one network at a time, so in fp32 its numbers differ and its runs are other runs: their configs say
``fused: true`` and have their own ids (in fp64 the two agree to 1e-12, which ``tests/forgetting/test_fused.py``
checks).

Serves every Part I chapter's rerun cell (``RERUN = True``) and ``python -m fibook sweep``.
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
import threading
import time
import traceback
from collections.abc import Iterable
from concurrent.futures import CancelledError
from dataclasses import dataclass

import torch

from fibook.checks import whole
from fibook.forgetting import results
from fibook.forgetting.devices import resolve_device, resolve_precision
from fibook.forgetting.experiments import EXPERIMENTS, get_experiment, run_id, runs
from fibook.forgetting.results import Record
from fibook.forgetting.train import FUSABLE, RunResult, TrainConfig, dataset, train_population
from fibook.presets import get_preset
from fibook.provenance import provenance

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


def make_record(result: RunResult, experiment: str, preset: str, prov: dict) -> Record:
    return Record(id=run_id(result.config), experiment=experiment, scale=preset, status=result.status,
                  config=result.config, summary=result.summary, history=result.history,
                  layer_names=result.layer_names, diverged_epoch=result.diverged_epoch,
                  provenance={**prov, "device": result.device, "wall_seconds": round(result.wall_seconds, 3)})


def train_group(configs: list[TrainConfig], experiment: str, preset: str, device: str) -> list[Record]:
    """Train one group of runs (one, or a fusable population) and return their records; never raises."""
    prov = provenance(device if device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu"))
    start = time.perf_counter()
    try:
        return [make_record(r, experiment, preset, prov) for r in train_population(configs, device)]
    except Exception:  # a run that raises is recorded, not lost, and the sweep goes on
        wall = (time.perf_counter() - start) / len(configs)
        return failed_records(configs, experiment, preset, traceback.format_exc(limit=20),
                              {**prov, "wall_seconds": round(wall, 3)})


def failed_records(configs: list[TrainConfig], experiment: str, preset: str, error: str, prov: dict) -> list[Record]:
    """``failed`` records for runs that raised (or whose worker died); a rerun of the sweep retries them."""
    return [Record(id=run_id(c), experiment=experiment, scale=preset, status="failed", config=c, error=error,
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


@contextlib.contextmanager
def _sigint_ignored():
    """Processes started in the block ignore Ctrl-C (they inherit SIG_IGN), so only this process handles it."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _connect(cluster: str, timeout: float):
    """A client of the Dask scheduler at ``cluster`` once at least one worker has joined it. Each wait is
    bounded by ``timeout``: an address where nothing listens, or where a server listens that does not speak
    Dask (and would keep a client waiting, or send it garbage), raises :class:`SweepError` saying so."""
    from dask.distributed import Client

    box: dict[str, object] = {}

    def connect():
        try:
            box["client"] = Client(cluster, timeout=timeout)
        except Exception as e:  # noqa: BLE001 - whatever a non-Dask server makes the client raise is reported
            box["error"] = e

    thread = threading.Thread(target=connect, name="fibook-connect", daemon=True)
    thread.start()
    thread.join(timeout + 2)
    if thread.is_alive():
        raise SweepError(f"the server at {cluster} accepted a connection but did not answer as a Dask scheduler "
                         f"within {timeout:g} s; check the address (a scheduler prints it as `Scheduler at: ...`)")
    error = box.get("error")
    if isinstance(error, OSError):
        raise SweepError(f"no Dask scheduler answered at {cluster} within {timeout:g} s ({error}); check the "
                         "address, or leave out --cluster to use local workers")
    if error is not None:
        raise SweepError(f"the server at {cluster} did not answer as a Dask scheduler ({type(error).__name__}: "
                         f"{str(error)[:200]}); check the address")
    client = box["client"]
    print(f"waiting for a worker to join the scheduler at {cluster} (up to {timeout:g} s)", file=sys.stderr)
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:
        client.close()
        raise SweepError(f"no worker joined the scheduler at {cluster} within {timeout:g} s; start workers "
                         f"(e.g. `dask worker {cluster} --nthreads 1`) or raise --worker-timeout") from None
    return client


def code_identity(prov: dict) -> tuple[object, object]:
    """The fibook version and git commit a provenance names: the code that computed a result."""
    return prov.get("fibook_version"), prov.get("git_commit")


def _stale(worker: str, theirs: tuple, ours: tuple) -> SweepError:
    return SweepError(f"worker {worker} runs fibook {theirs[0]} at commit {theirs[1]}, this sweep {ours[0]} at "
                      f"commit {ours[1]}; its results are not recorded: install this checkout on every worker "
                      "(the same commit) and rerun")


def worker_precision(device: str, precision: str) -> str:
    """On a worker: ``device`` checked there (:func:`check_device`), and the precision a preset's ``precision``
    (maybe ``auto``) stands for on it."""
    return resolve_precision(precision, resolve_device(check_device(device)))


def _check_workers(client, cluster: str, device: str, precision: str) -> str:
    """Check every worker of the scheduler at ``cluster``: it imports this fibook (same version and commit) and
    sees ``device``; returns the precision that the preset's ``precision`` stands for there, on which all agree."""
    ours = code_identity(provenance("cpu"))
    theirs = client.run(provenance, "cpu", on_error="return")
    for worker, prov in theirs.items():
        if isinstance(prov, Exception):
            raise SweepError(f"worker {worker} of the scheduler at {cluster} cannot run fibook "
                             f"({type(prov).__name__}: {prov}); install this checkout on every worker")
        if code_identity(prov) != ours:
            raise _stale(worker, code_identity(prov), ours)
    answers = client.run(worker_precision, device, precision, on_error="return")
    for worker, answer in answers.items():
        if isinstance(answer, Exception):
            raise SweepError(f"worker {worker} of the scheduler at {cluster}: {answer}")
    if len(set(answers.values())) > 1:
        raise SweepError(f"the workers of the scheduler at {cluster} would train at different precisions "
                         f"({answers}); give every worker the same kind of device, or name --device")
    return next(iter(answers.values()))


def quiet_distributed() -> list[tuple[logging.Logger, int]]:
    """Silence Dask's own logging (a lost scheduler logs ERROR tracebacks, some after its client is closed; the
    sweep says what happened); returns each logger with the level it had."""
    import distributed  # noqa: F401 - its loggers exist from its import on, with the levels of its configuration

    loggers = [logging.getLogger(name) for name in ["distributed", *logging.root.manager.loggerDict]
               if name.split(".")[0] == "distributed"]  # Dask's configuration gives some their own level
    before = [(logger, logger.level) for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    return before


@contextlib.contextmanager
def _distributed_quiet():
    """Dask's logging silenced for the block (:func:`quiet_distributed`)."""
    before = quiet_distributed()
    try:
        yield
    finally:
        for logger, level in before:
            logger.setLevel(level)


def _gather(client, futures: dict, args: tuple, cluster: str | None,
            worker_timeout: float) -> Iterable[list[Record]]:
    """The records of each future (a group of runs) as it finishes. A group whose worker was killed while
    training it (Dask gives up on it after several workers died on it) is recorded as ``failed``. With a
    ``cluster``: a result computed by other code (:func:`code_identity`) raises, naming the worker; so do a lost
    scheduler, and no worker connected for ``worker_timeout`` seconds at any time. Runs that did not finish are
    not recorded: a rerun trains them."""
    from dask.distributed import KilledWorker, wait

    ours = code_identity(provenance("cpu")) if cluster is not None else None
    pending, seen = set(futures), time.monotonic()

    def lost() -> SweepError:
        return SweepError(f"lost the connection to the scheduler{f' at {cluster}' if cluster else ''}; "
                          f"{len(pending)} group(s) of runs not finished are left for a rerun (finished runs are "
                          "kept)")

    while pending:
        try:
            done, pending = wait(pending, timeout=1.0, return_when="FIRST_COMPLETED")
        except TimeoutError:
            done = set()
        except CancelledError:  # the scheduler is gone, and with it every future
            raise lost() from None
        for future in done:
            if future.cancelled():
                raise lost()
            error = future.exception()
            if isinstance(error, KilledWorker):
                yield failed_records(futures[future], *args[:2], f"{type(error).__name__}: {error}", {})
            elif error is not None:
                raise SweepError(f"a worker could not run a group of runs ({type(error).__name__}: {error}); check "
                                 "that every worker has this fibook installed")
            else:
                records = future.result()
                found = {code_identity(r.provenance) for r in records}
                if ours is not None and found != {ours}:
                    who = ", ".join(client.who_has([future]).get(future.key, ())) or "(unknown)"
                    raise _stale(who, next(iter(found - {ours})), ours)
                yield records
        if cluster is None or not pending:
            continue
        if client.status != "running":
            raise lost()
        if client.scheduler_info()["workers"]:
            seen = time.monotonic()
        elif time.monotonic() - seen > worker_timeout:
            raise SweepError(f"no worker has been connected to the scheduler at {cluster} for {worker_timeout:g} s; "
                             f"{len(pending)} group(s) of runs not finished are left for a rerun (finished runs are "
                             f"kept): start workers (e.g. `dask worker {cluster} --nthreads 1`) and rerun")


def _execute(groups: list[list[TrainConfig]], plan_: Plan, device: str, workers: int,
             client, cluster: str | None, worker_timeout: float) -> Iterable[list[Record]]:
    """The records of each group as it finishes: in this process, on a local cluster of ``workers`` processes,
    or through ``client`` of the scheduler at ``cluster``."""
    args = (plan_.experiment, plan_.preset, device)
    if client is None and workers == 1:
        for g in groups:
            yield train_group(g, *args)
        return
    import dask
    from dask.distributed import Client, LocalCluster

    local = None
    if client is None:
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
    try:
        futures = {client.submit(train_group, g, *args, pure=False): g for g in groups}
        yield from _gather(client, futures, args, cluster, worker_timeout)
    finally:
        if local is not None:
            client.close()
            local.close()


def run_sweep(name: str, preset: str, workers: int = 1, device: str = "auto",
              cluster: str | None = None, fuse: bool = False, max_population: int = 16,
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
            stack.enter_context(_distributed_quiet())
            client = _connect(cluster, worker_timeout)
            stack.callback(client.close)
            auto = _check_workers(client, cluster, device, get_preset(preset_name).forgetting.precision)
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
        from tqdm.auto import tqdm

        bar = tqdm(total=len(p.pending), desc=f"{p.experiment} [{p.preset}]", unit="run", disable=not progress)
        try:
            for records in _execute(groups, p, device, workers, client, cluster, worker_timeout):
                for record in records:
                    counts[record.status] += appender.append(record)
                bar.update(len(records))
        except KeyboardInterrupt:
            raise SweepInterrupted(len(results.read_records(path)) - before, path) from None
        finally:
            bar.close()
    return counts


def status(name: str, preset: str, workers: int = 1, fuse: bool = False,
           device: str = "auto") -> dict[str, object]:
    """Done / diverged / failed / remaining runs (of the fused runs with ``fuse``; at the precision a sweep on
    ``device`` runs, :func:`plan`), and the time left at ``workers`` parallel workers, estimated from the median
    wall time of the finished runs."""
    p = plan(name, preset, fuse, device)
    finished = list(p.done.values())
    walls = [r.provenance["wall_seconds"] for r in finished if "wall_seconds" in r.provenance]
    remaining = len(p.pending) + len(p.reusable)
    eta = statistics.median(walls) * len(p.pending) / workers if walls else None
    return {
        "experiment": p.experiment, "preset": p.preset, "total": p.total,
        "ok": sum(r.status == "ok" for r in finished),
        "diverged": sum(r.status == "diverged" for r in finished),
        "failed": len(p.failed), "remaining": remaining, "reusable": len(p.reusable),
        "eta_seconds": eta, "path": str(results.results_path(p.experiment, p.preset)),
    }
