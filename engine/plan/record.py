"""The N-worker plan as a record: the figures one N runs (``Plan``, filled by ``worker_plan.make_plan``), the
warnings ``explain`` words (``PlanWarning``) and the error of settings that cannot run at all (``PlanError``).
Both halves of the plan read this module; neither imports the other's record. Pure Python."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.plan.schedule import ScheduleParams


@dataclass
class PlanWarning:
    """Something that will run but probably not as the user expects: a code, what, and how to fix it."""

    code: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"[{self.code}] {self.message} Fix: {self.fix}"


class PlanError(NnconsoleError, ValueError):
    """Settings that cannot be run at all; the message names the field and the value."""


@dataclass
class Plan:
    """The figures the engine uses for one N; ``effective_*`` fields are those of the N-worker run.

    ``iteration_divisor`` is how many single-worker iterations' worth of samples one iteration now sees
    (N, or 1 for keep-logical-batch); schedule lengths in iterations were divided by it.
    ``scaling_warmup_iterations`` is the Goyal warm-up from ``base_lr`` to ``effective_lr`` over
    ``warmup_epochs`` epochs (None when the dataset size is unknown). ``updates_per_epoch`` is the
    average ``iterations_per_epoch / update_interval`` (updates are counted over the whole run).
    ``lr_update_interval`` and ``warmup_iterations`` are the project's numbers, in ``lr_update_interval_unit``
    and ``warmup_unit``; their ``effective_*`` figures are iterations of the N-worker run (None when a
    length in epochs needs the dataset size, which is unknown).
    """

    workers: int
    policy: str
    batch_size: int
    per_worker_batch: int
    update_interval: int
    logical_batch: int
    iteration_divisor: int
    dataset_size: Optional[int]
    iterations_per_epoch: Optional[int]
    updates_per_epoch: Optional[float]
    max_epoch: int
    total_iterations: Optional[int]
    solver: str
    base_lr: float
    lr_scale: float
    effective_lr: float
    schedule_type: str
    lr_update_interval: int
    effective_lr_update_interval: Optional[int]
    lr_multiplier: float
    effective_lr_multiplier: float
    steps: Tuple[int, ...]
    effective_steps: Tuple[int, ...]
    gamma: float
    power: float
    max_iter: int
    effective_max_iter: int
    warmup_iterations: int
    effective_warmup_iterations: Optional[int]
    warmup_epochs: float
    scaling_warmup_iterations: Optional[int]
    lr_update_interval_unit: str = "iterations"
    warmup_unit: str = "iterations"
    device: str = "cpu"
    # True when the N workers run one after another in one process (--simulate-workers N): the same
    # parameters as N real workers, not their speed
    simulated: bool = False
    notes: List[str] = field(default_factory=list)
    warnings: List[PlanWarning] = field(default_factory=list)

    @property
    def total_warmup_iterations(self) -> Optional[int]:
        """Length of the single linear warm-up the run uses (optimizer's and scaling warm-up merged)."""
        if self.scaling_warmup_iterations is None or self.effective_warmup_iterations is None:
            return None
        return max(self.effective_warmup_iterations, self.scaling_warmup_iterations or 0)

    def warning_codes(self) -> List[str]:
        return [w.code for w in self.warnings]

    def to_dict(self) -> Dict[str, Any]:
        """JSON-friendly dict (tuples become lists, warnings become dicts)."""
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "warnings":
                value = [dataclasses.asdict(w) for w in value]
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, list):
                value = list(value)
            out[f.name] = value
        out["total_warmup_iterations"] = self.total_warmup_iterations
        return out

    def schedule_params(self) -> ScheduleParams:
        """The effective N-worker schedule (iterations of the N-worker run, LR already scaled).

        The optimizer's warm-up (from 0) and the scaling warm-up (from ``base_lr``) become one linear
        warm-up of the longer length, starting from 0 when the optimizer asked for a warm-up.
        """
        needs_length = self.schedule_type in ("cosine", "polynomial") and self.effective_max_iter == 0
        if needs_length and self.total_iterations is None:
            raise PlanError(f"optimizer.schedule.type {self.schedule_type} with max_iter 0 decays over the whole "
                            "run, whose length needs the training dataset size: pass dataset_size or set "
                            "optimizer.schedule.max_iter")
        if self.effective_warmup_iterations is None:
            raise PlanError(f"optimizer.warmup_iterations {self.warmup_iterations} epochs (optimizer.warmup_unit) "
                            "needs the training dataset size to become iterations: pass dataset_size")
        warmup = self.total_warmup_iterations
        if warmup is None:
            raise PlanError(f"multi_gpu.warmup_epochs {self.warmup_epochs:g} needs the training dataset size to "
                            "become iterations: pass dataset_size")
        interval = self.effective_lr_update_interval
        if interval is None:
            if self.schedule_type == "exponential" and self.lr_multiplier != 1.0:
                raise PlanError(f"optimizer.lr_update_interval {self.lr_update_interval} epochs "
                                "(optimizer.lr_update_interval_unit) needs the training dataset size to become "
                                "iterations: pass dataset_size")
            interval = 0  # the interval has no effect on this schedule
        start = 0.0 if self.effective_warmup_iterations > 0 else self.base_lr
        return ScheduleParams(
            base_lr=self.effective_lr,
            type=self.schedule_type,
            lr_multiplier=self.effective_lr_multiplier,
            lr_update_interval=interval,
            steps=self.effective_steps,
            gamma=self.gamma,
            max_iter=self.effective_max_iter,
            power=self.power,
            warmup_iterations=warmup,
            warmup_start_lr=start,
            total_iterations=self.total_iterations or 0,
        )
