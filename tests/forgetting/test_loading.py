"""Part I arms loaded from a synthetic results store (fibook.forgetting.loading): what a verdict reads of a sweep
under way, the arms of every experiment pooled on the quick grid, and the tables of readings and stability."""

import dataclasses

import pytest
from synthetic import rec, stored

from fibook.forgetting import results
from fibook.forgetting.arms import arms, seed_spreads
from fibook.forgetting.experiments import run_id, runs
from fibook.forgetting.loading import (
    finished_arms,
    load_arms,
    own_seeds,
    pooled_arms,
    stability_rows,
    started_arms,
)


def test_load_arms_explains_an_empty_results_file(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    with pytest.raises(RuntimeError, match="no results for 'optimizers' at preset 'gpu': set RERUN = True"):
        load_arms("optimizers", "gpu")


def test_finished_arms_keeps_only_whole_grids(tmp_path, monkeypatch):

    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    configs = runs("batch_size", "smoke")  # 2 batch sizes x 2 sigma_w
    path = results.results_path("batch_size", "smoke")
    for c in configs[:3]:  # the second batch size misses one sigma_w
        results.append_record(path, stored(c, "batch_size"))
    finished = finished_arms("batch_size", "smoke", show=("batch_size",))
    done = finished.arms
    assert [a.config.batch_size for a in done] == [configs[0].batch_size]
    assert finished.line == "batch_size at preset 'smoke': 3 of 4 runs finished, 1 of 2 arms complete"
    assert done[0].label == f"SGD (b = {configs[0].batch_size})"


def test_finished_arms_waits_for_every_seed(tmp_path, monkeypatch):

    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    configs = runs("seed_noise", "smoke")  # 2 sigma_w x 2 seeds
    path = results.results_path("seed_noise", "smoke")
    for c in configs[:3]:
        results.append_record(path, stored(c, "seed_noise"))
    assert finished_arms("seed_noise", "smoke", show=()).arms == []
    c = configs[3]
    results.append_record(path, stored(c, "seed_noise"))
    (arm,) = finished_arms("seed_noise", "smoke", show=()).arms
    assert sorted(seed_spreads(arm)) == [0, 1]


def test_an_arm_is_read_on_every_seed_any_experiment_ran_it_on(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    for name in ("batch_size", "seed_noise"):  # seed_noise runs one of batch_size's arms on two seeds
        for c in runs(name, "smoke"):
            results.append_record(results.results_path(name, "smoke"), stored(c, name))
    found = finished_arms("batch_size", "smoke", ("batch_size",), "late")
    widened = own_seeds(found, ("batch_size",), "late")
    assert [len({r.config.seed for r in a.records}) for a in found.arms] == [1, 1]
    assert [a.config.batch_size for a in widened.arms] == [a.config.batch_size for a in found.arms] == [64, 128]
    assert [len({r.config.seed for r in a.records}) for a in widened.arms] == [1, 2]  # b = 128 is seed_noise's
    shared = widened.arms[1]
    assert shared.label == found.arms[1].label and shared.sigmas == found.arms[1].sigmas
    assert {r.experiment for r in shared.records} == {"batch_size", "seed_noise"}
    assert widened.arms[0] is found.arms[0] and widened.line == found.line  # the experiment's own counts


def test_the_stability_table_shows_each_arms_worst_run():
    records = [rec(0.1, 0, 0.9, 1, 1.0, epochs=4), rec(2.5, 0, 0.8, 1, 1.0, epochs=4, collapse_to=0.6),
               rec(1.0, 0, 0.1, None, 1.0, epochs=4, status="diverged")]
    (arm,) = arms(records)
    (row,) = stability_rows([arm])
    assert row == {"arm": "SGD (η = 0.01) [unstable]", "runs": 3, "second-half epochs fitting (worst run)": "0 %",
                   "deepest drop after fitting (pp)": "40.0", "largest train loss after fitting": "5",
                   "collapsed / diverged runs": "1 / 1"}


def test_a_figure_shows_an_arm_once_one_seed_covers_its_grid_before_a_verdict_reads_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    path = results.results_path("seed_noise", "smoke")
    first, second, third, fourth = runs("seed_noise", "smoke")  # seed 0 at sigma_w 0.1, 2.5; then seed 1
    for c in (first, third):  # each seed at one sigma_w of two
        results.append_record(path, stored(c, "seed_noise"))
    assert started_arms("seed_noise", "smoke", show=()) == []
    results.append_record(path, stored(second, "seed_noise"))  # seed 0 has the whole grid
    (arm,) = started_arms("seed_noise", "smoke", show=())
    assert arm.sigmas == [0.1, 2.5] and len(arm.records) == 3
    waiting = finished_arms("seed_noise", "smoke", show=())
    assert waiting.arms == [] and waiting.progress == "3 of 4 runs finished, 0 of 1 arms complete"
    results.append_record(path, stored(fourth, "seed_noise"))
    assert len(finished_arms("seed_noise", "smoke", show=()).arms) == len(started_arms("seed_noise", "smoke", ())) == 1


def test_pooled_arms_hold_one_architecture_on_the_quick_grid_each_run_once_with_its_first_experiment(
        tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    depth = runs("depth", "smoke")  # ResNet-9 and ResNet-8 arms at sigma_w 0.1 and 2.5
    for c in depth:
        results.append_record(results.results_path("depth", "smoke"), stored(c, "depth"))
    off_grid = dataclasses.replace(depth[0], sigma_w=0.5)  # not on the quick grid
    results.append_record(results.results_path("depth", "smoke"), stored(off_grid, "depth"))
    ((name, resnet9),) = pooled_arms("smoke", "best")
    assert name == "depth" and resnet9.config.arch == "resnet9" and resnet9.sigmas == [0.1, 2.5]
    ((name, resnet8),) = pooled_arms("smoke", "best", arch="resnet8")
    assert name == "depth" and resnet8.sigmas == [0.1, 2.5] and len(resnet8.records) == 2
    # sgd_remembers (listed before depth) trains the same ResNet-9 runs: the same ids, pooled once, named by it
    for c in runs("sgd_remembers", "smoke"):
        assert run_id(c) in {run_id(d) for d in depth}
        results.append_record(results.results_path("sgd_remembers", "smoke"), stored(c, "sgd_remembers"))
    ((name, resnet9),) = pooled_arms("smoke", "late")
    assert name == "sgd_remembers" and len(resnet9.records) == 2 and resnet9.selection == "late"
