"""The N-worker plan: batch and LR scaling policies, exact schedule rescaling, warnings and the table."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnconsole.engine.plan.worker_plan import exact_interval, make_plan
from nnconsole.engine.plan.record import Plan, PlanError, PlanWarning
from nnconsole.engine.plan.explain import format_plan_table
from nnconsole.engine.project import model
from nnconsole.engine.plan.schedule import ScheduleParams, learning_rate
from tests.support.projects import plan_project


def codes(plan: Plan) -> list:
    return plan.warning_codes()


# ------------------------------------------------------------------------------------ NNC's example

def test_nnc_documented_example_linear():
    plan = make_plan(plan_project(batch=256, lr=0.1), workers=4)
    assert plan.per_worker_batch == 256
    assert plan.logical_batch == 1024
    assert plan.lr_scale == 4.0
    assert plan.effective_lr == pytest.approx(0.4, rel=1e-15)
    assert plan.base_lr == 0.1
    assert plan.iteration_divisor == 4
    assert any("0.1 -> 0.4" in n for n in plan.notes)
    assert plan.warnings == []


def test_nnc_documented_example_keep_logical_batch():
    project = plan_project(batch=256, lr=0.1, interval=10, multiplier=0.9)
    plan = make_plan(project, workers=4, policy="keep-logical-batch", dataset_size=10_000)
    single = make_plan(project, workers=1, dataset_size=10_000)
    assert plan.per_worker_batch == 64
    assert plan.logical_batch == 256
    assert plan.effective_lr == 0.1 and plan.lr_scale == 1.0
    # the logical batch is unchanged, so epochs and schedule lengths are too
    assert plan.iterations_per_epoch == single.iterations_per_epoch == math.ceil(10_000 / 256)
    assert plan.iteration_divisor == 1
    assert plan.effective_lr_update_interval == 10 and plan.effective_lr_multiplier == 0.9
    assert plan.warnings == []


def test_sqrt_policy():
    plan = make_plan(plan_project(lr=0.1), workers=4, policy="sqrt")
    assert plan.lr_scale == 2.0 and plan.effective_lr == pytest.approx(0.2)
    assert plan.logical_batch == 1024
    two = make_plan(plan_project(lr=0.1), workers=2, policy="sqrt")
    assert two.effective_lr == pytest.approx(0.1 * math.sqrt(2), rel=1e-15)


def test_none_policy_keeps_lr_but_still_rescales_iterations():
    plan = make_plan(plan_project(lr=0.1, interval=12, multiplier=0.5), workers=4, policy="none")
    assert plan.effective_lr == 0.1 and plan.lr_scale == 1.0
    assert plan.logical_batch == 1024
    assert plan.effective_lr_update_interval == 3


def test_adam_alpha_scales_like_lr_with_info_note_not_warning():
    plan = make_plan(plan_project(solver="Adam", lr=0.001), workers=8)
    assert plan.effective_lr == pytest.approx(0.008)
    assert any("Alpha 0.001 -> 0.008" in n for n in plan.notes)
    assert any("sqrt" in n and "Adam" in n for n in plan.notes)
    assert plan.warnings == []
    sq = make_plan(plan_project(solver="Adam", lr=0.001), workers=8, policy="sqrt")
    assert not any("Adam-family" in n for n in sq.notes)


def test_update_interval_is_part_of_the_logical_batch():
    project = plan_project(batch=32, update_interval=3, max_epoch=7)
    plan = make_plan(project, workers=4, dataset_size=1000)
    assert plan.logical_batch == 32 * 4 * 3
    assert plan.iterations_per_epoch == math.ceil(1000 / (32 * 4)) == 8
    assert plan.updates_per_epoch == pytest.approx(8 / 3)
    assert plan.total_iterations == 8 * 7
    assert any("x update interval 3" in n for n in plan.notes)


def test_defaults_come_from_the_project():
    project = plan_project(workers=2, scaling="sqrt")
    plan = make_plan(project)
    assert plan.workers == 2 and plan.policy == "sqrt"
    assert make_plan(project, workers=1).workers == 1


def test_unknown_dataset_size_leaves_epoch_figures_unknown():
    plan = make_plan(plan_project(), workers=2)
    assert plan.dataset_size is None
    assert plan.iterations_per_epoch is None and plan.total_iterations is None and plan.updates_per_epoch is None


@settings(max_examples=200, deadline=None)
@given(batch=st.integers(1, 512), n=st.integers(1, 64), u=st.integers(1, 8), size=st.integers(1, 200_000))
def test_epoch_arithmetic_invariants(batch, n, u, size):
    plan = make_plan(plan_project(batch=batch, update_interval=u), workers=n, dataset_size=size)
    per_iter = plan.per_worker_batch * n
    assert plan.logical_batch == per_iter * u
    assert plan.iterations_per_epoch * per_iter >= size > (plan.iterations_per_epoch - 1) * per_iter
    assert plan.total_iterations == plan.iterations_per_epoch * plan.max_epoch
    assert plan.effective_lr == pytest.approx(0.1 * n, rel=1e-15)


# ------------------------------------------------------------------------------------ LR update interval

@pytest.mark.parametrize("interval,n,new_interval,new_mult,warned", [
    (12, 4, 3, 0.9, False),
    (10, 4, 2, 0.9 ** 0.8, True),
    (3, 4, 1, 0.9 ** (4 / 3), True),
    (8, 8, 1, 0.9, False),
    (10, 1, 10, 0.9, False),
    (7, 2, 3, 0.9 ** (6 / 7), True),
])
def test_lr_update_interval(interval, n, new_interval, new_mult, warned):
    plan = make_plan(plan_project(interval=interval, multiplier=0.9), workers=n)
    assert plan.lr_update_interval == interval and plan.lr_multiplier == 0.9
    assert plan.effective_lr_update_interval == new_interval
    assert plan.effective_lr_multiplier == pytest.approx(new_mult, rel=1e-14)
    assert ("lr-interval-not-multiple" in codes(plan)) is warned
    if warned:
        w = next(w for w in plan.warnings if w.code == "lr-interval-not-multiple")
        assert "optimizer.lr_update_interval" in w.message and f"{n} workers" in w.message
        assert f"multiple of {n}" in w.fix


def test_non_multiple_interval_note_states_both_numbers():
    plan = make_plan(plan_project(interval=10, multiplier=0.9), workers=4)
    assert ("LR update interval 10 is not a multiple of 4 workers: using every 2 iterations with multiplier "
            "0.9^(8/10)=0.9192 so the LR per sample seen is unchanged.") in plan.notes
    w = plan.warnings[0]
    assert "8 or 12" in w.fix


def test_multiple_interval_note_and_no_warning():
    plan = make_plan(plan_project(interval=12, multiplier=0.9), workers=4)
    assert any("LR update interval 12 -> 3" in n for n in plan.notes)
    assert plan.warnings == []


def test_interval_irrelevant_without_multiplier_or_other_schedule():
    assert make_plan(plan_project(interval=10, multiplier=1.0), workers=4).warnings == []
    cos = make_plan(plan_project(interval=10, multiplier=0.9, schedule=model.Schedule(type="cosine", max_iter=400)),
                    workers=4)
    assert "lr-interval-not-multiple" not in codes(cos)


def _single_and_n(interval: int, mult: float, n: int):
    project = plan_project(lr=0.1, interval=interval, multiplier=mult)
    p1 = make_plan(project, workers=1).schedule_params()
    pn_plan = make_plan(project, workers=n)
    return p1, pn_plan, pn_plan.schedule_params()


CASES = [(10, 0.9, 4), (12, 0.9, 4), (3, 0.9, 4), (7, 0.5, 3), (100, 0.95, 8), (5, 0.8, 16), (9, 0.7, 2),
         (1, 0.99, 4), (64, 0.3, 5)]


@pytest.mark.parametrize("interval,mult,n", CASES)
def test_schedule_matches_single_worker_at_common_update_points(interval, mult, n):
    """Where an N-worker update point and a single-worker update point fall on the same number of samples
    (i' a multiple of interval' and i'*N a multiple of interval), the LRs agree exactly up to lr_scale."""
    p1, plan, pn = _single_and_n(interval, mult, n)
    i2 = plan.effective_lr_update_interval
    checked = 0
    for i in range(0, 50 * i2 * interval + 1):
        if i % i2 == 0 and (i * n) % interval == 0:
            assert learning_rate(pn, i) == pytest.approx(learning_rate(p1, i * n) * plan.lr_scale, rel=1e-12)
            checked += 1
    assert checked >= 2


@pytest.mark.parametrize("interval,mult,n", CASES)
def test_cumulative_decay_per_sample_is_exact_at_every_update_point(interval, mult, n):
    """At i' = j*interval' the N-worker run has seen i'*N single-worker iterations' worth of samples, and its
    decay factor equals mult ** (samples seen / samples per single-worker interval)."""
    p1, plan, pn = _single_and_n(interval, mult, n)
    i2 = plan.effective_lr_update_interval
    for j in range(51):
        i = j * i2
        factor = learning_rate(pn, i) / plan.effective_lr
        assert factor == pytest.approx(mult ** (i * n / interval), rel=1e-12, abs=0)
        # constant between update points
        assert learning_rate(pn, i + i2 - 1) == learning_rate(pn, i)


def test_nnc_uncorrected_multiplier_would_drift():
    """Regression for why we correct the multiplier: NNC's floor alone decays 1.25x too fast at N=4, I=10."""
    p1, plan, pn = _single_and_n(10, 0.9, 4)
    nnc = ScheduleParams(base_lr=0.4, lr_multiplier=0.9, lr_update_interval=2)
    i = 10  # 40 single-worker iterations of samples: 4 multiplications on one worker
    assert learning_rate(p1, 40) == pytest.approx(0.1 * 0.9 ** 4)
    assert learning_rate(pn, i) == pytest.approx(0.4 * 0.9 ** 4, rel=1e-12)
    assert learning_rate(nnc, i) == pytest.approx(0.4 * 0.9 ** 5)


@settings(max_examples=300, deadline=None)
@given(interval=st.integers(1, 200), mult=st.floats(0.05, 0.999), n=st.integers(1, 32), i=st.integers(0, 3000))
def test_n_worker_lr_never_more_than_one_update_away(interval, mult, n, i):
    """Between update points the exponent differs from the single-worker one by less than max(1, N/interval)."""
    i2, m2 = exact_interval(interval, mult, n)
    exp_n = (i // i2) * i2 * n / interval
    assert m2 ** (i // i2) == pytest.approx(mult ** exp_n, rel=1e-9)
    exp_1 = (i * n) // interval
    assert abs(exp_n - exp_1) < max(1.0, n / interval) + 1e-9


# ------------------------------------------------------------------------------------ other schedule lengths

def test_step_points_divided_and_rounded():
    plan = make_plan(plan_project(schedule=model.Schedule(type="step", steps=[30, 60, 90], gamma=0.1)), workers=4)
    assert plan.steps == (30, 60, 90)
    assert plan.effective_steps == (8, 15, 23)  # 7.5 -> 8, 15, 22.5 -> 23 (half up)
    assert any("[30, 60, 90] -> [8, 15, 23]" in n and "rounded" in n for n in plan.notes)
    p = plan.schedule_params()
    assert learning_rate(p, 7) == pytest.approx(0.4)
    assert learning_rate(p, 8) == pytest.approx(0.04)
    assert learning_rate(p, 23) == pytest.approx(0.0004)


def test_tiny_step_points_stay_at_least_one_and_keep_their_count():
    plan = make_plan(plan_project(schedule=model.Schedule(type="step", steps=[1, 2], gamma=0.5)), workers=4)
    assert plan.effective_steps == (1, 1)
    assert any("coincide" in n for n in plan.notes)
    p = plan.schedule_params()
    assert learning_rate(p, 0) == pytest.approx(0.4) and learning_rate(p, 1) == pytest.approx(0.1)


@pytest.mark.parametrize("kind", ["cosine", "polynomial"])
def test_decay_length_divided(kind):
    plan = make_plan(plan_project(schedule=model.Schedule(type=kind, max_iter=1000, power=2.0)), workers=8)
    assert plan.effective_max_iter == 125
    assert any("max_iter) 1000 -> 125" in n for n in plan.notes)
    p = plan.schedule_params()
    single = make_plan(plan_project(schedule=model.Schedule(type=kind, max_iter=1000, power=2.0)),
                       workers=1).schedule_params()
    for i in (0, 10, 60, 125, 200):
        assert learning_rate(p, i) == pytest.approx(8 * learning_rate(single, 8 * i), rel=1e-12, abs=1e-15)
    odd = make_plan(plan_project(schedule=model.Schedule(type=kind, max_iter=10)), workers=4)
    assert odd.effective_max_iter == 3  # 2.5 rounds half up


def test_whole_run_decay_uses_n_worker_total():
    project = plan_project(batch=100, max_epoch=4, schedule=model.Schedule(type="cosine", max_iter=0))
    plan = make_plan(project, workers=4, dataset_size=4000)
    assert plan.total_iterations == 40 and plan.effective_max_iter == 0
    p = plan.schedule_params()
    assert p.total_iterations == 40
    assert learning_rate(p, 20) == pytest.approx(plan.effective_lr / 2, rel=1e-12)
    with pytest.raises(PlanError, match="dataset"):
        make_plan(project, workers=4).schedule_params()


def test_optimizer_warmup_divided():
    plan = make_plan(plan_project(warmup_iterations=100), workers=8)
    assert plan.warmup_iterations == 100 and plan.effective_warmup_iterations == 13  # 12.5 -> 13
    assert any("warmup_iterations) 100 -> 13" in n for n in plan.notes)
    p = plan.schedule_params()
    assert p.warmup_iterations == 13 and p.warmup_start_lr == 0.0
    assert make_plan(plan_project(warmup_iterations=2), workers=8).effective_warmup_iterations == 1
    assert make_plan(plan_project(warmup_iterations=100), workers=4).effective_warmup_iterations == 25


# ------------------------------------------------------------------------------------ Goyal warm-up

def test_goyal_warmup_ramps_from_base_to_effective_lr():
    project = plan_project(batch=256, lr=0.1, warmup_epochs=5)
    plan = make_plan(project, workers=4, dataset_size=51_200)
    assert plan.iterations_per_epoch == 50
    assert plan.scaling_warmup_iterations == 250 == plan.total_warmup_iterations
    p = plan.schedule_params()
    assert p.warmup_start_lr == 0.1 and p.warmup_iterations == 250
    assert learning_rate(p, 0) == pytest.approx(0.1)
    assert learning_rate(p, 125) == pytest.approx(0.25)
    assert learning_rate(p, 249) == pytest.approx(0.1 + 0.3 * 249 / 250)
    assert learning_rate(p, 250) == pytest.approx(0.4)
    lrs = [learning_rate(p, i) for i in range(251)]
    assert all(b > a for a, b in zip(lrs, lrs[1:]))
    assert any("Goyal" in n and "250 iterations" in n for n in plan.notes)


def test_goyal_warmup_fractional_epochs_and_unknown_size():
    project = plan_project(batch=256, lr=0.1, warmup_epochs=0.5)
    assert make_plan(project, workers=4, dataset_size=51_200).scaling_warmup_iterations == 25
    unknown = make_plan(project, workers=4)
    assert unknown.scaling_warmup_iterations is None and unknown.total_warmup_iterations is None
    with pytest.raises(PlanError, match="warmup_epochs"):
        unknown.schedule_params()


def test_goyal_warmup_is_off_when_lr_is_not_scaled():
    project = plan_project(warmup_epochs=5)
    for plan in (make_plan(project, workers=1, dataset_size=10_000),
                 make_plan(project, workers=4, policy="keep-logical-batch", dataset_size=10_000)):
        assert plan.scaling_warmup_iterations == 0
        assert plan.schedule_params().warmup_iterations == 0
        assert any("no effect" in n for n in plan.notes)


def test_goyal_and_optimizer_warmup_merge():
    project = plan_project(batch=256, lr=0.1, warmup_epochs=1, warmup_iterations=400)
    plan = make_plan(project, workers=4, dataset_size=51_200)
    assert plan.effective_warmup_iterations == 100 and plan.scaling_warmup_iterations == 50
    p = plan.schedule_params()
    assert p.warmup_iterations == 100 and p.warmup_start_lr == 0.0
    assert learning_rate(p, 50) == pytest.approx(0.2)
    assert any("merged" in n for n in plan.notes)


def test_warmup_longer_than_run_warns():
    plan = make_plan(plan_project(max_epoch=3, warmup_epochs=5), workers=2, dataset_size=5120)
    assert "warmup-longer-than-run" in codes(plan)


# ------------------------------------------------------------------------------------ warnings

def test_logical_batch_larger_than_dataset():
    plan = make_plan(plan_project(batch=256), workers=4, dataset_size=1000)
    w = next(w for w in plan.warnings if w.code == "logical-batch-exceeds-dataset")
    assert "1024" in w.message and "1000" in w.message
    assert "config.batch_size" in w.message and "multi_gpu.workers" in w.message and w.fix
    assert "logical-batch-exceeds-dataset" not in codes(make_plan(plan_project(batch=256), workers=4,
                                                                  dataset_size=1024))


def test_logical_batch_above_8192_with_linear_scaling():
    plan = make_plan(plan_project(batch=1024), workers=16)
    w = next(w for w in plan.warnings if w.code == "logical-batch-too-large")
    assert "16384" in w.message and "8192" in w.message and "sqrt" in w.fix and "warmup_epochs" in w.fix
    assert "logical-batch-too-large" not in codes(make_plan(plan_project(batch=1024), workers=8))  # exactly 8192
    assert "logical-batch-too-large" not in codes(make_plan(plan_project(batch=1024), workers=16, policy="sqrt"))
    warmed = make_plan(plan_project(batch=1024, warmup_epochs=5), workers=16)
    assert "warmup_epochs" not in next(w for w in warmed.warnings if w.code == "logical-batch-too-large").fix


def test_batchnorm_with_small_per_worker_batch():
    plan = make_plan(plan_project(batch=32, bn=True), workers=4, policy="keep-logical-batch")
    assert plan.per_worker_batch == 8
    w = next(w for w in plan.warnings if w.code == "small-batch-batchnorm")
    assert "BatchNormalization" in w.message and "bn" in w.message and "8" in w.message
    assert "small-batch-batchnorm" not in codes(make_plan(plan_project(batch=32, bn=False), workers=4,
                                                          policy="keep-logical-batch"))
    assert "small-batch-batchnorm" not in codes(make_plan(plan_project(batch=32, bn=True), workers=4))
    assert "small-batch-batchnorm" in codes(make_plan(plan_project(batch=8, bn=True), workers=1))
    assert "small-batch-batchnorm" not in codes(make_plan(plan_project(batch=16, bn=True), workers=1))


def test_more_workers_than_gpus():
    project = plan_project()
    plan = make_plan(project, workers=8, gpus_available=4, device="cuda")
    w = next(w for w in plan.warnings if w.code == "workers-exceed-gpus")
    assert "multi_gpu.workers 8" in w.message and "4 GPUs" in w.message and "4 or fewer" in w.fix
    assert "workers-exceed-gpus" in codes(make_plan(project, workers=2, gpus_available=1, device="gpu"))
    assert "workers-exceed-gpus" not in codes(make_plan(project, workers=4, gpus_available=4, device="cuda"))
    assert "workers-exceed-gpus" not in codes(make_plan(project, workers=8, gpus_available=4, device="cpu"))
    assert "workers-exceed-gpus" not in codes(make_plan(project, workers=8, device="cuda"))


def test_keep_logical_batch_not_divisible_warns_and_floors():
    plan = make_plan(plan_project(batch=250), workers=4, policy="keep-logical-batch")
    assert plan.per_worker_batch == 62 and plan.logical_batch == 248
    w = next(w for w in plan.warnings if w.code == "batch-not-divisible")
    assert "config.batch_size 250" in w.message and "248" in w.message and "248 or 252" in w.fix


def test_keep_logical_batch_too_small_is_an_error():
    with pytest.raises(PlanError) as err:
        make_plan(plan_project(batch=2), workers=4, policy="keep-logical-batch")
    assert "config.batch_size 2" in str(err.value) and "per-worker batch would be 0" in str(err.value)


# ------------------------------------------------------------------------------------ errors

@pytest.mark.parametrize("kwargs,project_kwargs,message", [
    ({"workers": 0}, {}, "multi_gpu.workers must be >= 1, got 0"),
    ({"workers": 2.5}, {}, "multi_gpu.workers must be an integer"),
    ({"policy": "lineer"}, {}, "did you mean 'linear'"),
    ({}, {"batch": 0}, "config.batch_size must be >= 1, got 0"),
    ({}, {"lr": -0.1}, "optimizer.learning_rate must be > 0"),
    ({}, {"update_interval": 0}, "optimizer.update_interval must be >= 1"),
    ({}, {"max_epoch": 0}, "config.max_epoch must be >= 1"),
    ({}, {"interval": -3}, "optimizer.lr_update_interval must be >= 0"),
    ({}, {"multiplier": 0.0}, "optimizer.lr_multiplier must be > 0"),
    ({}, {"warmup_epochs": -1.0}, "multi_gpu.warmup_epochs must be >= 0"),
    ({}, {"schedule": model.Schedule(type="linear")}, "optimizer.schedule.type must be one of"),
    ({}, {"schedule": model.Schedule(type="step", steps=[10, 0])}, "optimizer.schedule.steps[1] must be >= 1"),
    ({"dataset_size": 0}, {}, "dataset_size must be >= 1"),
    ({"gpus_available": -1}, {}, "gpus_available must be >= 0"),
])
def test_plan_errors_name_the_field(kwargs, project_kwargs, message):
    with pytest.raises(PlanError) as err:
        make_plan(plan_project(**project_kwargs), **kwargs)
    assert message in str(err.value)
    assert isinstance(err.value, ValueError)


# ------------------------------------------------------------------------------------ output

def test_to_dict_is_json_friendly():
    plan = make_plan(plan_project(batch=256, interval=10, multiplier=0.9, bn=True,
                                  schedule=model.Schedule(type="exponential", steps=[5])),
                     workers=4, dataset_size=500)
    d = json.loads(json.dumps(plan.to_dict()))
    assert d["logical_batch"] == 1024 and d["effective_lr"] == pytest.approx(0.4)
    assert d["steps"] == [5] and d["effective_steps"] == [1]
    assert {w["code"] for w in d["warnings"]} == {"lr-interval-not-multiple", "logical-batch-exceeds-dataset"}
    assert set(d["warnings"][0]) == {"code", "message", "fix"}
    assert d["notes"] == plan.notes
    assert d["total_warmup_iterations"] == 0


def test_plan_warning_str():
    w = PlanWarning("x", "Something.", "do this.")
    assert str(w) == "[x] Something. Fix: do this."


def _row(table: str, label: str) -> list:
    line = next(line for line in table.splitlines() if line.startswith(label))
    return line[len(label):].split()


def test_format_plan_table_for_1_2_4_8():
    project = plan_project(batch=256, lr=0.1, interval=10, multiplier=0.9, warmup_epochs=5)
    plans = [make_plan(project, workers=n, dataset_size=51_200) for n in (1, 2, 4, 8)]
    table = format_plan_table(plans)
    assert table.splitlines()[0].split() == ["N=1", "N=2", "N=4", "N=8"]
    assert _row(table, "workers") == ["1", "2", "4", "8"]
    assert _row(table, "per-worker batch") == ["256"] * 4
    assert _row(table, "logical batch") == ["256", "512", "1024", "2048"]
    assert _row(table, "iterations/epoch") == ["200", "100", "50", "25"]
    assert _row(table, "learning rate") == ["0.1", "0.2", "0.4", "0.8"]
    assert _row(table, "LR update interval") == ["10", "5", "2", "1"]
    assert _row(table, "LR multiplier") == ["0.9", "0.9", "0.919166", "0.919166"]
    assert _row(table, "warm-up iterations") == ["0", "500", "250", "125"]
    # every row is aligned to the same width
    body = [line for line in table.split("\n\n")[0].splitlines() if not line.startswith("-")]
    assert len({len(line) for line in body}) == 1
    for plan in plans:
        for note in plan.notes:
            assert note in table
        for w in plan.warnings:
            assert w.message in table and w.fix in table
    assert table.count("[lr-interval-not-multiple]") == 2  # N=4 and N=8


def test_format_plan_table_unknown_size_and_empty():
    table = format_plan_table([make_plan(plan_project(), workers=2)])
    assert _row(table, "iterations/epoch") == ["?"]
    assert _row(table, "LR update interval") == ["never"]
    assert format_plan_table([]) == "(no plans)"
