"""The sweep engine: results store, resumption after SIGKILL, divergence and failure, Dask workers, CLI."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fibook import experiments, results, sweep
from fibook.__main__ import main
from fibook.data import DEBIAN_FASHION_MNIST
from fibook.experiments import Experiment, run_id, runs
from fibook.scales import get_scale
from fibook.train import TrainConfig

needs_fmnist = pytest.mark.skipif(not DEBIAN_FASHION_MNIST.is_dir(), reason="Fashion-MNIST not installed")


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    return tmp_path


def record(i, status="ok", **config):
    return {"id": f"run{i}", "experiment": "x", "scale": "smoke", "status": status,
            "config": {"sigma_w": 0.1 * (i + 1), **config}, "summary": {"selected_test_acc": 0.5}}


def test_store_reads_back_and_names_a_broken_line(store):
    path = store / "x" / "smoke.jsonl"
    for i in range(3):
        results.append_record(path, record(i))
    assert [r["id"] for r in results.read_records(path)] == ["run0", "run1", "run2"]
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
    with pytest.raises(results.CorruptResultsError, match="not a tail"):
        results.repair(path)
    assert len(path.read_bytes().splitlines()) == 3  # nothing was dropped


def test_load_keeps_the_latest_record_per_id_and_filters(store):
    path = results.results_path("optimizers", "smoke")
    results.append_record(path, record(0, status="failed", optimizer="adam"))
    results.append_record(path, record(0, optimizer="adam"))
    results.append_record(path, record(1, status="diverged", optimizer="sgd"))
    assert [r["status"] for r in results.load("optimizers", "smoke")] == ["ok", "diverged"]
    assert [r["id"] for r in results.load("optimizers", "smoke", optimizer="sgd")] == ["run1"]
    assert results.load("optimizers", "smoke", status="ok")[0]["id"] == "run0"
    with pytest.raises(ValueError, match="unknown status 'done'"):
        results.load("optimizers", "smoke", status="done")
    assert results.get_field(record(2), "summary.selected_test_acc") == 0.5


def test_run_ids_are_stable_and_distinct():
    configs = runs("optimizers", "book")
    ids = [run_id(c) for c in configs]
    assert len(set(ids)) == len(ids) == 6 * 5
    assert run_id(TrainConfig(lr=0.1)) == run_id(TrainConfig(lr=0.1)) != run_id(TrainConfig(lr=0.2))


def test_seed_noise_runs_every_noise_seed_and_shares_seed_0_with_the_headline_sweep():
    f = get_scale("book").forgetting
    configs = runs("seed_noise", "book")
    assert sorted({(c.seed, c.sigma_w) for c in configs}) == sorted(
        (seed, s) for seed in f.noise_seeds for s in f.quick_sigma_w)
    headline = {run_id(c) for c in runs("sgd_remembers", "book")}
    shared = {c.sigma_w for c in configs if run_id(c) in headline}
    assert shared == set(f.quick_sigma_w) & set(f.sigma_w)  # seed 0 is reused, not rerun
    assert all(c.seed == 0 for c in configs if run_id(c) in headline)


def test_fusing_groups_only_runs_that_differ_in_sigma_and_seed():
    configs = runs("optimizers", "book", fused=True)
    groups = sweep.group_runs(configs, max_population=3)
    assert sum(len(g) for g in groups) == len(configs)
    for g in groups:
        assert len(g) <= 3 and len({(c.optimizer, c.lr, c.weight_decay) for c in g}) == 1
    assert len(sweep.group_runs(runs("optimizers", "book"), max_population=3)) == len(configs)


def test_fused_runs_are_runs_of_their_own():
    """fp32 sums of a fused network run in another order, so its numbers differ: it must not be stored under
    (or counted as) the unfused run's id."""
    plain, fused = runs("sgd_remembers", "book"), runs("sgd_remembers", "book", fused=True)
    assert all(f.fused and not p.fused for p, f in zip(plain, fused, strict=True))
    assert not {run_id(c) for c in plain} & {run_id(c) for c in fused}
    with pytest.raises(ValueError, match="may differ only in sigma_w, seed; these differ: fused"):
        sweep.train_population([plain[0], fused[1]], "cpu")


