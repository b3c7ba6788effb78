"""The N-worker plan: what the engine will actually run for a project on N workers, and why.

With per-worker batch B, N workers and update interval U the logical batch is B x N x U and an epoch
takes ceil(dataset_size / (B x N)) iterations. The scaling policy decides the per-worker batch and the
learning rate; every schedule length counted in iterations is divided by the factor by which the
samples per iteration grew, so the LR changes after the same number of samples as on one worker.
NNC floors the LR update interval; we also correct the multiplier so the decay per sample is exact.
An LR update interval or a warm-up given in epochs needs no division: it becomes k x iterations per
epoch of the run, which already has N times fewer iterations per epoch.
Pure arithmetic: no nnabla, no Qt. ``make_plan`` computes the figures, then
:mod:`nnconsole.engine.plan.explain` words them (notes, warnings, the table); both fill :mod:`nnconsole.engine.plan.record`.
"""
from __future__ import annotations

import difflib
import math
from typing import Any, Optional, Tuple

from nnconsole.engine.project import model
from nnconsole.engine.project import schema
from nnconsole.engine.plan.explain import explain_plan
from nnconsole.engine.plan.record import Plan, PlanError
from nnconsole.engine.project.schema import SCALING_POLICIES

POLICIES = SCALING_POLICIES


# ---------------------------------------------------------------------------------------------- helpers

