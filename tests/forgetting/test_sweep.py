"""The sweep engine: results store, resumption after SIGKILL, divergence and failure, Dask workers, CLI."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from synthetic import rec

from fibook.__main__ import main
from fibook.forgetting import experiments, results, sweep
from fibook.forgetting.experiments import Experiment, run_id, runs
from fibook.forgetting.train import TrainConfig
from fibook.presets import PRESET_NAMES, get_preset

pytestmark = pytest.mark.slow


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    return tmp_path


def record(i, status="ok", experiment="x", **config):
    """A valid record of run ``i`` (sigma_w = 0.1 (i + 1)) of ``experiment`` at the smoke preset."""
    r = rec(0.1 * (i + 1), 0, 0.5, 1, 1.0, status=status, experiment=experiment, **config)
    if status == "failed":
        return dataclasses.replace(r, summary=None, history=None, layer_names=None,
                                   error="Traceback ...\nRuntimeError: boom\n")
    return dataclasses.replace(r, diverged_epoch=1) if status == "diverged" else r


def append_line(path, obj):
    """Append one JSON object as a line, bypassing the store's checks (for lines the store must refuse)."""
    with open(path, "a") as f:
        f.write(json.dumps(obj) + "\n")


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


def test_run_ids_are_stable_and_distinct():
    configs = runs("optimizers", "book")
    ids = [run_id(c) for c in configs]
    assert len(set(ids)) == len(ids) == 6 * 5
    assert run_id(TrainConfig(lr=0.1)) == run_id(TrainConfig(lr=0.1)) != run_id(TrainConfig(lr=0.2))


def test_seed_noise_runs_every_noise_seed_and_shares_seed_0_with_the_headline_sweep():
    f, g = get_preset("book").forgetting, experiments.grids("book")
    configs = runs("seed_noise", "book")
    assert sorted({(c.seed, c.sigma_w) for c in configs}) == sorted(
        (seed, s) for seed in g.noise_seeds for s in g.quick_sigma_w)
    headline = {run_id(c) for c in runs("sgd_remembers", "book")}
    shared = {c.sigma_w for c in configs if run_id(c) in headline}
    assert shared == set(g.quick_sigma_w) & set(f.sigma_w)  # seed 0 is reused, not rerun
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

    real = sweep.train_population

    def flaky(configs, *args, **kwargs):
        if configs[0].sigma_w == 0.1:
            raise RuntimeError("simulated crash")
        return real(configs, *args, **kwargs)

    monkeypatch.setattr(sweep, "train_population", flaky)
    counts = sweep.run_sweep("sgd_remembers", "smoke", progress=False)
    assert counts == {"ok": 1, "diverged": 0, "failed": 1, "reused": 0}
    failed = results.load("sgd_remembers", "smoke", status="failed")
    assert len(failed) == 1 and "simulated crash" in failed[0].error
    assert sweep.status("sgd_remembers", "smoke")["failed"] == 1
    monkeypatch.setattr(sweep, "train_population", real)
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


# The reliability findings, one test each (finding numbers of the probe in parentheses).

