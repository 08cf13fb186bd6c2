"""The results store: records read back as written, a broken line named and set aside, the latest record of each
run and the filters of ``load``, one sweep at a time per file (also when the file is replaced under it), whole
lines only."""

import os
import signal
import subprocess
import sys
import time

import pytest
from synthetic import record

from fibook.forgetting import results, sweep
from fibook.forgetting.experiments import run_id, runs

pytestmark = pytest.mark.slow


def test_store_reads_back_and_names_a_broken_line(store):
    path = store / "x" / "smoke.jsonl"
    for i in range(3):
        results.append_record(path, record(i))
    assert [r.id for r in results.read_records(path)] == [record(i).id for i in range(3)]
    assert results.read_records(path)[1] == record(1)  # a record reads back as it was written
    with open(path, "ab") as f:
        f.write(b'{"id": "run3", "stat')  # a line cut short
    with pytest.raises(results.CorruptResultsError, match=r"smoke.jsonl, line 4: .*cut short.*fibook repair x"):
        results.read_records(path)
    assert results.repair(path) == 1
    assert len(results.read_records(path)) == 3 and results.repair(path) == 0


def test_repair_refuses_a_broken_line_that_is_not_the_tail(store):
    path = store / "x" / "smoke.jsonl"
    results.append_record(path, record(0))
    with open(path, "ab") as f:
        f.write(b"garbage\n")
    results.append_record(path, record(1))
    with pytest.raises(results.CorruptResultsError, match="line 2"):
        results.read_records(path)
    with pytest.raises(results.CorruptResultsError, match="line 2 is bad but valid records follow; run "
                                                          r"`python -m fibook repair x --preset smoke --line 2`"):
        results.repair(path)
    assert len(path.read_bytes().splitlines()) == 3  # nothing was dropped
    with pytest.raises(results.ResultsError, match="line 3 is a valid record; only a bad line is set aside"):
        results.repair(path, line=3)
    assert results.repair(path, line=2) == 1  # the named bad line is set aside, not deleted
    assert [r.id for r in results.read_records(path)] == [record(0).id, record(1).id]
    assert results.rejected_path(path).read_bytes() == b"garbage\n"


def test_load_keeps_the_latest_record_per_id_and_filters(store):
    path = results.results_path("optimizers", "smoke")
    results.append_record(path, record(0, status="failed", experiment="optimizers", optimizer="adam"))
    results.append_record(path, record(0, experiment="optimizers", optimizer="adam"))
    results.append_record(path, record(1, status="diverged", experiment="optimizers", optimizer="sgd"))
    assert [r.status for r in results.load("optimizers", "smoke")] == ["ok", "diverged"]
    assert [r.config.sigma_w for r in results.load("optimizers", "smoke", optimizer="sgd")] == [0.2]
    assert results.load("optimizers", "smoke", status="ok")[0].config.optimizer == "adam"
    with pytest.raises(ValueError, match="unknown status 'done'"):
        results.load("optimizers", "smoke", status="done")


def test_load_rejects_an_unknown_experiment_or_filter_field(store):
    with pytest.raises(ValueError, match="unknown experiment 'optimizer'; choose one of: sgd_remembers"):
        results.load("optimizer", "smoke")
    with pytest.raises(ValueError, match="unknown config field.* optimiser.*choose from: dataset"):
        results.load("optimizers", "smoke", optimiser="adam")
    assert results.load("optimizers", "smoke", optimizer="adam") == []  # a known field that matches nothing


# The reliability findings, one test each (finding numbers of the probe in parentheses).

@pytest.mark.usefixtures("no_training")
def test_one_sweep_at_a_time_writes_a_results_file(store):
    """(5) Two sweeps of one file trained every run twice."""
    path = results.results_path("sgd_remembers", "smoke")
    with results.writing(path):
        with pytest.raises(results.ResultsBusyError, match="another sweep .* is writing .*sgd_remembers"):
            sweep.run_sweep("sgd_remembers", "smoke", progress=False)
        with pytest.raises(results.ResultsBusyError):
            results.repair(path)
    path.write_bytes(b"{\"id\": \"cut")
    assert results.repair(path) == 1  # released


def test_a_short_write_is_cut_back_to_the_last_whole_line(store, monkeypatch):
    """(6) A full disk left a cut line in the file."""
    path = store / "x" / "smoke.jsonl"
    results.append_record(path, record(0))
    before = path.read_bytes()
    real_write = os.write
    monkeypatch.setattr(results.os, "write", lambda fd, data: real_write(fd, data[:len(data) // 2]))
    with pytest.raises(results.ResultsError, match="short write.*the partial line was removed"):
        results.append_record(path, record(1))
    assert path.read_bytes() == before
    monkeypatch.setattr(results.os, "write", lambda fd, data: (_ for _ in ()).throw(OSError(28, "No space")))
    with pytest.raises(results.ResultsError, match="No space"):
        results.append_record(path, record(1))
    assert path.read_bytes() == before


@pytest.mark.fmnist
def test_the_lock_holds_when_the_results_file_is_replaced_mid_sweep(store):
    """A sweep locked the file it opened first; `cp F F.new && mv F.new F` (git checkout, rsync, an editor) left a
    new file unlocked, and a second sweep trained 9 runs twice (21 lines for 12 runs)."""
    env = {**os.environ, "FIBOOK_RESULTS": str(store), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "fibook", "sweep", "optimizers", "--preset", "smoke", "--quiet"]
    path = results.results_path("optimizers", "smoke")
    first = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        deadline = time.time() + 300
        while time.time() < deadline and (not path.exists() or path.read_bytes().count(b"\n") < 3):
            time.sleep(0.2)
        copy = path.with_name("smoke.jsonl.new")
        copy.write_bytes(path.read_bytes())
        os.replace(copy, path)
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2
        assert "another sweep (or repair) is writing" in second.stderr and "Traceback" not in second.stderr
        out, err = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert first.returncode == 0, err
    assert "was replaced while this sweep wrote it" in err
    ids = [r.id for r in results.read_records(path)]
    assert sorted(ids) == sorted(run_id(c) for c in runs("optimizers", "smoke"))  # one line per run
