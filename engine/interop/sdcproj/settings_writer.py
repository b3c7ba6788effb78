""".sdcproj export, settings: [Dataset], [Config] and [Optimizer_0] as ``sdcproj_settings`` reads them.

Solver names and NNC's parameter names come from the settings schema's solver table; [Config]'s keys from
the schema's NNC names (``settings_map``). The LR update interval and the warm-up are written in their own
unit (``optimizer.*_unit``); step points in iterations.
"""
from __future__ import annotations

import os
from typing import List

from nnconsole.engine.layers.nnc_values import to_text
from nnconsole.engine.project.model import Datasets, Optimizer, Project, Schedule, TrainingConfig

from nnconsole.engine.interop import solver_table
from nnconsole.engine.interop.settings_map import nnc_config_settings
from nnconsole.engine.project.schema import SOLVER_SPECS

ITERATIONS = 1  # NNC's *Unit: 0 epochs, 1 iterations
NNC_UNITS = {"epochs": 0, "iterations": ITERATIONS}
TRAINING, VALIDATION = "Training", "Validation"


def _flag(value: bool) -> str:
    """A [Dataset_i]/[Config] flag as NNC saves it (1/0; layer properties spell theirs True/False)."""
    return "1" if value else "0"


def _uri(project: Project, value: str, out_dir: str) -> str:
    """A dataset path as the .sdcproj file will read it: relative to the file's folder when it lies below it."""
    if not value or "://" in value:
        return value or ""
    base = os.path.dirname(os.path.abspath(project.path)) if project.path else os.getcwd()
    full = os.path.normpath(os.path.join(base, value))
    rel = os.path.relpath(full, out_dir)
    return full if rel.startswith("..") else rel


def _datasets(project: Project, out_dir: str, unsupported: List[str]) -> List[str]:
    ds = project.datasets
    if ds.cache_budget != Datasets().cache_budget:  # nnconsole's own: NNC caches every dataset whole
        unsupported.append(f"datasets.cache_budget={ds.cache_budget:g}: NNC's project file has no such setting "
                           "(importing the .sdcproj gives the automatic budget, 80% of the cache folder's free space)")
    lines = ["[Dataset]", "Num=2", "MainIndex=0"]
    for i, (name, value) in enumerate(((TRAINING, ds.training), (VALIDATION, ds.validation))):
        lines += [f"[Dataset_{i}]", f"Name={name}", f"URI={_uri(project, value, out_dir)}",
                  f"Shuffle={_flag(ds.shuffle)}", f"EnableCache={_flag(ds.cache)}",
                  f"ImageNormalization={_flag(ds.normalize)}"]
    return lines


def _config(cfg: TrainingConfig, unsupported: List[str]) -> List[str]:
    lines = ["[Config]"]
    for setting in nnc_config_settings():
        value = getattr(cfg, setting.key)
        lines.append(f"{setting.nnc}={_flag(value) if setting.kind == 'bool' else to_text(value)}")
    lines += [f"TypeConfig={'Half' if cfg.precision == 'half' else 'Float'}", "NumOptimizer=1"]
    defaults = TrainingConfig()
    for key in ("log_interval", "seed", "device", "initial_parameters"):
        if getattr(cfg, key) != getattr(defaults, key):
            unsupported.append(f"config.{key}={getattr(cfg, key)}: NNC's project file has no such setting")
    return lines


def _solver(opt: Optimizer, unsupported: List[str]) -> List[str]:
    spec = SOLVER_SPECS[opt.solver]
    if opt.solver in solver_table.NOT_IN_NNC:
        unsupported.append(f"solver {opt.solver}: NNC has no such solver (nnconsole imports it back)")
    inside = solver_table.decays_inside(opt.solver, opt.solver_params)
    pairs = []
    for nnc_name, key, default in spec.nnc:
        if key == "learning_rate":
            value = opt.learning_rate
        elif key == "weight_decay":
            value = opt.weight_decay if inside else default
        else:
            value = opt.solver_params.get(key, default)
        pairs.append((nnc_name, value))
    if not spec.nnc:  # a solver NNC lacks: nnabla's names, which the importer's aliases read
        pairs = [("LearningRate", opt.learning_rate)] + sorted(opt.solver_params.items())
    lines = [f"SolverName={opt.solver}", f"SolverParameterNum={len(pairs)}"]
    for k, (name, value) in enumerate(pairs):
        lines += [f"SolverParameterName_{k}={name}", f"SolverParameter_{k}={to_text(float(value))}"]
    lines.append(f"WeightDecay={to_text(0.0 if inside else float(opt.weight_decay))}")
    return lines


