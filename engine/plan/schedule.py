"""Learning-rate schedules as pure functions of the iteration number.

The engine asks ``learning_rate(params, iteration)`` before every update, so the schedule has no state
and the same numbers can be printed by ``nnconsole plan``, plotted by the GUI and checked by the tests.
Iterations here are those of the run being executed: for N workers ``nnconsole.engine.plan.worker_plan`` has already rescaled
every iteration count (see ``Plan.schedule_params``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

from nnconsole.engine.project import model
from nnconsole.engine.project.schema import SCHEDULES

SCHEDULE_TYPES = SCHEDULES


@dataclass(frozen=True)
class ScheduleParams:
    """Everything ``learning_rate`` needs; all counts are iterations of the run being executed.

    ``exponential`` is NNC's: ``base_lr * lr_multiplier ** (iteration // lr_update_interval)``
    (``lr_update_interval`` 0 = never). ``step`` multiplies by ``gamma`` once per entry of ``steps``
    already reached. ``cosine`` and ``polynomial`` decay to 0 over ``max_iter`` iterations, or over
    ``total_iterations`` when ``max_iter`` is 0. During the first ``warmup_iterations`` the LR ramps
    linearly from ``warmup_start_lr`` to the schedule's value (gradual warm-up, Goyal et al. 2017).
    """

    base_lr: float
    type: str = "exponential"
    lr_multiplier: float = 1.0
    lr_update_interval: int = 0
    steps: Tuple[int, ...] = ()
    gamma: float = 0.1
    max_iter: int = 0
    power: float = 1.0
    warmup_iterations: int = 0
    warmup_start_lr: float = 0.0
    total_iterations: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(int(s) for s in self.steps))
        if self.type not in SCHEDULE_TYPES:
            raise ValueError(f"schedule type must be one of {', '.join(SCHEDULE_TYPES)}, got {self.type!r}")
        if not (math.isfinite(self.base_lr) and self.base_lr >= 0):
            raise ValueError(f"base_lr must be a finite number >= 0, got {self.base_lr}")
        for name in ("lr_update_interval", "max_iter", "warmup_iterations", "total_iterations"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.lr_multiplier <= 0:
            raise ValueError(f"lr_multiplier must be > 0, got {self.lr_multiplier}")
        if any(s < 0 for s in self.steps):
            raise ValueError(f"steps must be iterations >= 0, got {list(self.steps)}")

    def decay_length(self) -> int:
        """Iterations over which cosine/polynomial decay: ``max_iter``, or ``total_iterations`` when 0."""
        return self.max_iter if self.max_iter > 0 else self.total_iterations


def _scheduled(p: ScheduleParams, iteration: int) -> float:
    """The schedule's value without warm-up."""
    if p.type == "constant":
        return p.base_lr
    if p.type == "exponential":
        if p.lr_update_interval <= 0 or p.lr_multiplier == 1.0:
            return p.base_lr
        return p.base_lr * p.lr_multiplier ** (iteration // p.lr_update_interval)
    if p.type == "step":
        passed = sum(1 for s in p.steps if s <= iteration)
        return p.base_lr * p.gamma ** passed
    length = p.decay_length()
    if length <= 0:
        raise ValueError(f"a {p.type} schedule needs max_iter > 0 or total_iterations > 0 "
                         "(set optimizer.schedule.max_iter, or give the run length)")
    progress = min(iteration, length) / length
    if p.type == "cosine":
        return p.base_lr * 0.5 * (1.0 + math.cos(math.pi * progress))
    return p.base_lr * (1.0 - progress) ** p.power  # polynomial


def learning_rate(p: ScheduleParams, iteration: int) -> float:
    """The learning rate (Alpha for Adam-family solvers) to use at 0-based ``iteration``."""
    if iteration < 0:
        raise ValueError(f"iteration must be >= 0, got {iteration}")
    target = _scheduled(p, iteration)
    if iteration < p.warmup_iterations:
        return p.warmup_start_lr + (target - p.warmup_start_lr) * iteration / p.warmup_iterations
    return target


def _length(value: int, unit: str, iterations_per_epoch: Optional[int], name: str) -> int:
    """A project length (``unit`` iterations or epochs) in single-worker iterations."""
    if unit != "epochs" or value <= 0:
        return int(value)
    if iterations_per_epoch is None:
        raise ValueError(f"optimizer.{name} {value} epochs needs the iterations per epoch: pass iterations_per_epoch")
    return int(value) * int(iterations_per_epoch)


def from_optimizer(opt: model.Optimizer, total_iterations: int, iterations_per_epoch: Optional[int] = None
                   ) -> ScheduleParams:
    """The single-worker schedule of a project's optimizer, for a run of ``total_iterations`` iterations.

    The optimizer's own warm-up starts from 0. An ``exponential`` schedule with ``lr_update_interval`` 0
    or ``lr_multiplier`` 1 keeps the LR constant. Lengths the optimizer gives in epochs need the run's
    ``iterations_per_epoch`` (ValueError without it). For N workers use ``plan.make_plan(...).schedule_params()``.
    """
    s = opt.schedule
    return ScheduleParams(
        base_lr=float(opt.learning_rate),
        type=s.type,
        lr_multiplier=float(opt.lr_multiplier),
        lr_update_interval=_length(opt.lr_update_interval, opt.lr_update_interval_unit, iterations_per_epoch,
                                   "lr_update_interval"),
        steps=tuple(int(x) for x in s.steps),
        gamma=float(s.gamma),
        max_iter=int(s.max_iter),
        power=float(s.power),
        warmup_iterations=_length(opt.warmup_iterations, opt.warmup_unit, iterations_per_epoch, "warmup_iterations"),
        warmup_start_lr=0.0,
        total_iterations=int(total_iterations),
    )
