"""The words of an N-worker plan: the notes that say why each figure changed, the warnings with their fix,
and the table ``nnconsole plan`` prints. The figures themselves come from :func:`nnconsole.engine.plan.worker_plan.make_plan`.
Pure Python: no nnabla, no Qt.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from nnconsole.engine.project import model
from nnconsole.engine.project.schema import ALPHA_SOLVERS

from nnconsole.engine.plan.record import Plan, PlanWarning
from nnconsole.engine.layers import find_spec
from nnconsole.engine.layers.types.inputs import input_generator, input_variable

GPU_DEVICES = ("cuda", "gpu", "cudnn")
# multi_gpu.allreduce_precision half is the CPU all-reduce's float16 messages (engine/comm/half.py); nnabla's
# NCCL communicator all-reduces the gradients in their own type, so on GPU the setting does nothing.
GPU_HALF_ALLREDUCE_MESSAGE = ("multi_gpu.allreduce_precision half is not applied on GPU: NCCL all-reduces the "
                              "gradients in their compute type (float32 here), so each gradient still sends 4 "
                              "bytes.")
# Goyal et al. 2017 trained ResNet-50 with linear scaling up to a logical batch of 8k without loss.
LINEAR_SCALING_MAX_BATCH = 8192
# Below this per-worker batch, BatchNormalization statistics (computed per worker) get noisy.
BN_MIN_BATCH = 16


def simulation_note(workers: int, processes: int = 1) -> str:
    """The note of a plan whose ``workers`` are simulated, one after another, in ``processes`` real ones
    (--simulate-workers N): the launcher prints it, the trainer logs it and plan.json keeps it."""
    where = ("in this one process" if processes == 1 else
             f"{workers // processes} in each of the {processes} worker processes")
    return (f"simulated: {workers} workers run one after another {where} (--simulate-workers {workers}); the "
            f"parameters equal a real {workers}-worker run's, the time per iteration does not")


def _g(x: float) -> str:
    return f"{x:.6g}"


def _epochs(k: int) -> str:
    return "1 epoch" if k == 1 else f"{k} epochs"


def _epoch_length_note(what: str, epochs: int, iterations: Optional[int], plan: Plan) -> str:
    """How a length given in epochs becomes iterations of this run (it needs no division by N)."""
    if iterations is None:
        return (f"{what} {_epochs(epochs)}: its iterations are known once the training set's size is "
                f"(an epoch of this run has ceil(samples / {plan.per_worker_batch * plan.workers}) iterations).")
    text = (f"{what} {_epochs(epochs)} = {epochs} x {plan.iterations_per_epoch} iterations per epoch = "
            f"{iterations} iterations")
    if plan.workers > 1:
        text += (f" on each of {plan.workers} workers (in epochs it needs no division: an epoch already has "
                 f"{plan.workers}x fewer iterations).")
    return text + ("." if plan.workers == 1 else "")


def _every(k: int) -> str:
    return "every iteration" if k == 1 else f"every {k} iterations"


def _multiples(value: int, n: int) -> List[int]:
    """The multiples of n nearest to value (below and above), at least n."""
    low = (value // n) * n
    return [m for m in (low, low + n) if m >= n and m != value]


def explain_plan(plan: Plan, project: model.Project, gpus_available: Optional[int] = None
                 ) -> Tuple[List[str], List[PlanWarning]]:
    """The notes and warnings of ``plan`` (made by ``make_plan`` for ``project``), in reading order."""
    notes: List[str] = []
    warns: List[PlanWarning] = []
    n, policy, batch, u = plan.workers, plan.policy, plan.batch_size, plan.update_interval
    per_worker, divisor, lr_scale = plan.per_worker_batch, plan.iteration_divisor, plan.lr_scale
    logical, effective_lr, base_lr = plan.logical_batch, plan.effective_lr, plan.base_lr
    lr_name = "Alpha" if plan.solver in ALPHA_SOLVERS else "Learning rate"

    # --- batch and learning rate, by policy
    if policy == "keep-logical-batch":
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
                         f"{per_worker * n * u}; {lr_name.lower()} {_g(base_lr)} and all iteration counts "
                         "are unchanged (multi_gpu.scaling keep-logical-batch).")
    elif n > 1:
        if policy == "linear":
            notes.append(f"{lr_name} {_g(base_lr)} -> {_g(base_lr * lr_scale)}: linear scaling "
                         f"(x{n} for {n} workers, as NNC recommends) because the logical batch is {n}x larger.")
        elif policy == "sqrt":
            notes.append(f"{lr_name} {_g(base_lr)} -> {_g(base_lr * lr_scale)}: square-root "
                         f"scaling (x{_g(lr_scale)} = sqrt({n} workers)).")
        else:
            notes.append(f"{lr_name} {_g(base_lr)} is kept (multi_gpu.scaling none) although the logical "
                         f"batch is {n}x larger, so each sample moves the weights {n}x less.")
        if policy == "linear" and plan.solver in ALPHA_SOLVERS:
            notes.append(f"Info: {plan.solver} is an Adam-family solver; linear scaling of Alpha is NNC's default, "
                         "but square-root scaling (multi_gpu.scaling: sqrt) is the usual heuristic for Adam if "
                         "training becomes unstable.")
    if n == 1:
        notes.append("1 worker: batch size, learning rate and schedule are used as set.")
    elif n > 1:
        notes.append(f"Logical batch {logical} = per-worker batch {per_worker} x {n} workers x update interval {u}.")

    # --- the LR update interval, exactly
    interval, mult = plan.lr_update_interval, plan.lr_multiplier
    eff_interval, eff_mult = plan.effective_lr_update_interval, plan.effective_lr_multiplier
    decays = plan.schedule_type == "exponential" and interval > 0 and mult != 1.0
    if decays and plan.lr_update_interval_unit == "epochs":
        notes.append(_epoch_length_note("LR update interval (optimizer.lr_update_interval)", interval, eff_interval,
                                        plan) + f" The multiplier {_g(mult)} is unchanged.")
    elif decays and eff_interval is not None and divisor > 1:
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
    steps, eff_steps, max_iter = plan.steps, plan.effective_steps, plan.max_iter
    warmup, eff_warmup, total = plan.warmup_iterations, plan.effective_warmup_iterations, plan.total_iterations
    if divisor > 1:
        if plan.schedule_type == "step" and steps:
            exact = all(x % divisor == 0 for x in steps)
            note = (f"Step points (optimizer.schedule.steps) {list(steps)} -> {list(eff_steps)} iterations: divided "
                    f"by {divisor} workers{'' if exact else ' and rounded'} so they come after the same samples.")
            if len(set(eff_steps)) < len(set(steps)):
                note = note[:-1] + "; some now coincide, and gamma is still applied once per original step."
            notes.append(note)
        if plan.schedule_type in ("cosine", "polynomial") and max_iter > 0:
            notes.append(f"Decay length (optimizer.schedule.max_iter) {max_iter} -> {plan.effective_max_iter} "
                         f"iterations (divided by {divisor} workers{'' if max_iter % divisor == 0 else ', rounded'}).")
        if warmup > 0 and plan.warmup_unit == "iterations":
            notes.append(f"Warm-up (optimizer.warmup_iterations) {warmup} -> {eff_warmup} iterations "
                         f"(divided by {divisor} workers{'' if warmup % divisor == 0 else ', rounded'}).")
    if warmup > 0 and plan.warmup_unit == "epochs":
        notes.append(_epoch_length_note("Warm-up (optimizer.warmup_iterations)", warmup, eff_warmup, plan))
    if plan.schedule_type in ("cosine", "polynomial") and max_iter == 0 and total is not None:
        notes.append(f"The {plan.schedule_type} decay spans the whole run: {total} iterations.")

    # --- gradual warm-up from the single-worker LR to the scaled LR (Goyal et al. 2017)
    k, scaling_warmup = plan.warmup_epochs, plan.scaling_warmup_iterations
    if k > 0 and lr_scale == 1.0:
        notes.append(f"multi_gpu.warmup_epochs {k:g} has no effect: the learning rate is not scaled "
                     f"({n} worker{'s' if n > 1 else ''}, multi_gpu.scaling {policy}).")
    elif k > 0:
        if scaling_warmup is None:
            notes.append(f"Gradual warm-up over multi_gpu.warmup_epochs {k:g} epochs: {lr_name.lower()} ramps from "
                         f"{_g(base_lr)} to {_g(effective_lr)} (iterations known once the dataset size is).")
        else:
            notes.append(f"Gradual warm-up (Goyal et al. 2017): {lr_name.lower()} ramps linearly from "
                         f"{_g(base_lr)} to {_g(effective_lr)} over multi_gpu.warmup_epochs {k:g} epochs "
                         f"= {scaling_warmup} iterations.")
            if eff_warmup:
                notes.append(f"The optimizer's warm-up ({eff_warmup} iterations from 0) and the scaling warm-up "
                             f"({scaling_warmup} iterations from {_g(base_lr)}) are merged into one linear "
                             f"warm-up from 0 over {max(eff_warmup, scaling_warmup)} iterations.")
            if total is not None and scaling_warmup > total:
                warns.append(PlanWarning(
                    "warmup-longer-than-run",
                    f"multi_gpu.warmup_epochs {k:g} is longer than config.max_epoch {plan.max_epoch}: the "
                    f"{lr_name.lower()} never reaches {_g(effective_lr)}.",
                    f"lower multi_gpu.warmup_epochs below {plan.max_epoch} or raise config.max_epoch."))

    warns.extend(_size_warnings(plan, project, gpus_available))
    notes.extend(_synced_batchnorm_notes(plan, project))
    notes.extend(_generated_input_notes(plan, project))
    if n > 1 and plan.device.lower() in GPU_DEVICES and project.multi_gpu.allreduce_precision == "half":
        warns.append(PlanWarning("allreduce-half-on-gpu", GPU_HALF_ALLREDUCE_MESSAGE,
                                 "set multi_gpu.allreduce_precision to float (config.precision half makes the "
                                 "gradients, and NCCL's messages, float16 on GPU)."))
    return notes, warns


def _size_warnings(plan: Plan, project: model.Project, gpus_available: Optional[int]) -> List[PlanWarning]:
    """Batches too large for the data or for linear scaling, too small for BatchNormalization, too few GPUs."""
    warns: List[PlanWarning] = []
    n, per_worker, u, logical = plan.workers, plan.per_worker_batch, plan.update_interval, plan.logical_batch
    lr_name = "Alpha" if plan.solver in ALPHA_SOLVERS else "Learning rate"
    if plan.dataset_size is not None and logical > plan.dataset_size:
        warns.append(PlanWarning(
            "logical-batch-exceeds-dataset",
            f"logical batch {logical} (config.batch_size {per_worker} x multi_gpu.workers {n} x "
            f"optimizer.update_interval {u}) is larger than the training set ({plan.dataset_size} samples): an "
            "update needs more samples than an epoch holds.",
            "lower config.batch_size, multi_gpu.workers or optimizer.update_interval, or use "
            "multi_gpu.scaling keep-logical-batch."))
    if plan.policy == "linear" and logical > LINEAR_SCALING_MAX_BATCH:
        extra = "" if plan.warmup_epochs > 0 else "set multi_gpu.warmup_epochs (Goyal et al. used 5), "
        warns.append(PlanWarning(
            "logical-batch-too-large",
            f"logical batch {logical} (config.batch_size {per_worker} x multi_gpu.workers {n} x "
            f"optimizer.update_interval {u}) is above {LINEAR_SCALING_MAX_BATCH}, the largest batch for which linear "
            f"LR scaling is known to keep accuracy (Goyal et al. 2017); {lr_name.lower()} becomes "
            f"{_g(plan.effective_lr)}.",
            f"{extra}use multi_gpu.scaling sqrt, the Lars solver, or fewer workers / a smaller config.batch_size."))
    bn = [name for name, synced in _batchnorm_layers(plan, project) if not synced]
    if bn and per_worker < BN_MIN_BATCH:
        shown = ", ".join(bn[:3]) + (f" and {len(bn) - 3} more" if len(bn) > 3 else "")
        fix = (f"keep the per-worker batch at {BN_MIN_BATCH} or more: use fewer workers or multi_gpu.scaling linear "
               "instead of keep-logical-batch" if plan.policy == "keep-logical-batch" else
               f"raise config.batch_size to {BN_MIN_BATCH} or more (it is per worker)")
        fix += (f", or set sync_across_workers: true on these layers (statistics over all {n} workers' "
                f"{per_worker * n} samples)." if n > 1 else ".")
        warns.append(PlanWarning(
            "small-batch-batchnorm",
            f"per-worker batch {per_worker} is below {BN_MIN_BATCH} and the network has BatchNormalization layers "
            f"({shown}): batch statistics are computed on each worker's {per_worker} samples and become noisy.",
            fix))
    if gpus_available is not None and plan.device.lower() in GPU_DEVICES and n > gpus_available:
        warns.append(PlanWarning(
            "workers-exceed-gpus",
            f"multi_gpu.workers {n} is more than the {gpus_available} GPU{'s' if gpus_available != 1 else ''} "
            f"available on device {plan.device}: workers would share GPUs or fail to start.",
            f"set multi_gpu.workers to {max(1, gpus_available)} or fewer, or add machines in multi_gpu.hosts."))
    return warns


def _batchnorm_layers(plan: Plan, project: model.Project) -> List[Tuple[str, bool]]:
    """(name, synchronized across workers) of each layer normalizing with batch statistics (BatchNormalization;
    the layer registry's ``uses_batch_stat`` says which types do)."""

    return [(layer.name, plan.workers > 1 and layer.params.get("sync_across_workers") is True)
            for layer in project.network.layers if getattr(find_spec(layer.type), "uses_batch_stat", False)]


def _synced_batchnorm_notes(plan: Plan, project: model.Project) -> List[str]:
    synced = [name for name, is_synced in _batchnorm_layers(plan, project) if is_synced]
    if not synced:
        return []
    n, per_worker = plan.workers, plan.per_worker_batch
    return [f"BatchNormalization {', '.join(synced[:3])}{' ...' if len(synced) > 3 else ''} synchronizes "
            f"its batch statistics over the {n} workers: {per_worker * n} samples per batch"
            + (f" (below {BN_MIN_BATCH}: still noisy; raise config.batch_size)." if per_worker * n < BN_MIN_BATCH
               else ".")]


def _generated_input_notes(plan: Plan, project: model.Project) -> List[str]:
    """Which Inputs generators fill (NNC's Generator) and what that means for N workers."""
    made: List[str] = []
    for network in [project.network, *project.networks.values()]:
        for layer in network.layers:
            kind = input_generator(layer.params) if layer.type == "Input" else ""
            text = f"{input_variable(layer, layer.params)} ({kind} x {float(layer.params.get('generator_multiplier', 1.0)):g})"
            if kind and text not in made:
                made.append(text)
    if not made:
        return []
    share = (f"each of the {plan.workers} workers makes its own rows of every logical batch, the values one worker "
             "would make for them" if plan.workers > 1 else "each row's values are keyed by the seed and its place in "
             "the logical batch, so more workers draw the same values")
    return [f"Generated inputs {', '.join(made)}: no dataset column is read; {share}."]


def _cell_int(x: Optional[int]) -> str:
    return "?" if x is None else str(x)


def lr_interval_cell(plan: Plan) -> str:
    """The LR update interval in iterations of the run ("never", "?" when epochs need the dataset size),
    with the project's epochs beside it when the project counts epochs: ``314 (2 epochs)``."""
    if not plan.lr_update_interval:
        return "never"
    text = _cell_int(plan.effective_lr_update_interval)
    return text + (f" ({_epochs(plan.lr_update_interval)})" if plan.lr_update_interval_unit == "epochs" else "")


def warmup_cell(plan: Plan) -> str:
    """The run's warm-up in iterations, with the project's epochs beside it when it counts epochs."""
    text = _cell_int(plan.total_warmup_iterations)
    own = plan.total_warmup_iterations in (None, plan.effective_warmup_iterations)  # not the longer scaling warm-up
    if plan.warmup_unit == "epochs" and plan.warmup_iterations > 0 and own:
        text += f" ({_epochs(plan.warmup_iterations)})"
    return text


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
        ("LR update interval", [lr_interval_cell(p) for p in plans]),
        ("LR multiplier", [_g(p.effective_lr_multiplier) for p in plans]),
        ("warm-up iterations", [warmup_cell(p) for p in plans]),
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
