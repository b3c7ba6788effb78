"""The N-worker plan: what the engine will actually run for a project on N workers, and why.

With per-worker batch B, N workers and update interval U the logical batch is B x N x U and an epoch
takes ceil(dataset_size / (B x N)) iterations. The scaling policy decides the per-worker batch and the
learning rate; every schedule length counted in iterations is divided by the factor by which the
samples per iteration grew, so the LR changes after the same number of samples as on one worker.
NNC floors the LR update interval; we also correct the multiplier so the decay per sample is exact.
Pure arithmetic: no nnabla, no Qt.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from nnconsole.engine.project import model
from nnconsole.engine.schedule import ScheduleParams

POLICIES = model.SCALING_POLICIES
GPU_DEVICES = ("cuda", "gpu", "cudnn")
# Goyal et al. 2017 trained ResNet-50 with linear scaling up to a logical batch of 8k without loss.
LINEAR_SCALING_MAX_BATCH = 8192
# Below this per-worker batch, BatchNormalization statistics (computed per worker) get noisy.
BN_MIN_BATCH = 16


class PlanError(ValueError):
    """Settings that cannot be run at all; the message names the field and the value."""


@dataclass
class PlanWarning:
    """Something that will run but probably not as the user expects: a code, what, and how to fix it."""

    code: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"[{self.code}] {self.message} Fix: {self.fix}"


@dataclass
class Plan:
    """The figures the engine uses for one N; ``effective_*`` fields are those of the N-worker run.

    ``iteration_divisor`` is how many single-worker iterations' worth of samples one iteration now sees
    (N, or 1 for keep-logical-batch); schedule lengths in iterations were divided by it.
    ``scaling_warmup_iterations`` is the Goyal warm-up from ``base_lr`` to ``effective_lr`` over
    ``warmup_epochs`` epochs (None when the dataset size is unknown). ``updates_per_epoch`` is the
    average ``iterations_per_epoch / update_interval`` (updates are counted over the whole run).
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
    effective_lr_update_interval: int
    lr_multiplier: float
    effective_lr_multiplier: float
    steps: Tuple[int, ...]
    effective_steps: Tuple[int, ...]
    gamma: float
    power: float
    max_iter: int
    effective_max_iter: int
    warmup_iterations: int
    effective_warmup_iterations: int
    warmup_epochs: float
    scaling_warmup_iterations: Optional[int]
    device: str = "cpu"
    notes: List[str] = field(default_factory=list)
    warnings: List[PlanWarning] = field(default_factory=list)

    @property
    def total_warmup_iterations(self) -> Optional[int]:
        """Length of the single linear warm-up the run uses (optimizer's and scaling warm-up merged)."""
        if self.scaling_warmup_iterations is None:
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
        warmup = self.total_warmup_iterations
        if warmup is None:
            raise PlanError(f"multi_gpu.warmup_epochs {self.warmup_epochs:g} needs the training dataset size to "
                            "become iterations: pass dataset_size")
        start = 0.0 if self.effective_warmup_iterations > 0 else self.base_lr
        return ScheduleParams(
            base_lr=self.effective_lr,
            type=self.schedule_type,
            lr_multiplier=self.effective_lr_multiplier,
            lr_update_interval=self.effective_lr_update_interval,
            steps=self.effective_steps,
            gamma=self.gamma,
            max_iter=self.effective_max_iter,
            power=self.power,
            warmup_iterations=warmup,
            warmup_start_lr=start,
            total_iterations=self.total_iterations or 0,
        )


# ---------------------------------------------------------------------------------------------- helpers

def _g(x: float) -> str:
    return f"{x:.6g}"


def _every(k: int) -> str:
    return "every iteration" if k == 1 else f"every {k} iterations"


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


