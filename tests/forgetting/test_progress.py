"""A run stopped part way resumes from its saved state with the numbers of an uninterrupted run
(fibook.forgetting.progress, through fibook.forgetting.train.train_population and a sweep)."""

import dataclasses
import math

import pytest
import torch
from synthetic import random_splits, tiny

from fibook.forgetting import cluster, progress, results, run_state, sweep, train
from fibook.forgetting.devices import auto_precision
from fibook.forgetting.experiments import run_id, runs
from fibook.forgetting.train import train_population

pytestmark = pytest.mark.slow


class Stopped(Exception):
    """Stands for whatever ends a process part way (a machine switched off, a killed worker)."""


@pytest.fixture
def random_data(monkeypatch):
    """Random 2-class 32x32x3 data of 8 images per split instead of a dataset's files; saves after every epoch."""
    ds = random_splits()
    monkeypatch.setattr(train, "dataset", lambda name: ds)
    monkeypatch.setattr(progress, "SAVE_SECONDS", 0.0)
    monkeypatch.setattr(progress, "MAX_SHARE", math.inf)
    return ds


def stop_before(monkeypatch, epoch):
    """Training raises :class:`Stopped` when it reaches ``epoch``; returns a function that lifts this."""
    real = train.train_epoch

    def epoch_or_stop(e, *args):
        if e == epoch:
            raise Stopped(e)
        return real(e, *args)

    monkeypatch.setattr(train, "train_epoch", epoch_or_stop)
    return lambda: monkeypatch.setattr(train, "train_epoch", real)


def same(a, b):
    """Two results agree in every recorded number and in their status."""
    return a.status == b.status and a.history == b.history and a.summary == b.summary and \
        a.diverged_epoch == b.diverged_epoch


POPULATIONS = {
    "sgd": [tiny(epochs=4)],
    "msgd": [tiny(epochs=4, optimizer="msgd", weight_decay=1e-3)],
    "adam": [tiny(epochs=4, optimizer="adam", lr=1e-3)],
    "muon, two runs": [tiny(epochs=4, optimizer="muon", lr=0.02, seed=k, sigma_w=s)
                       for k, s in enumerate((0.5, 2.0))],
    "adamw, fused": [tiny(epochs=4, optimizer="adamw", lr=1e-3, fused=True, seed=k, sigma_w=s)
                     for k, s in enumerate((0.5, 2.0))],
}


@pytest.mark.parametrize("name", POPULATIONS)
@pytest.mark.parametrize("stopped_at", [1, 3])
def test_a_stopped_run_resumes_with_the_numbers_of_an_uninterrupted_one(random_data, monkeypatch, tmp_path, name,
                                                                       stopped_at):
    configs = POPULATIONS[name]
    whole = train_population(configs, "cpu")
    path = tmp_path / "state.pt"
    resume = stop_before(monkeypatch, stopped_at + 1)
    with pytest.raises(Stopped):
        train_population(configs, "cpu", path)
    resolved = [dataclasses.replace(c, precision=auto_precision("cpu")) for c in configs]
    saved = progress.Progress(path, resolved).load(torch.device("cpu"))
    assert saved.epoch == stopped_at and len(saved.runs[0]["history"]["epoch"]) == stopped_at + 1
    resume()
    resumed = train_population(configs, "cpu", path)
    assert all(same(a, b) for a, b in zip(whole, resumed, strict=True))
    assert not path.exists()  # finished: nothing left to resume
    assert whole[0].resumed == [] and [p["until_epoch"] for p in resumed[0].resumed] == [stopped_at]
    assert resumed[0].resumed[0]["torch"] == torch.__version__


def test_a_run_diverged_before_the_stop_stays_diverged(random_data, monkeypatch, tmp_path):
    real = run_state.RunState.check_divergence

    def seed_0_diverges_at_epoch_2(run, epoch, mean_loss, steps):
        real(run, epoch, float("inf") if run.config.seed == 0 and epoch == 2 else mean_loss, steps)

    monkeypatch.setattr(run_state.RunState, "check_divergence", seed_0_diverges_at_epoch_2)
    configs = [tiny(epochs=5, seed=k) for k in range(2)]
    whole = train_population(configs, "cpu")
    assert [r.status for r in whole] == ["diverged", "ok"] and whole[0].diverged_epoch == 2
    resume = stop_before(monkeypatch, 4)
    with pytest.raises(Stopped):
        train_population(configs, "cpu", tmp_path / "state.pt")
    resume()
    assert all(same(a, b) for a, b in zip(whole, train_population(configs, "cpu", tmp_path / "state.pt"),
                                          strict=True))


def test_saves_wait_for_their_interval(random_data, monkeypatch, tmp_path):
    monkeypatch.setattr(progress, "SAVE_SECONDS", 3600.0)
    resume = stop_before(monkeypatch, 3)
    with pytest.raises(Stopped):
        train_population([tiny(epochs=4)], "cpu", tmp_path / "state.pt")
    assert not (tmp_path / "state.pt").exists()  # two short epochs: no save was due yet
    resume()


def test_saving_takes_at_most_its_share_of_the_time(random_data, monkeypatch, tmp_path):
    monkeypatch.setattr(progress, "MAX_SHARE", 1e-9)  # the first save then postpones the next beyond this test
    resume = stop_before(monkeypatch, 4)
    with pytest.raises(Stopped):
        train_population([tiny(epochs=4)], "cpu", tmp_path / "state.pt")
    resume()
    resolved = [dataclasses.replace(tiny(epochs=4), precision=auto_precision("cpu"))]
    assert progress.Progress(tmp_path / "state.pt", resolved).load(torch.device("cpu")).epoch == 1


