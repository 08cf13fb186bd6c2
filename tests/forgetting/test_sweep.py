"""The sweep engine: resumption after SIGKILL and Ctrl-C, divergence and failure, fused populations, local Dask
workers, a results store that cannot be written found before any training, and the sweep commands."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from synthetic import record

from fibook.__main__ import main
from fibook.forgetting import cluster, experiments, results, sweep
from fibook.forgetting.experiments import Experiment, run_id, runs

pytestmark = pytest.mark.slow


def test_fusing_groups_only_runs_that_differ_in_sigma_and_seed():
    configs = runs("optimizers", "book", fused=True)
    groups = sweep.group_runs(configs, max_population=3)
    assert sum(len(g) for g in groups) == len(configs)
    for g in groups:
        assert len(g) <= 3 and len({(c.optimizer, c.lr, c.weight_decay) for c in g}) == 1
    assert len(sweep.group_runs(runs("optimizers", "book"), max_population=3)) == len(configs)


@pytest.mark.fmnist
def test_divergence_and_failure_are_recorded_and_the_sweep_goes_on(store, monkeypatch):
    toy = Experiment("toy", "one sane and one diverging arm",
                     lambda f, g: [{"optimizer": "sgd", "lr": 0.05}, {"optimizer": "sgd", "lr": 10.0}],
                     lambda f, g: (50.0,))
    monkeypatch.setitem(experiments.EXPERIMENTS, "toy", toy)
    counts = sweep.run_sweep("toy", "smoke", progress=False)
    assert counts["ok"] == 1 and counts["diverged"] == 1
    by_lr = {r.config.lr: r for r in results.load("toy", "smoke")}
    assert by_lr[10.0].status == "diverged" and by_lr[10.0].diverged_epoch == 1

    real = cluster.train_population

    def flaky(configs, *args, **kwargs):
        if configs[0].sigma_w == 0.1:
            raise RuntimeError("simulated crash")
        return real(configs, *args, **kwargs)

    monkeypatch.setattr(cluster, "train_population", flaky)
    counts = sweep.run_sweep("sgd_remembers", "smoke", progress=False)
    assert counts == {"ok": 1, "diverged": 0, "failed": 1, "reused": 0}
    failed = results.load("sgd_remembers", "smoke", status="failed")
    assert len(failed) == 1 and "simulated crash" in failed[0].error
    assert sweep.status("sgd_remembers", "smoke")["failed"] == 1
    monkeypatch.setattr(cluster, "train_population", real)
    assert sweep.run_sweep("sgd_remembers", "smoke", progress=False)["ok"] == 1  # the failed run is retried
    final = results.load("sgd_remembers", "smoke")
    assert sorted(r.status for r in final) == ["ok", "ok"]
    # a finished run of another experiment with the same config is copied, not retrained
    assert sweep.run_sweep("optimizers", "smoke", progress=False, workers=1)["reused"] == 2


@pytest.mark.fmnist
def test_sigkill_mid_sweep_then_rerun_records_every_run_exactly_once(store):
    env = {**os.environ, "FIBOOK_RESULTS": str(store), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "fibook", "sweep", "optimizers", "--preset", "smoke", "--quiet"]
    path = results.results_path("optimizers", "smoke")
    proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and (not path.exists() or len(path.read_bytes().splitlines()) < 3):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = len(results.read_records(path))  # whole lines only: no repair needed
    assert 3 <= killed_at < 12
    subprocess.run(cmd, env=env, check=True, timeout=600, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ids = [r.id for r in results.read_records(path)]
    assert sorted(ids) == sorted(run_id(c) for c in runs("optimizers", "smoke"))  # each exactly once


@pytest.mark.fmnist
def test_two_worker_dask_local_cluster(store):
    counts = sweep.run_sweep("sgd_remembers", "smoke", workers=2, progress=False)
    assert counts["ok"] == 2
    records = results.load("sgd_remembers", "smoke")
    prov = records[0].provenance
    assert {"git_commit", "torch", "device_name", "wall_seconds", "date"} <= set(prov)
    line = results.results_path("sgd_remembers", "smoke").read_text().splitlines()[0]
    required = {"dataset", "arch", "width", "sigma_w", "optimizer", "lr", "weight_decay", "batch_size", "epochs",
                "seed"}
    parsed = json.loads(line)
    assert required <= set(parsed["config"])
    assert {"selected_epoch", "selected_test_acc", "final_train_acc", "tau_interp", "repair_gap",
            "init_weight_norm", "final_weight_norm", "clocks"} <= set(parsed["summary"])
    status = sweep.status("sgd_remembers", "smoke", workers=2)
    assert status["ok"] == 2 and status["remaining"] == 0 and status["eta_seconds"] == 0


def test_time_left_counts_the_epochs_pending_not_the_runs():
    # median 20 s an epoch; one run of 40 epochs and one of 400 on two workers
    assert sweep.time_left([10.0, 20.0, 30.0], [40, 400], workers=2) == pytest.approx(20.0 * 440 / 2)
    assert sweep.time_left([20.0], [400], workers=1) == pytest.approx(10 * sweep.time_left([20.0], [40], workers=1))
    assert sweep.time_left([20.0], [], workers=1) == 0
    assert sweep.time_left([], [40], workers=1) is None


def test_cli_rejects_bad_arguments_with_the_allowed_values(capsys, store):
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "nope"])
    assert exit_info.value.code == 2
    assert "choose one of: sgd_remembers, optimizers" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sweep", "depth", "--device", "tpu"])
    assert "unknown device 'tpu'; choose one of: auto, cpu, cuda" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["status", "depth", "--preset", "huge"])
    assert "choose one of: smoke, book, gpu, paper" in capsys.readouterr().err
    assert main(["repair", "depth", "--preset", "smoke"]) == 0
    assert "nothing to repair" in capsys.readouterr().out


# The reliability findings, one test each (finding numbers of the probe in parentheses).

@pytest.mark.usefixtures("no_training")
def test_an_unwritable_store_fails_before_any_training(store, monkeypatch):
    """(3) The run was trained, then thrown away when the results could not be written."""
    (store / "sgd_remembers").write_text("a file where the experiment's folder should be")
    with pytest.raises(results.ResultsError, match="a part of its folder is a file"):
        sweep.run_sweep("sgd_remembers", "smoke", progress=False)
    (store / "optimizers" / "smoke.jsonl").mkdir(parents=True)
    with pytest.raises(results.ResultsError, match="is a folder"):
        sweep.run_sweep("optimizers", "smoke", progress=False)
    with pytest.raises(results.ResultsError, match="is a folder"):
        results.load("optimizers", "smoke")
    real_open = os.open

    def read_only(path, flags, *args):
        if flags & os.O_WRONLY:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(results.os, "open", read_only)
    with pytest.raises(results.ResultsError, match=r"cannot write results file .*depth.*\(Permission denied\)"):
        sweep.run_sweep("depth", "smoke", progress=False)


def test_failed_runs_make_the_command_fail_and_show_the_first_error(store, monkeypatch, capsys):
    """(4) Every run failed, and the command printed "failed 2" and exited 0."""
    def crash(configs, *args, **kwargs):
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(cluster, "train_population", crash)
    assert main(["sweep", "sgd_remembers", "--preset", "smoke", "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "failed 2" in captured.out
    assert "2 run(s) failed; the first (sgd, lr 0.05, sigma_w 0.1, seed 0): RuntimeError: simulated crash" in \
        captured.err


@pytest.mark.usefixtures("no_training")
def test_store_and_cluster_faults_are_one_clear_error_each(store, monkeypatch, capsys, tmp_path):
    """(6) OSError, NotADirectoryError, IsADirectoryError, PermissionError tracebacks."""
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "sgd_remembers", "--preset", "smoke", "--quiet", "--cluster", "tcp://127.0.0.1:1",
              "--worker-timeout", "1"])
    assert exit_info.value.code == 2
    assert "no Dask scheduler answered at tcp://127.0.0.1:1 within 1 s" in capsys.readouterr().err
    a_file = tmp_path / "hostname"
    a_file.write_text("not a folder")
    assert main(["data", "--root", str(a_file)]) == 1
    assert f"data root '{a_file}' is a file" in capsys.readouterr().err
    (store / "depth" / "smoke.jsonl").mkdir(parents=True)
    with pytest.raises(SystemExit):
        main(["status", "depth", "--preset", "smoke"])
    assert "smoke.jsonl is a folder" in capsys.readouterr().err
    path = store / "x" / "smoke.jsonl"
    results.append_record(path, record(0))
    with open(path, "ab") as f:
        f.write(b'{"id": "cut')
    monkeypatch.setattr(results.os, "replace", lambda *a: (_ for _ in ()).throw(PermissionError(13, "Permission "
                                                                                                  "denied")))
    with pytest.raises(results.ResultsError, match="cannot repair .*Permission denied"):
        results.repair(path)


@pytest.mark.parametrize("kwargs,message", [({"workers": "2"}, "workers must be a whole number >= 1, got '2'"),
                                            ({"workers": 0}, "workers must be a whole number >= 1, got 0"),
                                            ({"max_population": 2.0}, "max_population must be a whole number"),
                                            ({"worker_timeout": 0}, "worker_timeout must be a number of seconds")])
def test_sweep_arguments_of_the_wrong_type_are_explained(store, kwargs, message):
    """(11) run_sweep(workers="2") raised a bare TypeError."""
    with pytest.raises(ValueError, match=message):
        sweep.run_sweep("sgd_remembers", "smoke", progress=False, **kwargs)


@pytest.mark.fmnist
@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_stops_a_sweep_with_one_line_and_keeps_its_runs(store, workers):
    """(10) Ctrl-C printed up to 5 tracebacks in about 90 lines."""
    env = {**os.environ, "FIBOOK_RESULTS": str(store), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "fibook", "sweep", "optimizers", "--preset", "smoke", "--quiet",
           "--workers", str(workers)]
    # Ctrl-C's default action, as in a terminal, even when this test runs as a background job (which ignores SIGINT)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    path = results.results_path("optimizers", "smoke")
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (path.exists() and path.read_bytes().count(b"\n") >= 1):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole process group
    out, err = proc.communicate(timeout=120)
    kept = len(results.read_records(path))
    assert proc.returncode == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert kept >= 1 and err.startswith(f"interrupted: {kept} run(s) of this sweep kept in {path}; rerun to "
                                        "continue")


@pytest.mark.fmnist
def test_ctrl_c_between_a_records_write_and_its_count_still_counts_it(store, monkeypatch):
    """A flaky report of the test above: Ctrl-C landed after a record was written but before it was counted."""
    write = results.Appender.append

    def write_then_interrupt(self, record):
        write(self, record)
        raise KeyboardInterrupt

    monkeypatch.setattr(results.Appender, "append", write_then_interrupt)
    with pytest.raises(sweep.SweepInterrupted) as stopped:
        sweep.run_sweep("sgd_remembers", "smoke", progress=False)
    assert stopped.value.kept == 1 == len(results.load("sgd_remembers", "smoke"))