def _check(project: model.Project, workers: Any, policy: Any, dataset_size: Any, gpus_available: Any) -> None:
    c, o = project.config, project.optimizer
    _need_int("multi_gpu.workers", workers, 1, "1 trains in a single process")
    if policy not in POLICIES:
        close = difflib.get_close_matches(str(policy), POLICIES, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise PlanError(f"multi_gpu.scaling must be one of {', '.join(POLICIES)}, got {policy!r}{hint}")
    _need_int("config.batch_size", c.batch_size, 1, "the batch size is per worker, e.g. 32")
    _need_int("config.max_epoch", c.max_epoch, 1)
    _need_int("optimizer.update_interval", o.update_interval, 1, "1 updates every iteration")
    _need_number("optimizer.learning_rate", o.learning_rate, positive=True)
    _need_number("optimizer.lr_multiplier", o.lr_multiplier, positive=True)
    _need_int("optimizer.lr_update_interval", o.lr_update_interval, 0, "0 means never")
    _need_int("optimizer.warmup_iterations", o.warmup_iterations, 0)
    _need_number("multi_gpu.warmup_epochs", project.multi_gpu.warmup_epochs)
    s = o.schedule
    if s.type not in model.SCHEDULES:
        raise PlanError(f"optimizer.schedule.type must be one of {', '.join(model.SCHEDULES)}, got {s.type!r}")
    _need_int("optimizer.schedule.max_iter", s.max_iter, 0, "0 means the whole run")
    _need_number("optimizer.schedule.gamma", s.gamma, positive=True)
    _need_number("optimizer.schedule.power", s.power)
    for i, step in enumerate(s.steps):
        _need_int(f"optimizer.schedule.steps[{i}]", step, 1, "step points are iterations")
    if dataset_size is not None:
        _need_int("dataset_size", dataset_size, 1, "the training set must hold at least one sample")
    if gpus_available is not None:
        _need_int("gpus_available", gpus_available, 0)


def _multiples(value: int, n: int) -> List[int]:
    """The multiples of n nearest to value (below and above), at least n."""
    low = (value // n) * n
    return [m for m in (low, low + n) if m >= n and m != value]


# ---------------------------------------------------------------------------------------------- the plan

def make_plan(project: model.Project, workers: Optional[int] = None, policy: Optional[str] = None,
              dataset_size: Optional[int] = None, gpus_available: Optional[int] = None,
              device: str = "cpu") -> Plan:
    """What the engine runs for ``project`` on ``workers`` workers under scaling ``policy``.

    ``workers`` and ``policy`` default to ``project.multi_gpu``. ``dataset_size`` (training samples) makes
    epochs into iterations; without it those fields are None. ``gpus_available`` with a GPU ``device``
    checks that there are enough GPUs. Raises PlanError for settings that cannot run.
    """
    n = project.multi_gpu.workers if workers is None else workers
    policy = project.multi_gpu.scaling if policy is None else policy
    _check(project, n, policy, dataset_size, gpus_available)
    c, o, mg = project.config, project.optimizer, project.multi_gpu
    s = o.schedule
    notes: List[str] = []
    warns: List[PlanWarning] = []
    batch, u = c.batch_size, o.update_interval
    lr_name = "Alpha" if o.solver in model.ALPHA_SOLVERS else "Learning rate"

    # --- batch and learning rate, by policy
    if policy == "keep-logical-batch":
        per_worker = batch // n
        if per_worker == 0:
            raise PlanError(
                f"config.batch_size {batch} cannot be split across {n} workers (multi_gpu.scaling "
                f"keep-logical-batch): the per-worker batch would be 0; use config.batch_size >= {n} "
                f"(e.g. {n} or {2 * n}), fewer workers, or multi_gpu.scaling linear")
        divisor, lr_scale = 1, 1.0
        if batch % n:
            near = " or ".join(str(m) for m in _multiples(batch, n))
            warns.append(PlanWarning(
                "batch-not-divisible",
                f"config.batch_size {batch} is not divisible by {n} workers (multi_gpu.scaling keep-logical-batch): "
                f"each worker uses {per_worker} samples, so the logical batch is {per_worker * n * u} instead of "
                f"{batch * u} and an epoch has slightly more iterations.",
                f"set config.batch_size to a multiple of {n} ({near})."))
        if n > 1:
            notes.append(f"Per-worker batch {batch} / {n} workers = {per_worker} so the logical batch stays "
                         f"{per_worker * n * u}; {lr_name.lower()} {_g(o.learning_rate)} and all iteration counts "
                         "are unchanged (multi_gpu.scaling keep-logical-batch).")
    else:
        per_worker, divisor = batch, n
        lr_scale = {"linear": float(n), "sqrt": math.sqrt(n), "none": 1.0}[policy]
        if n > 1:
            if policy == "linear":
                notes.append(f"{lr_name} {_g(o.learning_rate)} -> {_g(o.learning_rate * lr_scale)}: linear scaling "
                             f"(x{n} for {n} workers, as NNC recommends) because the logical batch is {n}x larger.")
            elif policy == "sqrt":
                notes.append(f"{lr_name} {_g(o.learning_rate)} -> {_g(o.learning_rate * lr_scale)}: square-root "
                             f"scaling (x{_g(lr_scale)} = sqrt({n} workers)).")
            else:
                notes.append(f"{lr_name} {_g(o.learning_rate)} is kept (multi_gpu.scaling none) although the logical "
                             f"batch is {n}x larger, so each sample moves the weights {n}x less.")
            if policy == "linear" and o.solver in model.ALPHA_SOLVERS:
                notes.append(f"Info: {o.solver} is an Adam-family solver; linear scaling of Alpha is NNC's default, "
                             "but square-root scaling (multi_gpu.scaling: sqrt) is the usual heuristic for Adam if "
                             "training becomes unstable.")
    logical = per_worker * n * u
    effective_lr = o.learning_rate * lr_scale
    if n == 1:
        notes.append("1 worker: batch size, learning rate and schedule are used as set.")
    elif n > 1:
        notes.append(f"Logical batch {logical} = per-worker batch {per_worker} x {n} workers x update interval {u}.")

    # --- epochs into iterations
    if dataset_size is not None:
        ipe = math.ceil(dataset_size / (per_worker * n))
        total: Optional[int] = ipe * c.max_epoch
        upe: Optional[float] = ipe / u
    else:
        ipe = total = upe = None

    # --- the LR update interval, exactly
    interval, mult = o.lr_update_interval, o.lr_multiplier
    eff_interval, eff_mult = exact_interval(interval, mult, divisor)
    if s.type == "exponential" and interval > 0 and mult != 1.0 and divisor > 1:
        if interval % divisor == 0:
            notes.append(f"LR update interval {interval} -> {eff_interval} iterations (divided by {divisor} workers); "
                         f"multiplier {_g(mult)} unchanged, so the LR changes after the same number of samples.")
        else:
            exponent = f"{eff_interval * divisor}/{interval}"
            notes.append(f"LR update interval {interval} is not a multiple of {divisor} workers: using "
                         f"{_every(eff_interval)} with multiplier {_g(mult)}^({exponent})={eff_mult:.4g} so the LR "
                         "per sample seen is unchanged.")
            near = " or ".join(str(m) for m in _multiples(interval, divisor))
            warns.append(PlanWarning(
                "lr-interval-not-multiple",
                f"optimizer.lr_update_interval {interval} is not a multiple of {divisor} workers: the run multiplies "
                f"the LR {_every(eff_interval)} by {_g(mult)}^({exponent})={eff_mult:.4g} instead of "
                f"{_g(mult)}; NNC would keep {_g(mult)} and decay {interval / (eff_interval * divisor):.4g}x "
                "as fast per sample.",
                f"set optimizer.lr_update_interval to a multiple of {divisor} ({near}) to keep the multiplier "
                f"{_g(mult)} exactly."))

    # --- every other length in iterations
    eff_steps = tuple(sorted(_divide_round(x, divisor) for x in s.steps))
    eff_max_iter = _divide_round(s.max_iter, divisor)
    eff_warmup = _divide_round(o.warmup_iterations, divisor)
    if divisor > 1:
        if s.type == "step" and s.steps:
            exact = all(x % divisor == 0 for x in s.steps)
            note = (f"Step points (optimizer.schedule.steps) {list(s.steps)} -> {list(eff_steps)} iterations: divided "
                    f"by {divisor} workers{'' if exact else ' and rounded'} so they come after the same samples.")
            if len(set(eff_steps)) < len(set(s.steps)):
                note = note[:-1] + "; some now coincide, and gamma is still applied once per original step."
            notes.append(note)
        if s.type in ("cosine", "polynomial") and s.max_iter > 0:
            notes.append(f"Decay length (optimizer.schedule.max_iter) {s.max_iter} -> {eff_max_iter} iterations "
                         f"(divided by {divisor} workers{'' if s.max_iter % divisor == 0 else ', rounded'}).")
        if o.warmup_iterations > 0:
            notes.append(f"Warm-up (optimizer.warmup_iterations) {o.warmup_iterations} -> {eff_warmup} iterations "
                         f"(divided by {divisor} workers{'' if o.warmup_iterations % divisor == 0 else ', rounded'}).")
    if s.type in ("cosine", "polynomial") and s.max_iter == 0 and total is not None:
        notes.append(f"The {s.type} decay spans the whole run: {total} iterations.")

    # --- gradual warm-up from the single-worker LR to the scaled LR (Goyal et al. 2017)
    k = float(mg.warmup_epochs)
    scaling_warmup: Optional[int] = 0
    if k > 0 and lr_scale == 1.0:
        notes.append(f"multi_gpu.warmup_epochs {k:g} has no effect: the learning rate is not scaled "
                     f"({n} worker{'s' if n > 1 else ''}, multi_gpu.scaling {policy}).")
    elif k > 0:
        if ipe is None:
            scaling_warmup = None
            notes.append(f"Gradual warm-up over multi_gpu.warmup_epochs {k:g} epochs: {lr_name.lower()} ramps from "
                         f"{_g(o.learning_rate)} to {_g(effective_lr)} (iterations known once the dataset size is).")
        else:
            scaling_warmup = max(1, math.floor(k * ipe + 0.5))
            notes.append(f"Gradual warm-up (Goyal et al. 2017): {lr_name.lower()} ramps linearly from "
                         f"{_g(o.learning_rate)} to {_g(effective_lr)} over multi_gpu.warmup_epochs {k:g} epochs "
                         f"= {scaling_warmup} iterations.")
            if eff_warmup > 0:
                notes.append(f"The optimizer's warm-up ({eff_warmup} iterations from 0) and the scaling warm-up "
                             f"({scaling_warmup} iterations from {_g(o.learning_rate)}) are merged into one linear "
                             f"warm-up from 0 over {max(eff_warmup, scaling_warmup)} iterations.")
            if total is not None and scaling_warmup > total:
                warns.append(PlanWarning(
                    "warmup-longer-than-run",
                    f"multi_gpu.warmup_epochs {k:g} is longer than config.max_epoch {c.max_epoch}: the "
                    f"{lr_name.lower()} never reaches {_g(effective_lr)}.",
                    f"lower multi_gpu.warmup_epochs below {c.max_epoch} or raise config.max_epoch."))

    # --- warnings
    if dataset_size is not None and logical > dataset_size:
        warns.append(PlanWarning(
            "logical-batch-exceeds-dataset",
            f"logical batch {logical} (config.batch_size {per_worker} x multi_gpu.workers {n} x "
            f"optimizer.update_interval {u}) is larger than the training set ({dataset_size} samples): an update "
            "needs more samples than an epoch holds.",
            "lower config.batch_size, multi_gpu.workers or optimizer.update_interval, or use "
            "multi_gpu.scaling keep-logical-batch."))
    if policy == "linear" and logical > LINEAR_SCALING_MAX_BATCH:
        extra = "" if k > 0 else "set multi_gpu.warmup_epochs (Goyal et al. used 5), "
        warns.append(PlanWarning(
            "logical-batch-too-large",
            f"logical batch {logical} (config.batch_size {per_worker} x multi_gpu.workers {n} x "
            f"optimizer.update_interval {u}) is above {LINEAR_SCALING_MAX_BATCH}, the largest batch for which linear "
            f"LR scaling is known to keep accuracy (Goyal et al. 2017); {lr_name.lower()} becomes "
            f"{_g(effective_lr)}.",
            f"{extra}use multi_gpu.scaling sqrt, the Lars solver, or fewer workers / a smaller config.batch_size."))
    bn_layers = [layer for layer in project.network.layers if layer.type == "BatchNormalization"]
    synced = [layer.name for layer in bn_layers if n > 1 and layer.params.get("sync_across_workers") is True]
    bn = [layer.name for layer in bn_layers if layer.name not in synced]
    if synced:
        notes.append(f"BatchNormalization {', '.join(synced[:3])}{' ...' if len(synced) > 3 else ''} synchronizes "
                     f"its batch statistics over the {n} workers: {per_worker * n} samples per batch"
                     + (f" (below {BN_MIN_BATCH}: still noisy; raise config.batch_size)." if per_worker * n < BN_MIN_BATCH
                        else "."))
    if bn and per_worker < BN_MIN_BATCH:
        shown = ", ".join(bn[:3]) + (f" and {len(bn) - 3} more" if len(bn) > 3 else "")
        fix = (f"keep the per-worker batch at {BN_MIN_BATCH} or more: use fewer workers or multi_gpu.scaling linear "
               "instead of keep-logical-batch" if policy == "keep-logical-batch" else
               f"raise config.batch_size to {BN_MIN_BATCH} or more (it is per worker)")
        fix += (f", or set sync_across_workers: true on these layers (statistics over all {n} workers' "
                f"{per_worker * n} samples)." if n > 1 else ".")
        warns.append(PlanWarning(
            "small-batch-batchnorm",
            f"per-worker batch {per_worker} is below {BN_MIN_BATCH} and the network has BatchNormalization layers "
            f"({shown}): batch statistics are computed on each worker's {per_worker} samples and become noisy.",
            fix))
    if (gpus_available is not None and str(device).lower() in GPU_DEVICES and n > gpus_available):
        warns.append(PlanWarning(
            "workers-exceed-gpus",
            f"multi_gpu.workers {n} is more than the {gpus_available} GPU{'s' if gpus_available != 1 else ''} "
            f"available on device {device}: workers would share GPUs or fail to start.",
            f"set multi_gpu.workers to {max(1, gpus_available)} or fewer, or add machines in multi_gpu.hosts."))

    return Plan(
        workers=n, policy=policy, batch_size=batch, per_worker_batch=per_worker, update_interval=u,
        logical_batch=logical, iteration_divisor=divisor, dataset_size=dataset_size, iterations_per_epoch=ipe,
        updates_per_epoch=upe, max_epoch=c.max_epoch, total_iterations=total, solver=o.solver,
        base_lr=float(o.learning_rate), lr_scale=lr_scale, effective_lr=effective_lr, schedule_type=s.type,
        lr_update_interval=interval, effective_lr_update_interval=eff_interval, lr_multiplier=float(mult),
        effective_lr_multiplier=eff_mult, steps=tuple(s.steps), effective_steps=eff_steps, gamma=float(s.gamma),
        power=float(s.power), max_iter=s.max_iter, effective_max_iter=eff_max_iter,
        warmup_iterations=o.warmup_iterations, effective_warmup_iterations=eff_warmup, warmup_epochs=k,
        scaling_warmup_iterations=scaling_warmup, device=str(device), notes=notes, warnings=warns)


# ---------------------------------------------------------------------------------------------- the table

def _cell_int(x: Optional[int]) -> str:
    return "?" if x is None else str(x)


def format_plan_table(plans: Sequence[Plan]) -> str:
    """A fixed-width table with one column per plan, then each plan's notes and warnings.

    This is what ``nnconsole plan PROJECT --gpus 1,2,4,8`` prints; "?" marks figures that need the
    dataset size.
    """
    if not plans:
        return "(no plans)"
    rows: List[Tuple[str, List[str]]] = [
        ("workers", [str(p.workers) for p in plans]),
        ("scaling policy", [p.policy for p in plans]),
        ("per-worker batch", [str(p.per_worker_batch) for p in plans]),
        ("logical batch", [str(p.logical_batch) for p in plans]),
        ("iterations/epoch", [_cell_int(p.iterations_per_epoch) for p in plans]),
        ("total iterations", [_cell_int(p.total_iterations) for p in plans]),
        ("learning rate", [_g(p.effective_lr) for p in plans]),
        ("LR scale", [f"x{_g(p.lr_scale)}" for p in plans]),
        ("LR update interval", [str(p.effective_lr_update_interval) if p.effective_lr_update_interval else "never"
                                for p in plans]),
        ("LR multiplier", [_g(p.effective_lr_multiplier) for p in plans]),
        ("warm-up iterations", [_cell_int(p.total_warmup_iterations) for p in plans]),
    ]
    label_w = max(len(label) for label, _ in rows)
    heads = [f"N={p.workers}" for p in plans]
    col_w = [max(len(heads[i]), *(len(cells[i]) for _, cells in rows)) for i in range(len(plans))]
    lines = ["".ljust(label_w) + "  " + "  ".join(h.rjust(w) for h, w in zip(heads, col_w)).rstrip()]
    lines.append("-" * len(lines[0]))
    for label, cells in rows:
        lines.append(label.ljust(label_w) + "  " + "  ".join(c.rjust(w) for c, w in zip(cells, col_w)))
    for p in plans:
        if not p.notes and not p.warnings:
            continue
        lines.append("")
        lines.append(f"N={p.workers} ({p.policy}):")
        lines.extend(f"  - {note}" for note in p.notes)
        for w in p.warnings:
            lines.append(f"  ! warning [{w.code}] {w.message}")
            lines.append(f"    fix: {w.fix}")
    return "\n".join(lines)
