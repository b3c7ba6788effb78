"""Learning-rate schedules: each type's formula, warm-up, and building from a project's optimizer."""
from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnconsole.engine.project import model
from nnconsole.engine.plan.schedule import ScheduleParams, from_optimizer, learning_rate


def test_constant_is_base_lr_everywhere():
    p = ScheduleParams(base_lr=0.05, type="constant", lr_multiplier=0.5, lr_update_interval=3)
    assert [learning_rate(p, i) for i in (0, 1, 3, 1000)] == [0.05] * 4


def test_exponential_is_nnc_formula():
    p = ScheduleParams(base_lr=0.1, type="exponential", lr_multiplier=0.9, lr_update_interval=10)
    assert learning_rate(p, 0) == 0.1
    assert learning_rate(p, 9) == 0.1
    assert learning_rate(p, 10) == pytest.approx(0.09, rel=1e-15)
    assert learning_rate(p, 19) == pytest.approx(0.09, rel=1e-15)
    assert learning_rate(p, 20) == pytest.approx(0.081, rel=1e-15)
    assert learning_rate(p, 1234) == pytest.approx(0.1 * 0.9 ** 123, rel=1e-13)


@pytest.mark.parametrize("interval,mult", [(0, 0.5), (7, 1.0)])
def test_exponential_without_interval_or_multiplier_is_constant(interval, mult):
    p = ScheduleParams(base_lr=0.3, type="exponential", lr_multiplier=mult, lr_update_interval=interval)
    assert {learning_rate(p, i) for i in range(0, 100, 7)} == {0.3}


def test_step_counts_steps_reached_including_the_step_itself():
    p = ScheduleParams(base_lr=1.0, type="step", steps=(30, 60, 90), gamma=0.1)
    assert learning_rate(p, 29) == 1.0
    assert learning_rate(p, 30) == pytest.approx(0.1)
    assert learning_rate(p, 59) == pytest.approx(0.1)
    assert learning_rate(p, 60) == pytest.approx(0.01)
    assert learning_rate(p, 10_000) == pytest.approx(0.001)


def test_step_with_duplicate_points_applies_gamma_twice():
    p = ScheduleParams(base_lr=1.0, type="step", steps=[5, 5], gamma=0.5)
    assert p.steps == (5, 5)  # lists become tuples
    assert learning_rate(p, 4) == 1.0 and learning_rate(p, 5) == 0.25


def test_cosine_endpoints_middle_and_clamp():
    p = ScheduleParams(base_lr=0.2, type="cosine", max_iter=100)
    assert learning_rate(p, 0) == pytest.approx(0.2)
    assert learning_rate(p, 50) == pytest.approx(0.1, rel=1e-12)
    assert learning_rate(p, 25) == pytest.approx(0.2 * 0.5 * (1 + math.cos(math.pi / 4)), rel=1e-12)
    assert learning_rate(p, 100) == pytest.approx(0.0, abs=1e-15)
    assert learning_rate(p, 250) == pytest.approx(0.0, abs=1e-15)


def test_cosine_uses_total_iterations_when_max_iter_is_zero():
    p = ScheduleParams(base_lr=1.0, type="cosine", max_iter=0, total_iterations=40)
    assert learning_rate(p, 20) == pytest.approx(0.5, rel=1e-12)
    q = dataclasses.replace(p, max_iter=80)
    assert learning_rate(q, 20) == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)), rel=1e-12)


@pytest.mark.parametrize("kind", ["cosine", "polynomial"])
def test_decay_without_any_length_is_an_error(kind):
    p = ScheduleParams(base_lr=1.0, type=kind)
    with pytest.raises(ValueError, match="max_iter"):
        learning_rate(p, 3)


def test_polynomial_power():
    p = ScheduleParams(base_lr=0.5, type="polynomial", max_iter=10, power=2.0)
    assert learning_rate(p, 0) == 0.5
    assert learning_rate(p, 3) == pytest.approx(0.5 * 0.7 ** 2, rel=1e-12)
    assert learning_rate(p, 10) == 0.0
    assert learning_rate(p, 11) == 0.0
    linear = dataclasses.replace(p, power=1.0)
    assert learning_rate(linear, 4) == pytest.approx(0.3, rel=1e-12)


