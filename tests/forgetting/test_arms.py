"""Part I arms, checkpoints, clocks, noise and collapse on synthetic records with known answers."""

import dataclasses
import math

import numpy as np
import pytest
from synthetic import rec

from fibook.forgetting import results
from fibook.forgetting.arms import (
    UNSTABLE,
    arm_label,
    arms,
    direction_kept,
    norm_ratio_curves,
    radial_memory_by_epoch,
    seed_spreads,
    seed_std_pp,
    setting,
    summary_rows,
)
from fibook.forgetting.checkpoints import LAST_EPOCHS, stability
from fibook.forgetting.clocks import clock_key, effective_lr, forgetting_clock, heavy_ball_momentum
from fibook.forgetting.collapse import (
    CLOCK_MECHANISMS,
    RAW_CLOCK_MECHANISMS,
    baseline_arm,
    clock_point,
    collapse_points,
    spread_and_direction,
)
from fibook.forgetting.experiments import run_id, runs
from fibook.forgetting.loading import finished_arms, load_arms, reading_rows, selection_rows, stability_rows
from fibook.forgetting.noise import noise_floor, spread_estimate
from fibook.forgetting.train import TrainConfig


def test_seed_means_spread_and_interpolation():
    records = [rec(0.1, 0, 0.90, 2, 1.0), rec(0.1, 1, 0.88, 3, 1.0),
               rec(1.0, 0, 0.80, 2, 10.0), rec(1.0, 1, 0.82, None, 10.0),
               rec(2.5, 0, 0.70, 3, 25.0), rec(2.5, 1, 0.70, 3, 25.0),
               rec(0.1, 0, 0.85, 1, 5.0, optimizer="adam", lr=1e-3), rec(2.5, 0, 0.84, 1, 5.0, optimizer="adam",
                                                                         lr=1e-3)]
    sgd, adam = arms(records)
    assert sgd.label == "SGD (η = 0.01)" and adam.label == "Adam (η = 0.001)"
    assert sgd.sigmas == [0.1, 1.0, 2.5]
    assert sgd.acc == pytest.approx([0.89, 0.81, 0.70])
    assert sgd.acc_min == pytest.approx([0.88, 0.80, 0.70])
    assert sgd.spread_pp == pytest.approx(19.0)  # 89 - 70
    assert sgd.interpolated == [True, False, True]
    assert math.isnan(sgd.spread_interp_pp)  # every selected checkpoint (epoch 1) precedes its tau_interp
    assert math.isnan(sgd.tau[1]) and sgd.tau[0] == 2.5
    assert sgd.radial_memory == pytest.approx(1.0)  # final norm = 10 sigma
    assert adam.spread_pp == pytest.approx(1.0) and adam.radial_memory == pytest.approx(0.0)
    assert adam.clock() == ("T_adapt", pytest.approx(0.5 / 3))  # at the selected epoch 1 of 3
    assert adam.run_clock() == ("T_adapt", 0.5)
    rows = summary_rows([sgd, adam])
    assert rows[0]["spread (pp)"] == "19.0"
    assert rows[0]["σ_w interpolating at the selected checkpoint (at some epoch)"] == "0 of 3 (2)"  # epoch 1 < tau


def test_last_epoch_spread_is_separate_from_the_selected_one():
    records = [rec(0.1, 0, 0.90, 2, 1.0, final_acc=0.86), rec(0.1, 1, 0.90, 2, 1.0, final_acc=0.88),
               rec(2.5, 0, 0.70, 3, 25.0, final_acc=0.80), rec(2.5, 1, 0.70, 3, 25.0, final_acc=0.80)]
    (arm,) = arms(records)
    assert arm.spread_pp == pytest.approx(20.0)
    assert arm.final_spread_pp == pytest.approx(7.0)  # seed means 87 and 80
    assert summary_rows([arm])[0]["spread at the last epoch (pp)"] == "7.0"