@needs_fmnist
def test_divergence_and_failure_are_recorded_and_the_sweep_goes_on(store, monkeypatch):
    toy = Experiment("toy", "one sane and one diverging arm",
                     lambda f: [{"optimizer": "sgd", "lr": 0.05}, {"optimizer": "sgd", "lr": 10.0}],
                     lambda f: (50.0,))
    monkeypatch.setitem(experiments.EXPERIMENTS, "toy", toy)
    counts = sweep.run_sweep("toy", "smoke", progress=False)
    assert counts["ok"] == 1 and counts["diverged"] == 1
    by_lr = {r["config"]["lr"]: r for r in results.load("toy", "smoke")}
    assert by_lr[10.0]["status"] == "diverged" and by_lr[10.0]["diverged_epoch"] == 1

    real = sweep.train_population

    def flaky(configs, *args, **kwargs):
        if configs[0].sigma_w == 0.1:
            raise RuntimeError("simulated crash")
        return real(configs, *args, **kwargs)

    monkeypatch.setattr(sweep, "train_population", flaky)
    counts = sweep.run_sweep("sgd_remembers", "smoke", progress=False)
    assert counts == {"ok": 1, "diverged": 0, "failed": 1, "reused": 0}
    failed = results.load("sgd_remembers", "smoke", status="failed")
    assert len(failed) == 1 and "simulated crash" in failed[0]["error"]
    assert sweep.status("sgd_remembers", "smoke")["failed"] == 1
    monkeypatch.setattr(sweep, "train_population", real)
    assert sweep.run_sweep("sgd_remembers", "smoke", progress=False)["ok"] == 1  # the failed run is retried
    final = results.load("sgd_remembers", "smoke")
    assert sorted(r["status"] for r in final) == ["ok", "ok"]
    # a finished run of another experiment with the same config is copied, not retrained
    assert sweep.run_sweep("optimizers", "smoke", progress=False, workers=1)["reused"] == 2


@needs_fmnist
def test_sigkill_mid_sweep_then_rerun_records_every_run_exactly_once(store):
    env = {**os.environ, "FIBOOK_RESULTS": str(store), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "fibook", "sweep", "optimizers", "--scale", "smoke", "--quiet"]
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
    ids = [r["id"] for r in results.read_records(path)]
    assert sorted(ids) == sorted(run_id(c) for c in runs("optimizers", "smoke"))  # each exactly once


@needs_fmnist
def test_two_worker_dask_local_cluster(store):
    counts = sweep.run_sweep("sgd_remembers", "smoke", workers=2, progress=False)
    assert counts["ok"] == 2
    records = results.load("sgd_remembers", "smoke")
    prov = records[0]["provenance"]
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


def test_cli_rejects_bad_arguments_with_the_allowed_values(capsys, store):
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "nope"])
    assert exit_info.value.code == 2
    assert "choose one of: sgd_remembers, optimizers" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sweep", "depth", "--device", "tpu"])
    assert "unknown device 'tpu'; choose one of: auto, cpu, cuda" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["status", "depth", "--scale", "huge"])
    assert "choose one of: smoke, book, gpu, paper" in capsys.readouterr().err
    assert main(["repair", "depth", "--scale", "smoke"]) == 0
    assert "nothing to repair" in capsys.readouterr().out


def test_load_rejects_an_unknown_experiment_or_filter_field(store):
    with pytest.raises(ValueError, match="unknown experiment 'optimizer'; choose one of: sgd_remembers"):
        results.load("optimizer", "smoke")
    with pytest.raises(ValueError, match="unknown config field.* optimiser.*choose from: dataset"):
        results.load("optimizers", "smoke", optimiser="adam")
    assert results.load("optimizers", "smoke", optimizer="adam") == []  # a known field that matches nothing


def test_device_strings_are_validated_before_any_run():
    for bad in ("cuda:x", "cuda:", "cuda:-1", "gpu"):
        with pytest.raises(ValueError, match="unknown device"):
            sweep.check_device(bad)
    assert sweep.check_device("cpu") == "cpu"
