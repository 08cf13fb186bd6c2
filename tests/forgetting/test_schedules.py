"""The learning-rate schedules of a Part I run (:mod:`fibook.forgetting.schedules`): the constant rate of the
forgetting protocol, and the cosine decay against its closed form."""

import math

import pytest

from fibook.forgetting.schedules import SCHEDULES, constant_schedule, cosine_schedule


def test_the_protocols_schedule_keeps_the_rate_at_every_step():
    assert {constant_schedule(k, 100) for k in range(101)} == {1.0}


def test_the_cosine_schedule_falls_from_the_full_rate_to_zero_through_a_half_at_mid_run():
    total = 100
    factors = [cosine_schedule(k, total) for k in range(total + 1)]
    assert factors[0] == 1.0 and factors[total // 2] == pytest.approx(0.5) and factors[-1] == pytest.approx(0.0)
    assert all(a > b for a, b in zip(factors, factors[1:], strict=False))
    # its mean over the run is 1/2: the clocks of a cosine run are half those of a constant one (to O(1/K))
    assert sum(factors[:-1]) / total == pytest.approx(0.5, abs=1 / total)
    assert factors[25] == pytest.approx((1 + math.cos(math.pi / 4)) / 2)


def test_a_run_of_no_steps_is_not_a_division_by_zero():
    assert cosine_schedule(0, 0) == 1.0


def test_a_config_names_its_schedule_from_the_registry():
    assert SCHEDULES == {"constant": constant_schedule, "cosine": cosine_schedule}