def _no_training(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("trained although the sweep could not record the result")
    monkeypatch.setattr(sweep, "train_population", refuse)


@pytest.mark.parametrize("broken,message", [
    (lambda r: {"id": r["id"], "status": "ok"}, r"'ok' records need the field\(s\) experiment, scale, config"),
    (lambda r: r | {"id": "0" * 16}, "id '0000000000000000' is not its config's hash"),
    (lambda r: r | {"experiment": "optimizers"}, "experiment 'optimizers' does not match its file's 'x'"),
    (lambda r: r | {"config": {**r["config"], "epochs": 1.5}}, "config is not a valid training config: epochs"),
    (lambda r: r | {"config": {**r["config"], "optimiser": "sgd"}}, "config is not a valid training config"),
    (lambda r: r | {"summary": [1]}, r"wrong type: summary \(must be dict\)"),
    (lambda r: r | {"summary": {**r["summary"], "spread": 1.0}}, "summary is not a run summary"),
])
def test_every_record_is_checked_on_read_with_its_file_and_line(store, broken, message):
    """(2) A hand-appended or foreign line must not count as a finished run."""
    path = store / "x" / "smoke.jsonl"
    results.append_record(path, record(0))
    append_line(path, broken(record(0).to_json()))
    with pytest.raises(results.InvalidRecordError, match=f"smoke.jsonl, line 2: not a valid results record: "
                                                         f"{message}"):
        results.read_records(path)


def test_an_unwritable_store_fails_before_any_training(store, monkeypatch):
    """(3) The run was trained, then thrown away when the results could not be written."""
    _no_training(monkeypatch)
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

    monkeypatch.setattr(sweep, "train_population", crash)
    assert main(["sweep", "sgd_remembers", "--preset", "smoke", "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "failed 2" in captured.out
    assert "2 run(s) failed; the first (sgd, lr 0.05, sigma_w 0.1, seed 0): RuntimeError: simulated crash" in \
        captured.err


def test_one_sweep_at_a_time_writes_a_results_file(store, monkeypatch):
    """(5) Two sweeps of one file trained every run twice."""
    _no_training(monkeypatch)
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


def test_store_and_cluster_faults_are_one_clear_error_each(store, monkeypatch, capsys, tmp_path):
    """(6) OSError, NotADirectoryError, IsADirectoryError, PermissionError tracebacks."""
    _no_training(monkeypatch)
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


def test_a_scheduler_without_workers_is_reported_not_waited_on_forever(store, monkeypatch, capsys):
    """(7) A sweep on a scheduler with no workers hung at 0 % without a word."""
    from dask.distributed import LocalCluster

    _no_training(monkeypatch)
    with LocalCluster(n_workers=0, dashboard_address=":0") as cluster:
        with pytest.raises(sweep.SweepError, match=r"no worker joined the scheduler at .* within 1 s"):
            sweep.run_sweep("sgd_remembers", "smoke", cluster=cluster.scheduler_address, worker_timeout=1,
                            progress=False)
    assert "waiting for a worker to join the scheduler" in capsys.readouterr().err


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


def test_every_experiment_has_its_grids_at_every_scale(monkeypatch):
    for preset in PRESET_NAMES:
        g = experiments.grids(preset)
        for name in experiments.EXPERIMENTS:
            configs = runs(name, preset)
            assert configs and len({run_id(c) for c in configs}) == len(configs), (name, preset)
        assert {c.lr for c in runs("sgd_remembers", preset)} == {g.sgd_lr}
        assert {c.epochs for c in runs("long_training", preset)} == set(g.long_epochs)
        assert {c.sigma_w for c in runs("depth", preset)} == set(g.quick_sigma_w)
    monkeypatch.delitem(experiments.GRIDS, "gpu")
    with pytest.raises(ValueError, match="preset 'gpu' has no Part I grids; add an entry to GRIDS"):
        runs("optimizers", "gpu")


@pytest.mark.parametrize("preset", ["book", "gpu"])
def test_adaptive_clock_spans_its_clock_with_an_equal_clock_pair_and_a_decay_that_acts(preset):
    configs = experiments.arm_configs("adaptive_clock", preset)
    by_optimizer = {}
    for c in configs:
        by_optimizer.setdefault(c.optimizer, []).append(c)
    assert set(by_optimizer) == {"adam", "adamw", "muon"}
    adam = [round(experiments.planned_clocks(c)[1]["T_adapt"], 9) for c in by_optimizer["adam"]]
    assert max(adam) / min(adam) >= 10**1.5  # at least 1.5 decades of T_adapt
    assert len(set(adam)) < len(adam)  # two arms reach one clock by different rates and lengths
    for c in by_optimizer["adamw"]:  # the decoupled decay shrinks by lambda lr per step, 1e-5 ... 1e-3
        assert 1e-5 <= c.lr * c.weight_decay <= 1e-3 and experiments.planned_clocks(c)[1]["T_L2"] > 0
    muon = sorted(experiments.planned_clocks(c)[1]["T_adapt"] for c in by_optimizer["muon"])
    assert len(muon) == 2 and muon[0] < muon[1]
    optimizers = {run_id(c) for c in runs("optimizers", preset) if c.optimizer in ("adam", "muon")}
    reused = {run_id(c) for c in runs("adaptive_clock", preset)} & optimizers
    assert {c.optimizer for c in runs("adaptive_clock", preset) if run_id(c) in reused} == {"adam", "muon"}


@pytest.mark.parametrize("preset", ["book", "gpu"])
def test_l2_clock_spans_its_clock_with_controls_at_every_length_and_a_small_shrink(preset):
    configs = experiments.arm_configs("l2_clock", preset)
    assert {c.optimizer for c in configs} == {"sgd"} and len({c.lr for c in configs}) == 1  # one learning rate
    t_l2 = {(c.weight_decay, c.epochs): experiments.planned_clocks(c)[1]["T_L2"] for c in configs}
    decayed = [t for (wd, _), t in t_l2.items() if wd > 0]
    assert min(decayed) <= 1.0 and max(decayed) >= 4.0  # from below 1 to at least 4
    assert all(1e-4 <= c.lr * c.weight_decay <= 1e-3 for c in configs if c.weight_decay)
    assert {e for _, e in t_l2} == {e for wd, e in t_l2 if wd == 0}  # a lambda = 0 control at every length
    rounded = [round(t, 9) for t in decayed]
    assert len(set(rounded)) < len(rounded)  # one T_L2 reached by two (lambda, length) pairs


@pytest.mark.parametrize("preset", ["book", "gpu"])
def test_seeds_repeats_the_headline_and_longest_clock_arms_over_the_noise_seeds(preset):
    g = experiments.grids(preset)
    configs = runs("seeds", preset)
    assert {c.seed for c in configs} == set(g.noise_seeds) and {c.sigma_w for c in configs} == set(g.quick_sigma_w)
    assert {c.optimizer for c in configs} == {"sgd", "adam", "adamw", "muon"}  # momentum SGD is not a headline arm
    longest_adam = max(experiments.planned_clocks(c)[1]["T_adapt"] for c in runs("adaptive_clock", preset)
                       if c.optimizer == "adam")
    assert max(experiments.planned_clocks(c)[1]["T_adapt"] for c in configs if c.optimizer == "adam") == longest_adam
    longest_l2 = max(experiments.planned_clocks(c)[1]["T_L2"] for c in runs("l2_clock", preset))
    assert max(experiments.planned_clocks(c)[1]["T_L2"] for c in configs if c.optimizer == "sgd") == \
        pytest.approx(max(longest_l2, experiments.planned_clocks(runs("optimizers", preset)[-1])[1]["T_L2"]))


@pytest.mark.parametrize("preset", ["smoke", "book", "gpu"])
def test_clock_ladder_holds_t_adapt_fixed_while_the_rate_spans_a_decade_over_the_noise_seeds(preset):
    g = experiments.grids(preset)
    configs = runs("clock_ladder", preset)
    assert {c.optimizer for c in configs} == {"adam"} and {c.seed for c in configs} == set(g.noise_seeds)
    assert {c.sigma_w for c in configs} == set(g.quick_sigma_w)
    clocks = {(c.lr, c.epochs): experiments.planned_clocks(c)[1]["T_adapt"] for c in configs}
    assert len(clocks) == len(g.clock_ladder) >= 2
    assert max(clocks.values()) == pytest.approx(min(clocks.values()), rel=1e-9)  # one clock
    if preset != "smoke":
        assert max(lr for lr, _ in clocks) / min(lr for lr, _ in clocks) == pytest.approx(10)  # a decade of rates
    expected = g.fixed_clock_precision or runs("adaptive_clock", preset)[0].precision
    assert {c.precision for c in configs} == {expected}


@pytest.mark.parametrize("preset", ["smoke", "book", "gpu"])
def test_tsgd_pair_has_equal_t_sgd_with_twice_the_steps_and_twice_sum_eta(preset):
    configs = experiments.arm_configs("tsgd_pair", preset)
    assert len(configs) == 2 and {c.optimizer for c in configs} == {"sgd"} and len({c.lr for c in configs}) == 1
    (small_steps, small), (big_steps, big) = sorted(experiments.planned_clocks(c) for c in configs)
    # equal up to the partial batch each epoch drops (45,000 images: 703 steps at b = 64, 2 x 351 at b = 128)
    assert big["T_SGD"] == pytest.approx(small["T_SGD"], rel=5e-3)
    assert big_steps == pytest.approx(2 * small_steps, rel=5e-3)
    assert big["T_adapt"] == pytest.approx(2 * small["T_adapt"], rel=5e-3)


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
