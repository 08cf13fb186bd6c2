"""A run's forgetting clock (fibook.forgetting.clocks): which clock a mechanism reads, and momentum SGD's T_SGD at
its effective step eta / (1 - mu) and at its raw eta."""

import dataclasses

import pytest
from synthetic import rec

from fibook.forgetting.arms import arm_label, arms, summary_rows
from fibook.forgetting.clocks import clock_key, effective_lr, forgetting_clock, heavy_ball_momentum, sgd_with_l2
from fibook.forgetting.collapse import clock_point
from fibook.forgetting.config import TrainConfig


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


def test_an_unknown_optimizer_is_refused_not_given_a_default_clock():
    record = rec(0.1, 0, 0.9, 1, 1.0, optimizer="lion")
    with pytest.raises(ValueError, match="unknown optimizer 'lion'; choose one of: sgd"):
        clock_key(record.config)
    with pytest.raises(ValueError, match="unknown optimizer 'lion'"):
        arm_label(record.config)


@pytest.mark.parametrize(("optimizer", "weight_decay", "with_l2", "clock"), [
    ("sgd", 0.0, False, "T_SGD"), ("sgd", 0.05, True, "T_L2"), ("msgd", 0.05, False, "T_SGD"),
    ("adam", 0.0, False, "T_adapt"), ("adamw", 0.01, False, "T_adapt"), ("muon", 0.0, False, "T_adapt")])
def test_only_plain_sgd_with_weight_decay_is_the_sgd_plus_l2_arm_on_t_l2(optimizer, weight_decay, with_l2, clock):
    config = TrainConfig(optimizer=optimizer, lr=0.01, weight_decay=weight_decay)
    assert sgd_with_l2(config) is with_l2
    assert clock_key(config) == clock
    assert forgetting_clock(config, {"T_SGD": 1.0, "T_L2": 2.0, "T_adapt": 3.0}, "raw") == (
        clock, {"T_SGD": 1.0, "T_L2": 2.0, "T_adapt": 3.0}[clock])


def test_heavy_ball_momentum_is_an_sgd_runs_option_or_default_and_no_adaptive_methods():
    def config(optimizer, **options):
        return TrainConfig(optimizer=optimizer, lr=0.02, options=options)

    assert heavy_ball_momentum(config("sgd")) == 0.0 and effective_lr(config("sgd")) == 0.02
    assert heavy_ball_momentum(config("sgd", momentum=0.5)) == 0.5
    assert heavy_ball_momentum(config("msgd")) == 0.9
    assert heavy_ball_momentum(config("msgd", momentum=0.99)) == 0.99
    assert effective_lr(config("msgd", momentum=0.99)) == pytest.approx(2.0)  # 0.02 / 0.01
    # Muon's own momentum (0.95 by default) is not a heavy ball on T_SGD: its clock is T_adapt, read as recorded
    for adaptive in (config("muon"), config("muon", momentum=0.5), config("adam"), config("adamw")):
        assert heavy_ball_momentum(adaptive) == 0.0 and effective_lr(adaptive) == 0.02
        assert forgetting_clock(adaptive, {"T_adapt": 7.0}) == ("T_adapt", 7.0)