@pytest.mark.parametrize("bad", ["other runs", "garbage"])
def test_a_file_of_other_runs_or_unreadable_is_not_resumed(random_data, monkeypatch, tmp_path, capsys, bad):
    path = tmp_path / "state.pt"
    resume = stop_before(monkeypatch, 3)
    with pytest.raises(Stopped):
        train_population([tiny(epochs=4, seed=1)], "cpu", path)
    resume()
    if bad == "garbage":
        path.write_bytes(b"not a saved state")
    (result,) = train_population([tiny(epochs=4)], "cpu", path)
    assert f"not resuming from {path}" in capsys.readouterr().err
    assert same(result, train_population([tiny(epochs=4)], "cpu")[0])


def stopped_state(monkeypatch, configs, path):
    """The state saved at ``path`` by training ``configs`` until a stop before epoch 3 (epochs 0-2 recorded)."""
    resume = stop_before(monkeypatch, 3)
    with pytest.raises(Stopped):
        train_population(configs, "cpu", path)
    resume()
    return torch.load(path, weights_only=True)


def test_a_layout_1_file_resumes_with_its_origin_not_recorded(random_data, monkeypatch, tmp_path):
    """Layout 1 (before the parts were saved) is still resumed: the part it holds is listed as of unrecorded
    origin, with the epoch it reached."""
    configs, path = [tiny(epochs=4)], tmp_path / "state.pt"
    whole = train_population(configs, "cpu")
    blob = stopped_state(monkeypatch, configs, path)
    del blob["parts"]
    torch.save({**blob, "format": 1}, path)
    (resumed,) = train_population(configs, "cpu", path)
    assert same(resumed, whole[0])
    assert resumed.resumed == [{**dict.fromkeys(progress.ORIGIN_KEYS, progress.NOT_RECORDED), "until_epoch": 2}]


def test_a_file_missing_a_field_is_not_resumed(random_data, monkeypatch, tmp_path, capsys):
    configs, path = [tiny(epochs=4)], tmp_path / "state.pt"
    blob = stopped_state(monkeypatch, configs, path)
    del blob["lrs"]
    torch.save(blob, path)
    (result,) = train_population(configs, "cpu", path)
    assert "cannot be read (KeyError: 'lrs')" in capsys.readouterr().err
    assert same(result, train_population(configs, "cpu")[0]) and result.resumed == []


@pytest.mark.fmnist
def test_a_sweep_stopped_mid_run_resumes_it(store, monkeypatch):
    monkeypatch.setattr(progress, "SAVE_SECONDS", 0.0)
    monkeypatch.setattr(progress, "MAX_SHARE", math.inf)
    configs = runs("sgd_remembers", "smoke", device="cpu")
    first = configs[0]
    path = results.progress_path("sgd_remembers", "smoke", [run_id(first)])
    assert path.parent == results.results_path("sgd_remembers", "smoke").with_suffix(".progress")
    resume = stop_before(monkeypatch, first.epochs)
    with pytest.raises(Stopped):
        train_population([first], "cpu", path)
    resume()
    assert sweep.status("sgd_remembers", "smoke", device="cpu")["part_trained"] == 1
    real, trained = train.train_population, []

    def spy(group, device, saved=None):
        state = progress.Progress(saved, group).load(torch.device("cpu"))
        trained.append((group, saved, state and state.epoch))
        return real(group, device, saved)

    monkeypatch.setattr(cluster, "train_population", spy)
    assert sweep.run_sweep("sgd_remembers", "smoke", device="cpu", progress=False)["ok"] == len(configs)
    assert trained[0] == ([first], path, first.epochs - 1) and not path.exists()
    (record,) = [r for r in results.read_records(results.results_path("sgd_remembers", "smoke"))
                 if r.id == run_id(first)]
    assert record.history == train_population([first], "cpu")[0].history
    assert [p["until_epoch"] for p in record.provenance["resumed"]] == [first.epochs - 1]


def test_a_sweep_removes_the_states_nothing_would_resume(store):
    configs = runs("sgd_remembers", "smoke", device="cpu")
    groups = sweep.group_runs(configs, 16)
    wanted = results.progress_path("sgd_remembers", "smoke", [run_id(configs[0])])
    stale = [results.progress_path("sgd_remembers", "smoke", [run_id(c) for c in configs]),  # fused otherwise
             results.progress_path("sgd_remembers", "smoke", ["0" * 16]), wanted.with_name(wanted.name + ".tmp")]
    for f in [wanted, *stale]:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"state")
    assert sorted(sweep.prune_progress("sgd_remembers", "smoke", groups)) == sorted(stale)
    assert sorted(wanted.parent.iterdir()) == [wanted]
    assert sweep.prune_progress("optimizers", "smoke", groups) == []  # no folder: nothing to do


def test_groups_of_runs_keep_apart():
    one = results.progress_path("optimizers", "book", ["a" * 16])
    assert one.name == "a" * 16 + ".pt" and one.parent.name == "book.progress"
    two = results.progress_path("optimizers", "book", ["a" * 16, "b" * 16])
    assert two != one and two != results.progress_path("optimizers", "book", ["b" * 16, "a" * 16])
