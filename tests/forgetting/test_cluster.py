"""Where a sweep's runs train: on a real Dask cluster on 127.0.0.1, a ``dask scheduler`` and ``dask worker``
processes started here, each test bounded by timeouts and ending every process it started. What a batch system does
to a sweep: workers that all go away, a stale worker, a scheduler that is lost, an address that is no Dask
scheduler, CUDA asked for on workers that have none. And what needs no real cluster: a scheduler without workers,
workers that would train at different precisions."""

import contextlib
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import fibook
from fibook.forgetting import results
from fibook.forgetting.cluster import SweepError, check_workers, worker_precision
from fibook.forgetting.sweep import run_sweep
from fibook.paths import PROJECT_ROOT

DASK = Path(sys.executable).with_name("dask")
pytestmark = pytest.mark.slow
TIMEOUT = 10  # --worker-timeout of the sweeps here


def on_a_real_cluster(test):
    """The marks of a test that starts a real cluster: it needs the dask command, and its sweeps train on
    Fashion-MNIST."""
    return pytest.mark.skipif(not DASK.exists(), reason="the dask command is not installed")(pytest.mark.fmnist(test))


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"


@pytest.fixture
def started():
    """``start(argv, **env)`` starts a process in its own session; every one is killed when the test ends."""
    procs = []

    def start(argv, **env):
        proc = subprocess.Popen(argv, env={**os.environ, "OMP_NUM_THREADS": "1", **env}, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def scheduler(start, tmp_path) -> tuple[subprocess.Popen, str]:
    """A Dask scheduler on 127.0.0.1 and its address."""
    file = tmp_path / "scheduler.json"
    proc = start([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
                  "--scheduler-file", str(file)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (file.exists() and file.stat().st_size):
        time.sleep(0.2)
    return proc, json.loads(file.read_text())["address"]


def worker(start, address, pythonpath=PROJECT_ROOT) -> subprocess.Popen:
    """A one-thread Dask worker importing fibook from ``pythonpath``, once it has joined the scheduler."""
    from dask.distributed import Client

    proc = start([str(DASK), "worker", address, "--nthreads", "1", "--no-dashboard"], PYTHONPATH=str(pythonpath))
    with Client(address, timeout=30) as client:
        before = len(client.scheduler_info()["workers"])
        client.wait_for_workers(before + 1, timeout=60)
    return proc


def sweep(store, address, name="optimizers", timeout=TIMEOUT, device="cpu") -> subprocess.Popen:
    """A sweep of ``name`` at the smoke preset on the cluster at ``address``, as a command."""
    cmd = [sys.executable, "-m", "fibook", "sweep", name, "--preset", "smoke", "--quiet", "--device", device,
           "--cluster", address, "--worker-timeout", str(timeout)]
    return subprocess.Popen(cmd, env={**os.environ, "FIBOOK_RESULTS": str(store), "OMP_NUM_THREADS": "1",
                                      "PYTHONPATH": str(PROJECT_ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(proc, timeout=300) -> tuple[int, str]:
    """The exit code and stderr of ``proc`` (killed, with its group, when it runs past ``timeout`` seconds)."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"still running after {timeout} s")
    return proc.returncode, err


def lines_of(store, name="optimizers") -> int:
    path = results.results_path(name, "smoke")
    return path.read_bytes().count(b"\n") if path.exists() else 0


def wait_for_lines(store, n, proc, limit=300):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and lines_of(store) < n and proc.poll() is None:
        time.sleep(0.2)
    assert lines_of(store) >= n, "the sweep recorded nothing"


def the_only_message(err: str) -> str:
    """The sweep's one line of stderr (after its 'waiting for a worker' line); no traceback, no Dask log."""
    lines = [line for line in err.strip().splitlines() if not line.startswith("waiting for a worker")]
    assert len(lines) == 1 and "Traceback" not in err and " - ERROR - " not in err, err
    return lines[0]


@on_a_real_cluster
def test_a_sweep_whose_workers_all_went_away_stops_within_the_worker_timeout(store, started, tmp_path):
    """All workers killed mid-sweep (a batch job's walltime): the sweep waited forever, silently."""
    _, address = scheduler(started, tmp_path)
    w = worker(started, address)
    proc = sweep(store, address)
    wait_for_lines(store, 1, proc)
    os.killpg(w.pid, signal.SIGKILL)
    killed = time.monotonic()
    code, err = finish(proc)
    took = time.monotonic() - killed
    assert code == 2 and took < TIMEOUT + 10, (code, took, err)
    assert "no worker has been connected to the scheduler at " + address in the_only_message(err)
    records = results.read_records(results.results_path("optimizers", "smoke"))
    assert records and all(r.status == "ok" for r in records) and len(records) == lines_of(store) < 12
    print(f"workers killed: exit {code} after {took:.1f} s (--worker-timeout {TIMEOUT})")


def stale_fibook(tmp_path) -> Path:
    """A folder holding a copy of fibook that says it is version 0.0.0-stale (outside git: commit unknown)."""
    stale = tmp_path / "stale"
    shutil.copytree(PROJECT_ROOT / "fibook", stale / "fibook", ignore=shutil.ignore_patterns("__pycache__"))
    init = stale / "fibook" / "__init__.py"
    init.write_text(init.read_text().replace("__version__ = ", "__version__ = '0.0.0-stale'  # was "))
    return stale


@on_a_real_cluster
def test_a_stale_worker_is_refused_and_nothing_it_computed_is_recorded(store, started, tmp_path):
    """A worker with another fibook on its path returned results the sweep recorded as its own."""
    _, address = scheduler(started, tmp_path)
    worker(started, address, pythonpath=stale_fibook(tmp_path))
    code, err = finish(sweep(store, address, name="sgd_remembers"))
    assert code == 2
    assert "runs fibook 0.0.0-stale at commit unknown, this sweep" in the_only_message(err)
    assert "its results are not recorded" in err and lines_of(store, "sgd_remembers") == 0


@on_a_real_cluster
def test_a_stale_worker_that_joins_mid_sweep_is_refused_by_its_first_result(store, started, tmp_path):
    _, address = scheduler(started, tmp_path)
    good = worker(started, address)
    proc = sweep(store, address)
    wait_for_lines(store, 1, proc)
    worker(started, address, pythonpath=stale_fibook(tmp_path))
    os.killpg(good.pid, signal.SIGKILL)  # what is left goes to the stale worker
    code, err = finish(proc)
    assert code == 2 and "runs fibook 0.0.0-stale at commit unknown" in the_only_message(err)
    records = results.read_records(results.results_path("optimizers", "smoke"))
    assert records and {r.provenance["fibook_version"] for r in records} == {fibook.__version__}


@on_a_real_cluster
def test_a_worker_that_cannot_import_fibook_is_named(store, started, tmp_path):
    broken = tmp_path / "broken" / "fibook"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('this fibook is broken')\n")
    _, address = scheduler(started, tmp_path)
    worker(started, address, pythonpath=broken.parent)
    code, err = finish(sweep(store, address, name="sgd_remembers"), timeout=120)
    assert code == 2 and "cannot run fibook" in the_only_message(err) and "this fibook is broken" in err


@on_a_real_cluster
def test_cuda_is_checked_on_the_workers_not_on_this_machine(store, started, tmp_path):
    """--device cuda --cluster was refused on a coordinator without CUDA (a login node), before the cluster was
    asked; the workers are asked, and a worker without CUDA is named."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: its workers would have it too")
    _, address = scheduler(started, tmp_path)
    worker(started, address)
    code, err = finish(sweep(store, address, name="sgd_remembers", device="cuda"), timeout=120)
    assert code == 2
    assert f"of the scheduler at {address}: device 'cuda' was asked for but torch sees no CUDA device" in \
        the_only_message(err)


@on_a_real_cluster
def test_a_lost_scheduler_stops_the_sweep_and_records_no_run_as_failed(store, started, tmp_path):
    sched, address = scheduler(started, tmp_path)
    worker(started, address)
    proc = sweep(store, address)
    wait_for_lines(store, 1, proc)
    os.killpg(sched.pid, signal.SIGKILL)
    code, err = finish(proc, timeout=TIMEOUT + 60)
    assert code == 2, err
    assert "lost the connection to the scheduler" in the_only_message(err)
    records = results.read_records(results.results_path("optimizers", "smoke"))
    assert all(r.status == "ok" for r in records) and len(records) == lines_of(store)


class QuietHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def listening(speaks_http: bool):
    """An address where a server accepts connections and never answers as Dask: silent, or HTTP."""
    if speaks_http:
        server = http.server.HTTPServer(("127.0.0.1", 0), QuietHandler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"tcp://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield f"tcp://127.0.0.1:{s.getsockname()[1]}"


@on_a_real_cluster
@pytest.mark.parametrize("speaks_http", [False, True], ids=["silent", "http"])
def test_an_address_that_is_no_dask_scheduler_fails_within_the_timeout(store, speaks_http):
    with listening(speaks_http) as address:
        start = time.monotonic()
        code, err = finish(sweep(store, address, name="sgd_remembers", timeout=3), timeout=60)
        took = time.monotonic() - start
    assert code == 2 and took < 3 + 30, took  # 3 s to wait, the rest is starting Python and torch
    assert f"the server at {address}" in the_only_message(err) and "Dask scheduler" in err


# A reliability finding of the probe (its finding number in parentheses).

@pytest.mark.usefixtures("no_training")
def test_a_scheduler_without_workers_is_reported_not_waited_on_forever(store, capsys):
    """(7) A sweep on a scheduler with no workers hung at 0 % without a word."""
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=0, dashboard_address=":0") as cluster:
        with pytest.raises(SweepError, match=r"no worker joined the scheduler at .* within 1 s"):
            run_sweep("sgd_remembers", "smoke", cluster=cluster.scheduler_address, worker_timeout=1, progress=False)
    assert "waiting for a worker to join the scheduler" in capsys.readouterr().err


class FakeCluster:
    """A Dask client's ``run`` over named workers: each answers a call as the function would on a worker whose
    precision ``auto`` stands for is given (or raises the given exception)."""

    def __init__(self, precisions):
        self.precisions = precisions

    def run(self, fn, *args, on_error="raise"):
        if fn is worker_precision:
            return dict(self.precisions)
        return {w: fn(*args) for w in self.precisions}


def test_a_cluster_sweep_of_an_auto_precision_scale_trains_at_the_precision_its_workers_agree_on():
    """``auto`` is resolved on the workers, not on the coordinator (a login node without a GPU); workers that
    would train at different precisions, or that cannot answer, stop the sweep with the worker named."""
    agree = FakeCluster({"tcp://a": "bf16", "tcp://b": "bf16"})
    assert check_workers(agree, "tcp://s", "auto", "auto") == "bf16"
    with pytest.raises(SweepError, match="would train at different precisions"):
        check_workers(FakeCluster({"tcp://a": "bf16", "tcp://b": "fp32"}), "tcp://s", "auto", "auto")
    with pytest.raises(SweepError, match="worker tcp://b of the scheduler at tcp://s: no CUDA"):
        check_workers(FakeCluster({"tcp://a": "bf16", "tcp://b": ValueError("no CUDA")}), "tcp://s", "cuda",
                      "auto")