def test_warmup_ramps_linearly_from_start_to_target():
    p = ScheduleParams(base_lr=0.4, type="constant", warmup_iterations=10, warmup_start_lr=0.1)
    assert learning_rate(p, 0) == pytest.approx(0.1)
    assert learning_rate(p, 5) == pytest.approx(0.25)
    assert learning_rate(p, 9) == pytest.approx(0.1 + 0.3 * 0.9)
    assert learning_rate(p, 10) == 0.4
    values = [learning_rate(p, i) for i in range(11)]
    assert all(b > a for a, b in zip(values, values[1:]))


def test_warmup_target_follows_the_schedule_during_the_ramp():
    p = ScheduleParams(base_lr=1.0, type="exponential", lr_multiplier=0.5, lr_update_interval=2,
                       warmup_iterations=4, warmup_start_lr=0.0)
    # target at 3 is 0.5 (one multiplication); ramp is 3/4 of the way from 0.
    assert learning_rate(p, 3) == pytest.approx(0.375)
    assert learning_rate(p, 4) == pytest.approx(0.25)


def test_warmup_from_zero_starts_at_zero():
    p = ScheduleParams(base_lr=0.01, warmup_iterations=3)
    assert learning_rate(p, 0) == 0.0
    assert learning_rate(p, 1) == pytest.approx(0.01 / 3)


def test_from_optimizer_copies_fields_and_warms_up_from_zero():
    opt = model.Optimizer(solver="Momentum", learning_rate=0.1, lr_multiplier=0.9, lr_update_interval=5,
                          schedule=model.Schedule(type="step", steps=[10, 20], gamma=0.2, max_iter=7, power=3.0),
                          warmup_iterations=4)
    p = from_optimizer(opt, 123)
    assert p == ScheduleParams(base_lr=0.1, type="step", lr_multiplier=0.9, lr_update_interval=5, steps=(10, 20),
                               gamma=0.2, max_iter=7, power=3.0, warmup_iterations=4, warmup_start_lr=0.0,
                               total_iterations=123)
    assert learning_rate(p, 0) == 0.0
    assert learning_rate(p, 15) == pytest.approx(0.02)


def test_from_optimizer_default_exponential_without_interval_is_constant():
    opt = model.Optimizer(learning_rate=0.001, lr_multiplier=0.5, lr_update_interval=0)
    p = from_optimizer(opt, 1000)
    assert p.type == "exponential"
    assert {learning_rate(p, i) for i in range(0, 1000, 37)} == {0.001}


def test_params_are_frozen_and_validated():
    p = ScheduleParams(base_lr=0.1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.base_lr = 0.2  # type: ignore[misc]
    with pytest.raises(ValueError, match="schedule type"):
        ScheduleParams(base_lr=0.1, type="linear")
    with pytest.raises(ValueError, match="lr_update_interval"):
        ScheduleParams(base_lr=0.1, lr_update_interval=-1)
    with pytest.raises(ValueError, match="lr_multiplier"):
        ScheduleParams(base_lr=0.1, lr_multiplier=0.0)
    with pytest.raises(ValueError, match="base_lr"):
        ScheduleParams(base_lr=float("nan"))
    with pytest.raises(ValueError, match="iteration"):
        learning_rate(p, -1)


@settings(max_examples=200, deadline=None)
@given(base=st.floats(1e-5, 10.0), mult=st.floats(0.01, 0.999), interval=st.integers(1, 50),
       it=st.integers(0, 5000))
@pytest.mark.slow
def test_exponential_decays_monotonically_and_matches_formula(base, mult, interval, it):
    p = ScheduleParams(base_lr=base, lr_multiplier=mult, lr_update_interval=interval)
    assert learning_rate(p, it + 1) <= learning_rate(p, it)
    assert learning_rate(p, it) == pytest.approx(base * mult ** (it // interval), rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(kind=st.sampled_from(["cosine", "polynomial"]), length=st.integers(1, 10_000), it=st.integers(0, 20_000),
       power=st.floats(0.5, 4.0))
def test_decays_stay_between_zero_and_base(kind, length, it, power):
    p = ScheduleParams(base_lr=0.7, type=kind, max_iter=length, power=power)
    lr = learning_rate(p, it)
    assert 0.0 <= lr <= 0.7
    assert learning_rate(p, it + 1) <= lr + 1e-15
