"""Where a sweep's runs train and how their records come back: in this process (``workers=1``), on a Dask
``LocalCluster`` of ``workers`` processes with one thread each (on a shared CPU, two threads per process were
measured up to 11x slower than one), or on the workers of the Dask scheduler at ``cluster`` (a dask-jobqueue
Slurm/PBS cluster, a multi-GPU dask-cuda cluster, ...). A task trains one group of runs (:func:`train_group`: one
run, or a population fused into one network) and returns their records; a run that raises is recorded as
``failed`` with its traceback, and so is a group whose worker died.

Every worker of a cluster is checked before it trains: it runs this fibook (same version and commit, which every
result it returns must carry too), it has the device, and it says which precision ``auto`` stands for there. A
cluster sweep stops with :class:`SweepError`, recording no unfinished run, when no worker has been connected for
``worker_timeout`` seconds or the scheduler is lost; a rerun trains what is missing.

Serves :func:`fibook.forgetting.sweep.run_sweep`: every Part I chapter's rerun cell (``RERUN = True``) and
``python -m fibook sweep`` (``--workers``, ``--cluster``, ``--worker-timeout``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterable
from concurrent.futures import CancelledError

import torch

from fibook.forgetting.config import TrainConfig
from fibook.forgetting.devices import check_device, resolve_device, resolve_precision
from fibook.forgetting.experiments import run_id
from fibook.forgetting.records import Record
from fibook.forgetting.results import progress_path
from fibook.forgetting.run_state import RunResult
from fibook.forgetting.train import train_population
from fibook.provenance import provenance

WORKER_TIMEOUT = 60.0  # seconds to wait for a scheduler to answer and for its first worker to join


class SweepError(RuntimeError):
    """A sweep cannot start or go on (no scheduler, no workers); the message says what to do."""


def make_record(result: RunResult, experiment: str, preset: str, prov: dict) -> Record:
    return Record(id=run_id(result.config), experiment=experiment, scale=preset, status=result.status,
                  config=result.config, summary=result.summary, history=result.history,
                  layer_names=result.layer_names, diverged_epoch=result.diverged_epoch,
                  provenance={**prov, "device": result.device, "wall_seconds": round(result.wall_seconds, 3),
                              **({"resumed": result.resumed} if result.resumed else {})})


def train_group(configs: list[TrainConfig], experiment: str, preset: str, device: str) -> list[Record]:
    """Train one group of runs (one, or a fusable population) and return their records; never raises. The group
    saves its state as it trains, on the machine that trains it (:func:`.results.progress_path`), so a rerun there
    resumes it from its last saved epoch."""
    prov = provenance(device if device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu"))
    start = time.perf_counter()
    try:
        saved = progress_path(experiment, preset, [run_id(c) for c in configs])
        return [make_record(r, experiment, preset, prov) for r in train_population(configs, device, saved)]
    except Exception:  # a run that raises is recorded, not lost, and the sweep goes on
        wall = (time.perf_counter() - start) / len(configs)
        return failed_records(configs, experiment, preset, traceback.format_exc(limit=20),
                              {**prov, "wall_seconds": round(wall, 3)})


def failed_records(configs: list[TrainConfig], experiment: str, preset: str, error: str, prov: dict) -> list[Record]:
    """``failed`` records for runs that raised (or whose worker died); a rerun of the sweep retries them."""
    return [Record(id=run_id(c), experiment=experiment, scale=preset, status="failed", config=c, error=error,
                   provenance=prov) for c in configs]


@contextlib.contextmanager
def _sigint_ignored():
    """Processes started in the block ignore Ctrl-C (they inherit SIG_IGN), so only this process handles it."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def connect(cluster: str, timeout: float):
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
    """On a worker: ``device`` checked there (:func:`.devices.check_device`), and the precision a preset's ``precision``
    (maybe ``auto``) stands for on it."""
    return resolve_precision(precision, resolve_device(check_device(device)))


def check_workers(client, cluster: str, device: str, precision: str) -> str:
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
def distributed_quiet():
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


def execute(groups: list[list[TrainConfig]], experiment: str, preset: str, device: str, workers: int,
            client, cluster: str | None, worker_timeout: float) -> Iterable[list[Record]]:
    """The records of each group of runs of ``experiment`` at ``preset`` as it finishes: in this process, on a
    local cluster of ``workers`` processes, or through ``client`` of the scheduler at ``cluster``."""
    args = (experiment, preset, device)
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