def test_l2_arm_uses_the_l2_clock_and_diverged_sigma_leaves_the_spread():
    records = [rec(0.1, 0, 0.9, 1, 1.0, wd=0.06), rec(2.5, 0, 0.5, None, 2.0, wd=0.06),
               rec(1.0, 0, 0.1, None, 1e9, wd=0.06, status="diverged")]
    (arm,) = arms(records)
    assert arm.label == "SGD + L2 (η = 0.01, λ = 0.06) [unstable]"  # a run diverged
    assert arm.run_clock() == ("T_L2", pytest.approx(0.3))
    assert arm.diverged == [False, True, False]
    assert arm.spread_pp == pytest.approx(40.0)
    assert math.isnan(arm.spread_interp_pp)  # only one sigma_w interpolated
    assert summary_rows([arm])[0]["spread, interpolating σ_w only (pp)"] == "—"


def test_norm_ratios_and_radial_memory_over_epochs():
    records = [rec(0.1, 0, 0.9, 1, 2.0), rec(2.5, 0, 0.8, 1, 2.0)]
    (arm,) = arms(records)
    curves = norm_ratio_curves(arm)
    assert curves[0.1] == pytest.approx([1.0, 1.1, 1.1, 2.0])
    r_t = radial_memory_by_epoch(arm)
    assert r_t[0] == pytest.approx(1.0) and r_t[2] == pytest.approx(1.0) and r_t[3] == pytest.approx(0.0)
    assert isinstance(r_t, np.ndarray)