def _schedule(opt: Optimizer, unsupported: List[str]) -> List[str]:
    sched = opt.schedule
    kind = sched.type
    if kind in ("exponential", "constant"):
        if kind == "constant":
            unsupported.append("optimizer.schedule constant: NNC has no constant scheduler; written as Exponential "
                               "with multiplier 1 (the same rates; it imports back as exponential)")
        return ["LearningRateScheduler=Exponential",
                f"LearningRateMultiplier={to_text(float(opt.lr_multiplier if kind == 'exponential' else 1.0))}",
                f"LearningRateUpdateInterval={int(opt.lr_update_interval)}",
                f"LearningRateUpdateIntervalUnit={NNC_UNITS[opt.lr_update_interval_unit]}"]
    if kind == "step":
        return ["LearningRateScheduler=Step", f"LearningRateSteps={to_text(list(sched.steps))}",
                f"LearningRateMultiplier={to_text(float(sched.gamma))}", f"LearningRateUpdateIntervalUnit={ITERATIONS}"]
    if kind == "cosine":
        if sched.max_iter != Schedule().max_iter:
            unsupported.append(f"optimizer.schedule.max_iter={sched.max_iter}: NNC's Cosine runs over the whole "
                               "training")
        return ["LearningRateScheduler=Cosine"]
    if kind == "polynomial":
        return ["LearningRateScheduler=Polynomial", f"LearningRatePower={to_text(float(sched.power))}"]
    unsupported.append(f"optimizer.schedule {kind}: NNC has no such scheduler; written as a constant rate")
    return ["LearningRateScheduler=Exponential", "LearningRateMultiplier=1.0"]


def settings_sections(project: Project, out_dir: str, unsupported: List[str], notes: List[str]) -> List[str]:
    """[Dataset], [Dataset_i], [Config] and [Optimizer_0] for ``project``."""
    opt = project.optimizer
    lines = _datasets(project, out_dir, unsupported) + _config(project.config, unsupported)
    lines += ["[Optimizer_0]", "Optimizer_NetworkName=Main", f"Optimizer_DatasetName={TRAINING}"]
    lines += _solver(opt, unsupported) + _schedule(opt, unsupported)
    if opt.warmup_iterations:
        lines += ["LearningRateWarmupScheduler=Linear", f"LearningRateWarmupLength={int(opt.warmup_iterations)}",
                  f"LearningRateWarmupLengthUnit={NNC_UNITS[opt.warmup_unit]}"]
    else:
        lines.append("LearningRateWarmupScheduler=None")
    lines.append(f"UpdateInterval={int(opt.update_interval)}")
    mg = project.multi_gpu
    if mg.workers not in (0, 1):
        notes.append(f"multi_gpu.workers={mg.workers}: NNC chooses its devices itself; not written")
    return lines


def extra_optimizer_sections(project: Project, unsupported: List[str]) -> List[str]:
    """[Optimizer_1] ... for the project's other optimizers, as ``read_extra_optimizers`` reads them back."""
    lines: List[str] = []
    for i, entry in enumerate(project.optimizers, start=1):
        o = entry.optimizer
        lines += [f"[Optimizer_{i}]", f"RangeFrom={entry.start_iteration or -1}", f"RangeTo={entry.end_iteration or -1}",
                  "RangeUnit=1", f"Optimizer_Name={entry.name}", f"Optimizer_NetworkName={entry.network}",
                  f"Optimizer_DatasetName={VALIDATION if entry.dataset == 'validation' else TRAINING}",
                  f"UpdateInterval={int(o.update_interval)}"]
        lines += _solver(o, unsupported) + _schedule(o, unsupported)
        if o.warmup_iterations:
            unsupported.append(f"optimizer '{entry.name}': its warm-up is not written to the .sdcproj")
        lines.append("LearningRateWarmupScheduler=None")
    return lines


def structure_search_section(project: Project, notes: List[str]) -> List[str]:
    """NNC's [StructureSearch] from the project's ``search`` section, as ``read_structure_search`` reads it back;
    nothing without a structure search (NNC's default, disabled). NNC has no place for hyper-parameter ranges."""
    search = project.search
    if search is None:
        return []
    if search.params:
        notes.append(f"search.params ({', '.join(p.target for p in search.params)}): NNC's structure search has no "
                     "hyper-parameter ranges; not written")
    if not search.structure:
        return []
    limit = search.timeout_minutes
    return ["[StructureSearch]", "Enabled=1", f"Method={'Random' if search.sampler == 'random' else 'Bayesian'}",
            f"Objective={'ErrorAndCalculation' if 'multiply_adds' in search.objectives else 'Error'}",
            "Validation_Min=-1", f"Validation_Max={to_text(search.error_max) if search.error_max else -1}",
            f"CostMultiplyAdd_Min={search.multiply_adds_min or -1}",
            f"CostMultiplyAdd_Max={search.multiply_adds_max or -1}",
            f"EarlyStopping={_flag(search.pruner != 'none')}",
            "TimeLimit=" + (f"{int(limit // 60)}:{int(limit % 60):02d}:{int(round(limit * 60 % 60)):02d}" if limit else "")]