def _divide_round(x: int, d: int) -> int:
    """x / d rounded half up, at least 1 when x > 0 (so a set length never vanishes)."""
    if x <= 0:
        return 0
    return max(1, (2 * x + d) // (2 * d))


def exact_interval(interval: int, multiplier: float, divisor: int) -> Tuple[int, float]:
    """NNC's LR update interval for ``divisor`` times more samples per iteration, made exact.

    interval' = max(1, floor(interval / divisor)); multiplier' = multiplier ** (interval' * divisor / interval),
    so the decay per sample seen equals the single-worker one at every update point.
    """
    if interval <= 0 or divisor == 1:
        return interval, multiplier
    new = max(1, interval // divisor)
    return new, multiplier ** (new * divisor / interval)


def length_in_iterations(length: int, unit: str, divisor: int, iterations_per_epoch: Optional[int]
                         ) -> Optional[int]:
    """A schedule length of the project in iterations of the run: ``length`` single-worker iterations divided
    by ``divisor`` (rounded half up), or ``length`` epochs times the run's iterations per epoch (None when that
    is unknown). 0 stays 0 (never / no warm-up) in either unit."""
    if unit == "epochs":
        if length <= 0:
            return 0
        return None if iterations_per_epoch is None else length * iterations_per_epoch
    return _divide_round(length, divisor)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _need_int(name: str, value: Any, minimum: int, hint: str = "") -> None:
    if not _is_int(value):
        raise PlanError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise PlanError(f"{name} must be >= {minimum}, got {value}" + (f" ({hint})" if hint else ""))


def _need_number(name: str, value: Any, positive: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PlanError(f"{name} must be a finite number, got {value!r}")
    if positive and not value > 0:
        raise PlanError(f"{name} must be > 0, got {value}")
    if not positive and value < 0:
        raise PlanError(f"{name} must be >= 0, got {value}")


# The settings the plan computes with (multi_gpu.workers and .scaling come as arguments).
PLAN_SETTINGS = ("config.batch_size", "config.max_epoch", "optimizer.update_interval", "optimizer.learning_rate",
                 "optimizer.lr_multiplier", "optimizer.lr_update_interval", "optimizer.lr_update_interval_unit",
                 "optimizer.warmup_iterations", "optimizer.warmup_unit",
                 "multi_gpu.warmup_epochs", "optimizer.schedule.type", "optimizer.schedule.max_iter",
                 "optimizer.schedule.gamma", "optimizer.schedule.power", "optimizer.schedule.steps")


def _check(project: model.Project, workers: Any, policy: Any, dataset_size: Any, gpus_available: Any) -> None:
    _need_int("multi_gpu.workers", workers, 1, "1 trains in a single process")
    if policy not in POLICIES:
        close = difflib.get_close_matches(str(policy), POLICIES, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise PlanError(f"multi_gpu.scaling must be one of {', '.join(POLICIES)}, got {policy!r}{hint}")
    for path in PLAN_SETTINGS:  # bounds and advice: the settings schema's, as validate checks them
        setting, value = schema.setting(path), schema.value_at(project, path)
        if setting.kind == "int":
            _need_int(path, value, int(setting.minimum or 0), setting.fix)
        elif setting.kind == "int_list":
            for i, item in enumerate(value):
                _need_int(f"{path}[{i}]", item, int(setting.minimum or 0), setting.fix)
        elif setting.kind == "float":
            _need_number(path, value, positive=setting.positive)
        elif value not in setting.choices:
            raise PlanError(f"{path} must be one of {', '.join(setting.choices)}, got {value!r}")
    if dataset_size is not None:
        _need_int("dataset_size", dataset_size, 1, "the training set must hold at least one sample")
    if gpus_available is not None:
        _need_int("gpus_available", gpus_available, 0)


# ---------------------------------------------------------------------------------------------- the plan

def make_plan(project: model.Project, workers: Optional[int] = None, policy: Optional[str] = None,
              dataset_size: Optional[int] = None, gpus_available: Optional[int] = None,
              device: str = "cpu") -> Plan:
    """What the engine runs for ``project`` on ``workers`` workers under scaling ``policy``.

    ``workers`` and ``policy`` default to ``project.multi_gpu``. ``dataset_size`` (training samples) makes
    epochs into iterations; without it those fields are None. ``gpus_available`` with a GPU ``device``
    checks that there are enough GPUs. Raises PlanError for settings that cannot run. The figures are
    computed here; ``plan_explain.explain_plan`` adds the notes and warnings.
    """
    n = project.multi_gpu.workers if workers is None else workers
    policy = project.multi_gpu.scaling if policy is None else policy
    _check(project, n, policy, dataset_size, gpus_available)
    c, o, mg = project.config, project.optimizer, project.multi_gpu
    s = o.schedule
    batch, u = c.batch_size, o.update_interval

    # --- batch and learning rate, by policy
    if policy == "keep-logical-batch":
        per_worker = batch // n
        if per_worker == 0:
            raise PlanError(
                f"config.batch_size {batch} cannot be split across {n} workers (multi_gpu.scaling "
                f"keep-logical-batch): the per-worker batch would be 0; use config.batch_size >= {n} "
                f"(e.g. {n} or {2 * n}), fewer workers, or multi_gpu.scaling linear")
        divisor, lr_scale = 1, 1.0
    else:
        per_worker, divisor = batch, n
        lr_scale = {"linear": float(n), "sqrt": math.sqrt(n), "none": 1.0}[policy]
    logical = per_worker * n * u
    effective_lr = o.learning_rate * lr_scale

    # --- epochs into iterations
    if dataset_size is not None:
        ipe = math.ceil(dataset_size / (per_worker * n))
        total: Optional[int] = ipe * c.max_epoch
        upe: Optional[float] = ipe / u
    else:
        ipe = total = upe = None

    # --- the LR update interval, exactly (in epochs: whole epochs of this run); every other length
    interval, mult = o.lr_update_interval, o.lr_multiplier
    eff_interval: Optional[int]
    if o.lr_update_interval_unit == "epochs":
        eff_interval, eff_mult = length_in_iterations(interval, "epochs", divisor, ipe), mult
    else:
        eff_interval, eff_mult = exact_interval(interval, mult, divisor)
    eff_steps = tuple(sorted(_divide_round(x, divisor) for x in s.steps))
    eff_max_iter = _divide_round(s.max_iter, divisor)
    eff_warmup = length_in_iterations(o.warmup_iterations, o.warmup_unit, divisor, ipe)

    # --- gradual warm-up from the single-worker LR to the scaled LR (Goyal et al. 2017)
    k = float(mg.warmup_epochs)
    scaling_warmup: Optional[int] = 0
    if k > 0 and lr_scale != 1.0:
        scaling_warmup = None if ipe is None else max(1, math.floor(k * ipe + 0.5))

    plan = Plan(
        workers=n, policy=policy, batch_size=batch, per_worker_batch=per_worker, update_interval=u,
        logical_batch=logical, iteration_divisor=divisor, dataset_size=dataset_size, iterations_per_epoch=ipe,
        updates_per_epoch=upe, max_epoch=c.max_epoch, total_iterations=total, solver=o.solver,
        base_lr=float(o.learning_rate), lr_scale=lr_scale, effective_lr=effective_lr, schedule_type=s.type,
        lr_update_interval=interval, effective_lr_update_interval=eff_interval, lr_multiplier=float(mult),
        effective_lr_multiplier=eff_mult, steps=tuple(s.steps), effective_steps=eff_steps, gamma=float(s.gamma),
        power=float(s.power), max_iter=s.max_iter, effective_max_iter=eff_max_iter,
        warmup_iterations=o.warmup_iterations, effective_warmup_iterations=eff_warmup, warmup_epochs=k,
        scaling_warmup_iterations=scaling_warmup, lr_update_interval_unit=o.lr_update_interval_unit,
        warmup_unit=o.warmup_unit, device=str(device))
    plan.notes, plan.warnings = explain_plan(plan, project, gpus_available)
    return plan


# ---------------------------------------------------------------------------------------------- simulation

def simulation_problem(asked: int, processes: int, where: str = "multi_gpu.simulate_workers") -> Optional[str]:
    """Why ``asked`` workers cannot be simulated on ``processes`` real ones (None when they can, or when no
    simulation is asked): each process simulates the same number of workers, so N must be a multiple of M.
    The launcher refuses the run with it; CONFIG's plan panel shows it."""
    asked, processes = int(asked or 0), max(1, int(processes))
    if asked > 1 and asked % processes:
        return (f"{where} {asked} on {processes} workers: each worker simulates the same number of workers, so it "
                f"must be a multiple of {processes} (e.g. {processes * max(1, asked // processes)} or "
                f"{processes * (asked // processes + 1)}), or use --gpus 1")
    return None


def simulated_count(asked: int, processes: int) -> int:
    """The workers a run simulates on ``processes`` real ones: ``asked`` when it is more than them, else 0 (no
    simulation: 0 or 1 asked, or as many as there are processes, which is a real run)."""
    asked = int(asked or 0)
    return asked if asked > max(1, int(processes)) else 0