def test_load_arms_explains_an_empty_results_file(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    with pytest.raises(RuntimeError, match="no results for 'optimizers' at preset 'gpu': set RERUN = True"):
        load_arms("optimizers", "gpu")


def test_momentum_sgds_t_sgd_is_read_at_its_effective_step_and_counts_in_the_t_sgd_trend():
    records = [rec(0.1, 0, 0.9, 1, 1.0, optimizer="msgd"), rec(2.5, 0, 0.9, 1, 2.0, optimizer="msgd")]
    (arm,) = arms(records)
    mu = 0.9  # momentum SGD's default heavy-ball momentum
    assert heavy_ball_momentum(arm.config) == mu
    assert arm.run_clock("raw") == ("T_SGD", pytest.approx(1e-3))  # sum eta^2 / b as recorded at the raw eta
    assert arm.run_clock() == ("T_SGD", pytest.approx(1e-3 / (1 - mu) ** 2))  # = 0.1: at eta / (1 - mu)
    assert arm.clock() == ("T_SGD", pytest.approx(1e-3 / 3 / (1 - mu) ** 2))  # at the selected epoch 1 of 3
    assert arm.clock("raw") == ("T_SGD", pytest.approx(1e-3 / 3))
    assert summary_rows([arm])[0]["clock at the selected checkpoints (whole run)"] == (
        f"T_SGD = {1e-3 / 3 / 0.01:.3g} ({0.1:.3g}) (at the effective step η/(1−μ) = 0.1; at the raw η "
        f"{1e-3 / 3:.3g})")
    point = clock_point("optimizers", arm, None)
    assert point.momentum == "effective" and point.included and point.left_out is None
    assert point.value == pytest.approx(1e-3 / 3 / 0.01) and point.run_value == pytest.approx(0.1)
    raw = clock_point("optimizers", arm, None, momentum="raw")  # the reading before 2026-12-05
    assert raw.value == pytest.approx(1e-3 / 3) and not raw.included
    assert raw.left_out == "momentum SGD: not a mechanism T_SGD is defined for"
    (sgd,) = arms([dataclasses.replace(r, config=dataclasses.replace(r.config, optimizer="sgd"))
                   for r in records])
    for reading in ("effective", "raw"):  # plain SGD has no momentum: both readings are its recorded T_SGD
        sgd_point = clock_point("optimizers", sgd, None, momentum=reading)
        assert sgd_point.included and sgd_point.value == pytest.approx(raw.value)
    assert effective_lr(records[0].config) == pytest.approx(0.01 / (1 - 0.9))
    with_option = dataclasses.replace(records[0].config, options={"momentum": 0.5})
    assert effective_lr(with_option) == pytest.approx(0.02)
    assert effective_lr(dataclasses.replace(records[0].config, optimizer="adam")) == 0.01  # no heavy ball


@pytest.mark.parametrize("mu", [0.0, 0.5, 0.9, 0.99])
def test_the_effective_reading_divides_momentum_sgds_t_sgd_by_one_minus_mu_squared_and_nothing_else(mu):
    clocks = {"T_SGD": 2e-3, "T_L2": 0.7, "T_adapt": 3.0}
    msgd = TrainConfig(optimizer="msgd", lr=0.01, options={"momentum": mu})
    assert forgetting_clock(msgd, clocks) == ("T_SGD", pytest.approx(2e-3 / (1 - mu) ** 2, rel=1e-12))
    assert forgetting_clock(msgd, clocks, "raw") == ("T_SGD", 2e-3)
    for config, key in ((TrainConfig(optimizer="sgd", lr=0.01), "T_SGD"),
                        (TrainConfig(optimizer="sgd", lr=0.01, weight_decay=0.1), "T_L2"),
                        (TrainConfig(optimizer="adam", lr=1e-3), "T_adapt")):
        assert forgetting_clock(config, clocks) == forgetting_clock(config, clocks, "raw") == (
            key, clocks[key])


def test_an_unknown_momentum_reading_is_refused_with_the_allowed_names():
    with pytest.raises(ValueError, match="unknown momentum reading 'nominal'; choose one of: effective, raw"):
        forgetting_clock(TrainConfig(optimizer="msgd"), {"T_SGD": 1.0}, "nominal")


def test_the_clock_mechanisms_count_momentum_sgd_on_t_sgd_and_the_raw_reading_does_not():
    assert "momentum SGD" in CLOCK_MECHANISMS["T_SGD"]
    assert RAW_CLOCK_MECHANISMS["T_SGD"] == ("SGD",)
    assert {k: v for k, v in RAW_CLOCK_MECHANISMS.items() if k != "T_SGD"} == \
        {k: v for k, v in CLOCK_MECHANISMS.items() if k != "T_SGD"}


def test_an_unknown_optimizer_is_refused_not_given_a_default_clock():
    record = rec(0.1, 0, 0.9, 1, 1.0, optimizer="lion")
    with pytest.raises(ValueError, match="unknown optimizer 'lion'; choose one of: sgd"):
        clock_key(record.config)
    with pytest.raises(ValueError, match="unknown optimizer 'lion'"):
        arm_label(record.config)


def stored(config, experiment):
    """A finished record of grid run ``config`` as experiment ``experiment`` writes it."""
    return dataclasses.replace(rec(config.sigma_w, config.seed, 0.5, 1, 1.0), config=config, id=run_id(config),
                               experiment=experiment)


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


def test_setting_names_where_a_number_was_measured():
    c = TrainConfig(dataset="fashion_mnist", arch="resnet20", width=16, epochs=40, batch_size=64, lr=0.01)
    assert setting(c, "book") == "book: fashion_mnist, ResNet-20 w16, 40 epochs"
    assert setting(c, "gpu", show=("batch_size", "lr")) == "gpu: fashion_mnist, b = 64, η = 0.01"
    assert arm_label(dataclasses.replace(c, weight_decay=0.1), show=("optimizer", "arch")) == (
        "SGD + L2 (ResNet-20 w16)")
    with pytest.raises(ValueError, match="allowed: optimizer, lr"):
        setting(c, "book", show=("depth",))


def test_seed_spreads_and_per_sigma_seed_std():
    records = [rec(0.1, 0, 0.90, 1, 1.0), rec(2.5, 0, 0.80, 1, 1.0),
               rec(0.1, 1, 0.88, 1, 1.0), rec(2.5, 1, 0.82, 1, 1.0),
               rec(0.1, 2, 0.86, 1, 1.0)]  # seed 2 lacks sigma_w = 2.5
    (arm,) = arms(records)
    assert seed_spreads(arm) == pytest.approx({0: 10.0, 1: 6.0})
    std = seed_std_pp(arm)
    assert std[0.1] == pytest.approx(2.0)  # 90, 88, 86: sample std 2 pp
    assert std[2.5] == pytest.approx(100 * np.std([0.80, 0.82], ddof=1))


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


def test_the_collapse_pools_every_experiments_runs_of_an_arm_on_the_quick_grid(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    for name in ("sgd_remembers", "seed_noise"):  # the same SGD arm: one seed, and the noise seeds
        for c in runs(name, "smoke"):
            results.append_record(results.results_path(name, "smoke"), stored(c, name))
    noise = noise_floor("smoke", "late")
    assert noise is not None and noise.seeds == 2 and noise.n_test == 256 and noise.spread_arms == 1
    (point,) = collapse_points("smoke", "late", noise)
    assert point.experiment == "sgd_remembers" and point.clock == "T_SGD"
    assert sorted({r.config.seed for r in point.arm.records}) == [0, 1] and not point.spread.borrowed
    assert baseline_arm([point], "smoke") is point.arm
    (row,) = selection_rows("seed_noise", "smoke")
    assert set(row) == {"arm", *(f"{s}: {k}" for s in ("best", "late")
                                 for k in ("spread (pp)", "epochs", "interpolating"))}


def test_the_collapse_counts_an_arm_with_the_seeds_that_cover_its_grid(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    configs = runs("seed_noise", "smoke")  # seed 0 at both sigma_w, then seed 1
    path = results.results_path("seed_noise", "smoke")
    for c in configs[:3]:  # seed 1 has one sigma_w of two: still running
        results.append_record(path, stored(c, "seed_noise"))
    (point,) = collapse_points("smoke", "late", None)
    assert {r.config.seed for r in point.arm.records} == {0} and len(point.arm.records) == 2
    assert point.spread.seeds == 1
    results.append_record(path, stored(configs[3], "seed_noise"))
    (point,) = collapse_points("smoke", "late", None)
    assert {r.config.seed for r in point.arm.records} == {0, 1} and point.spread.seeds == 2


def test_direction_kept_reads_the_cosine_at_the_selected_checkpoint_of_the_runs_that_record_it():
    def with_cosines(r, cosines):
        return dataclasses.replace(r, history={**r.history, "init_cosine": cosines})

    records = [with_cosines(rec(0.1, 0, 0.9, 1, 1.0), [1.0, 0.3, 0.1, 0.0]),  # selected epoch 1: 0.3
               with_cosines(rec(0.1, 1, 0.9, 1, 1.0), [1.0, 0.5, 0.2, 0.0]),
               with_cosines(rec(2.5, 0, 0.8, 1, 1.0), [1.0, 0.99, 0.98, 0.97]),
               rec(2.5, 1, 0.8, 1, 1.0),  # trained before the geometry was recorded
               rec(0.5, 0, 0.85, 1, 1.0)]
    (arm,) = arms(records, selection="best")
    kept = direction_kept(arm)
    assert list(kept) == [0.1, 2.5]  # sigma_w = 0.5 has no run that records it
    assert kept[0.1] == (pytest.approx(0.4), 2) and kept[2.5] == (pytest.approx(0.99), 1)

    point = clock_point("x", arm, None)
    assert spread_and_direction([point]) == [(pytest.approx(0.99), pytest.approx(point.spread.value))]
    (no_direction,) = arms([records[0], records[1], records[4]], selection="best")
    assert spread_and_direction([clock_point("x", no_direction, None)]) == []  # largest: 0.5
    unfitted = [with_cosines(rec(s, 0, 0.9, None, 1.0), [1.0, 0.5, 0.5, 0.5]) for s in (0.1, 2.5)]
    (unfitted,) = arms(unfitted, selection="best")
    assert spread_and_direction([clock_point("x", unfitted, None)]) == []  # does not interpolate


def store(name, c, acc, tau, collapse=False):
    """A finished run of grid config ``c`` of experiment ``name`` in the results store (its history as long as
    ``c``'s epochs), falling to 50 % train accuracy at its last epoch with ``collapse``."""
    r = rec(c.sigma_w, c.seed, acc, tau, 1.0, epochs=c.epochs, collapse_to=0.5 if collapse else None)
    results.append_record(results.results_path(name, "smoke"),
                          dataclasses.replace(r, config=c, id=run_id(c), experiment=name))


def test_the_borrowed_seed_std_pools_only_arms_whose_selected_predictors_interpolate(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    for c in runs("seed_noise", "smoke"):  # SGD: spreads 1 and 3 pp over seeds 0 and 1, every run fits
        store("seed_noise", c, 0.8 - (0.01 + 0.02 * c.seed) * (c.sigma_w > 0.5), 1)
    other = [c for c in runs("seeds", "smoke") if c.optimizer == "adam"]
    for c in other:  # Adam: spreads 0 and 10 pp, never fitting the training set
        store("seeds", c, 0.8 - 0.1 * c.seed * (c.sigma_w > 0.5), None)
    noise = noise_floor("smoke", "late")
    assert noise.spread_arms == 1 and noise.spread_std_pp == pytest.approx(np.std([1.0, 3.0], ddof=1))
    assert noise.spread_df == 1  # two seeds of one arm
    assert math.isnan(noise.unstable_spread_std_pp) and noise.unstable_spread_arms == 0  # no unstable arm


def test_unstable_arms_are_pooled_apart_and_lend_their_std_only_to_unstable_arms(tmp_path, monkeypatch):
    monkeypatch.setenv("FIBOOK_RESULTS", str(tmp_path))
    for c in runs("seed_noise", "smoke"):  # SGD, stable: spreads 1 and 3 pp
        store("seed_noise", c, 0.8 - (0.01 + 0.02 * c.seed) * (c.sigma_w > 0.5), 1)
    for c in (c for c in runs("seeds", "smoke") if c.optimizer == "adam"):  # Adam: 0 and 4 pp, every run collapses
        store("seeds", c, 0.8 - 0.04 * c.seed * (c.sigma_w > 0.5), 1, collapse=True)
    noise = noise_floor("smoke", "best")  # the best checkpoint (epoch 1) of every run fits
    assert (noise.spread_arms, noise.spread_df) == (1, 1)
    assert noise.spread_std_pp == pytest.approx(np.std([1.0, 3.0], ddof=1))
    assert (noise.unstable_spread_arms, noise.unstable_spread_df) == (1, 1)
    assert noise.unstable_spread_std_pp == pytest.approx(np.std([0.0, 4.0], ddof=1))
    (stable_one,) = arms([rec(s, 0, 0.9 - 0.05 * (s > 1), 1, 1.0) for s in (0.1, 2.5)])
    (unstable_one,) = arms([rec(s, 0, 0.9 - 0.05 * (s > 1), 1, 1.0, collapse_to=0.5) for s in (0.1, 2.5)])
    assert spread_estimate(stable_one, noise).se == pytest.approx(noise.spread_std_pp)
    assert spread_estimate(unstable_one, noise).se == pytest.approx(noise.unstable_spread_std_pp)
    rows = {r["arm"]: r for r in reading_rows("smoke")}
    assert rows["Adam (η = 0.001, b = 128, 2 epochs) [unstable]"]["stable"] == "no"
    sgd = rows["SGD (η = 0.05, b = 128, 2 epochs)"]
    assert sgd["stable"] == "yes" and sgd["seeds"] == 2
    assert set(sgd) == {"arm", "seeds", "best: spread (pp)", "late: spread (pp)", "last: spread (pp)",
                        f"last {LAST_EPOCHS} epochs: spread (pp)", "stable"}
    assert sgd["best: spread (pp)"] == "2.0"  # the seed-means: 1 and 3 pp average to 2


def test_the_direction_figures_share_each_mechanisms_colour_and_marker():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fibook.forgetting import plots

    def arm(optimizer, lr):
        records = [dataclasses.replace(r, history={**r.history, "init_cosine": [1.0, 0.5, 0.4, 0.3]})
                   for r in (rec(0.1, 0, 0.9, 1, 1.0, optimizer=optimizer, lr=lr),
                             rec(2.5, 0, 0.8, 1, 1.0, optimizer=optimizer, lr=lr))]
        (a,) = arms(records)
        return a

    arm_list = [arm("adam", 1e-3), arm("msgd", 1e-2), arm("adam", 1e-2)]
    fig, ax = plt.subplots()
    plots.direction_vs_sigma(arm_list, ax, legend=None)
    lines = ax.get_lines()
    adam, momentum = plots.MECHANISM_COLORS["Adam"], plots.MECHANISM_COLORS["momentum SGD"]
    assert [tuple(matplotlib.colors.to_rgba(ln.get_color())) for ln in lines] == [tuple(adam), tuple(momentum),
                                                                                  tuple(adam)]
    assert [ln.get_marker() for ln in lines] == ["^", "p", "^"]
    assert [ln.get_linestyle() for ln in lines] == ["-", "-", "--"]  # the second Adam arm: a style of its own
    # read at its raw step momentum SGD does not count on T_SGD, but its direction and spread are read like any
    # fitted arm's
    point = clock_point("x", arm_list[1], None, momentum="raw")
    assert not point.included and spread_and_direction([point]) == [(pytest.approx(0.5),
                                                                     pytest.approx(point.spread.value))]
    plt.close(fig)


def test_a_runs_stability_reads_its_fit_drop_loss_and_collapse():
    fit = stability(rec(1.0, 0, 0.9, 1, 1.0, epochs=4))
    assert (fit.fit_fraction, fit.drop_pp, fit.peak_loss, fit.collapsed, fit.diverged) == (1.0, 0.0, 0.01, False,
                                                                                            False)
    assert not fit.unstable
    fell = stability(rec(1.0, 0, 0.9, 1, 1.0, epochs=4, collapse_to=0.3))
    # epochs 3 and 4 are the second half; the fit was lost at epoch 4
    assert (fell.fit_fraction, fell.drop_pp, fell.peak_loss, fell.collapsed) == (0.5, pytest.approx(70.0), 5.0, True)
    assert fell.unstable
    never = stability(rec(1.0, 0, 0.9, None, 1.0, epochs=4))
    assert (never.fit_fraction, never.drop_pp, never.collapsed) == (0.0, 0.0, False) and math.isnan(never.peak_loss)
    diverged = stability(rec(1.0, 0, 0.9, None, 1.0, status="diverged"))
    assert diverged.diverged and diverged.unstable and not diverged.collapsed


@pytest.mark.parametrize(("low", "unstable"), [(0.9 - 1e-9, True), (0.9, False)])
def test_an_arm_is_labelled_unstable_when_one_run_falls_below_the_collapse_floor_after_fitting(low, unstable):
    records = [rec(0.1, 0, 0.9, 1, 1.0), rec(2.5, 0, 0.8, 1, 1.0), rec(0.1, 1, 0.9, 1, 1.0),
               rec(2.5, 1, 0.8, 1, 1.0, collapse_to=low)]  # one run of four
    (arm,) = arms(records)
    assert arm.unstable is unstable and [s.collapsed for s in arm.stability] == [False, False, False, unstable]
    assert arm.label == "SGD (η = 0.01)" + UNSTABLE * unstable
    assert UNSTABLE == " [unstable]"
    assert summary_rows([arm])[0]["arm"] == arm.label  # every table shows the mark


def test_the_stability_table_shows_each_arms_worst_run():
    records = [rec(0.1, 0, 0.9, 1, 1.0, epochs=4), rec(2.5, 0, 0.8, 1, 1.0, epochs=4, collapse_to=0.6),
               rec(1.0, 0, 0.1, None, 1.0, epochs=4, status="diverged")]
    (arm,) = arms(records)
    (row,) = stability_rows([arm])
    assert row == {"arm": "SGD (η = 0.01) [unstable]", "runs": 3, "second-half epochs fitting (worst run)": "0 %",
                   "deepest drop after fitting (pp)": "40.0", "largest train loss after fitting": "5",
                   "collapsed / diverged runs": "1 / 1"}


def test_the_radial_memory_interval_is_the_least_squares_slope_on_log_axes():
    from scipy.stats import linregress

    sigmas, norms = [0.1, 0.3, 1.0, 2.5], [1.0, 2.2, 9.0, 17.0]
    (arm,) = arms([rec(s, 0, 0.9, 1, n) for s, n in zip(sigmas, norms, strict=True)])
    fit = linregress(np.log(sigmas), np.log(norms))
    e = arm.radial_memory_estimate()
    assert (e.value, e.se, e.df) == (pytest.approx(fit.slope), pytest.approx(fit.stderr), 2)
    assert e.value == pytest.approx(arm.radial_memory)
    (two,) = arms([rec(s, 0, 0.9, 1, n) for s, n in ((0.1, 1.0), (2.5, 17.0))])
    assert not two.radial_memory_estimate().has_error_bar  # two sigma_w: a slope without an interval
    with_diverged = [rec(s, 0, 0.9, 1, n) for s, n in zip(sigmas, norms, strict=True)]
    with_diverged[-1] = rec(2.5, 0, 0.1, None, 1e9, status="diverged")
    (three,) = arms(with_diverged)
    left = linregress(np.log(sigmas[:3]), np.log(norms[:3]))
    assert three.radial_memory_estimate().value == pytest.approx(left.slope)  # the diverged sigma_w is left out
    assert three.radial_memory_estimate().df == 1
    (alone,) = arms([rec(0.1, 0, 0.9, 1, 1.0), rec(2.5, 0, 0.1, None, 1e9, status="diverged")])
    assert math.isnan(alone.radial_memory_estimate().value)


def test_the_last_epochs_spread_is_over_the_seed_mean_of_the_last_five_epochs():
    records = [rec(0.1, seed, 0.9, 1, 1.0, epochs=8, final_acc=0.9) for seed in (0, 1)]
    records += [rec(2.5, 0, 0.9, 1, 1.0, epochs=8, final_acc=0.8), rec(2.5, 1, 0.9, 1, 1.0, epochs=8, final_acc=0.7)]
    (arm,) = arms(records)
    # epochs 4..8 all read the final accuracy: seed-means 90 % and 75 %
    assert arm.last_epochs_spread_pp == pytest.approx(15.0) and arm.spread_pp == pytest.approx(0.0)


def test_a_run_that_diverged_in_its_first_epoch_is_an_unstable_arm_not_an_error():
    r = rec(2.5, 0, 0.1, None, 1e9, status="diverged")
    first = dataclasses.replace(r, history={k: v[:1] for k, v in r.history.items()}, diverged_epoch=1,
                                summary=dataclasses.replace(r.summary, selected_epoch=None, tau_interp=None))
    (arm,) = arms([rec(0.1, 0, 0.9, 1, 1.0), first])
    assert arm.unstable and arm.diverged == [False, True]
