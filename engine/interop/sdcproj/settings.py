"""Import stage 3 for NNC desktop projects: [Dataset_i], [Config] and [Optimizer_0] as the project's
datasets, CONFIG and optimizer (solver and scheduler names through ``solver_table``). The LR update interval and the
warm-up keep NNC's unit (epochs or iterations, ``optimizer.*_unit``); step points, which nnconsole counts in
iterations only, are converted from epochs.
"""
from __future__ import annotations

import os
import re
from typing import List, Optional

from nnconsole.engine.layers.nnc_values import as_bool, as_float, as_int, ints
from nnconsole.engine.project.model import Datasets, Optimizer, Schedule, Search, TrainingConfig

from nnconsole.engine.interop import solver_table
from nnconsole.engine.interop.common import resolve_dataset
from nnconsole.engine.interop.report import InteropError
from nnconsole.engine.interop.sdcproj.reader import SdcReader, Section
from nnconsole.engine.interop.settings_map import read_nnc_config
from nnconsole.engine.project.schema import SOLVER_PARAMS, SOLVER_SPECS

EPOCH_UNIT = 0  # NNC's LearningRate*Unit: 0 = epochs, 1 = iterations (a missing unit means iterations)


def unit_name(unit: Optional[str]) -> str:
    """nnconsole's unit ("epochs", "iterations") for NNC's LearningRate*Unit value (absent: iterations)."""
    return "epochs" if unit is not None and as_int(unit, 1) == EPOCH_UNIT else "iterations"


def read_datasets(reader: SdcReader, train_name: str, notes: List[str], unsupported: List[str]) -> Datasets:
    base = os.path.dirname(reader.path)
    head = reader.section("Dataset", required=False)
    count = reader.count(head, "Num", 0, reader.section_count, "sections")
    entries = [reader.section(f"Dataset_{i}") for i in range(count)]
    if not entries:
        entries = [s for name, s in sorted(reader.sections.items()) if re.match(r"Dataset_\d+$", name)]
    ds = Datasets()
    if not entries:
        notes.append("the project names no datasets; set datasets.training and datasets.validation")
        return ds
    by_name = {(e.get("Name") or "").strip(): e for e in entries}
    train = by_name.get(train_name)
    if train is None:
        main = reader.int(head, "MainIndex", 0) if head else 0
        train = entries[main] if 0 <= main < len(entries) else entries[0]
    valid = next((e for e in entries if e is not train and "valid" in (e.get("Name") or "").lower()), None)
    valid = valid or next((e for e in entries if e is not train), None)
    ds.training = resolve_dataset(train.get("URI") or "", base, notes, "Training")
    ds.shuffle = as_bool(train.get("Shuffle"), True)
    ds.cache = as_bool(train.get("EnableCache"), True)
    ds.normalize = as_bool(train.get("ImageNormalization"), True)
    if valid is not None:
        ds.validation = resolve_dataset(valid.get("URI") or "", base, notes, "Validation")
    else:
        notes.append("the project has one dataset; it is used for validation too")
        ds.validation = ds.training
    extra = [e.get("Name") for e in entries if e is not train and e is not valid]
    if extra:
        unsupported.append(f"datasets {', '.join(map(str, extra))}: nnconsole uses one training and one "
                           "validation dataset")
    return ds


def read_config(reader: SdcReader, unsupported: List[str]) -> TrainingConfig:
    cfg = TrainingConfig()
    s = reader.section("Config", required=False)
    if s is None:
        return cfg
    # MaxEpoch, BatchSize, MonitorInterval (epochs between validations), SaveBest: the schema's NNC names.
    read_nnc_config(cfg, lambda key, default: reader.int(s, key, default),
                    lambda key, default: as_bool(s.get(key), default), unsupported)
    precision = (s.get("TypeConfig") or "Float").strip().lower()
    if precision in ("half", "float16", "mixed"):
        cfg.precision = "half"
    elif precision not in ("float", ""):
        unsupported.append(f"TypeConfig={s.get('TypeConfig')}: nnconsole computes in float or half; float is used")
    return cfg


def _iterations(value: int, unit: Optional[str], ipe: Optional[int], what: str, unsupported: List[str]) -> int:
    if unit is not None and as_int(unit, 1) == EPOCH_UNIT:
        if ipe is None:
            unsupported.append(f"{what} is {value} epochs but the training CSV could not be read to convert it to "
                               f"iterations; {value} iterations are used")
            return value
        return value * ipe
    return value


def read_optimizer(reader: SdcReader, s: Optional[Section], ipe: Optional[int], unsupported: List[str],
               notes: List[str], ranged: bool = False) -> Optimizer:
    """An [Optimizer_i] section's solver and schedule; ``ranged``: its RangeFrom/RangeTo are read by the caller
    (the optimizers after the first, sdcproj_optimizers), else they are reported as not kept."""

    opt = Optimizer()
    if s is None:
        notes.append("the project has no optimizer section; Adam with nnconsole's defaults is used")
        return opt
    solver = (s.get("SolverName") or "Adam").strip()
    name = solver_table.SOLVER_TYPES.get(solver)
    if name is None:
        unsupported.append(solver_table.unsupported_solver_message(solver))
        name = "Adam"
    opt.solver = name
    opt.solver_params = dict(SOLVER_PARAMS[name])
    opt.learning_rate = SOLVER_SPECS[name].nnc_learning_rate  # NNC's default when the file omits it
    count = reader.count(s, "SolverParameterNum", 0, len(s.values), "keys in this section")
    for k in range(count):
        pname = (s.get(f"SolverParameterName_{k}") or "").strip()
        raw = s.get(f"SolverParameter_{k}")
        key = solver_table.nnc_parameter_key(name, pname)
        if key is None or raw is None:
            unsupported.append(f"solver parameter {pname}={raw}: not a parameter of nnconsole's {name}")
            continue
        value = as_float(raw, float("nan"))
        if value != value:
            raise InteropError(f"{reader.where(s, f'SolverParameter_{k}')}: {pname} must be a number, got '{raw}'")
        if key == "learning_rate":
            opt.learning_rate = value
        elif key == "weight_decay":
            opt.weight_decay = value
        elif key in SOLVER_PARAMS[name]:
            opt.solver_params[key] = value
        else:
            unsupported.append(f"solver parameter {pname}={raw}: not a parameter of nnconsole's {name}")
    # NNC trains through nnabla_cli: WeightDecay > 0 is solver.weight_decay() before every update, which for
    # AdamW, SgdW and a decoupled AdaBelief replaces their own Weight Decay (it becomes the decoupled rate).
    global_wd = as_float(s.get("WeightDecay"), 0.0)
    if global_wd > 0:
        if opt.weight_decay and opt.weight_decay != global_wd:
            notes.append(f"WeightDecay={global_wd:g} replaces {name}'s Weight Decay {opt.weight_decay:g} at every "
                         "update, as in NNC")
        opt.weight_decay = global_wd
    elif opt.weight_decay and not solver_table.decays_inside(name, opt.solver_params):
        notes.append(f"{name}'s Weight Decay {opt.weight_decay:g} has no effect without WD Decouple (as in NNC); "
                     "weight decay is 0")
        opt.weight_decay = 0.0
    opt.update_interval = max(1, as_int(s.get("UpdateInterval"), 1))
    kind = (s.get("LearningRateScheduler") or "Exponential").strip()
    interval = as_int(s.get("LearningRateUpdateInterval"), 0)
    unit = s.get("LearningRateUpdateIntervalUnit")
    if kind == "Exponential":
        opt.schedule = Schedule(type="exponential")
        opt.lr_multiplier = as_float(s.get("LearningRateMultiplier"), 1.0) or 1.0
        opt.lr_update_interval, opt.lr_update_interval_unit = interval, unit_name(unit)
    elif kind == "Step":
        steps = ints(s.get("LearningRateSteps") or "")
        steps = [_iterations(v, unit, ipe, "LearningRateSteps", unsupported) for v in steps]
        opt.schedule = Schedule(type="step", steps=steps, gamma=as_float(s.get("LearningRateMultiplier"), 0.1))
    elif kind == "Cosine":
        opt.schedule = Schedule(type="cosine")
    elif kind == "Polynomial":
        opt.schedule = Schedule(type="polynomial", power=as_float(s.get("LearningRatePower"), 1.0))
    else:
        unsupported.append(f"LearningRateScheduler={kind}: not supported; the rate stays constant")
        opt.schedule = Schedule(type="constant")
    warm = (s.get("LearningRateWarmupScheduler") or "None").strip()
    if warm == "Linear":
        opt.warmup_iterations = as_int(s.get("LearningRateWarmupLength"), 0)
        opt.warmup_unit = unit_name(s.get("LearningRateWarmupLengthUnit"))
    elif warm not in ("None", ""):
        unsupported.append(f"LearningRateWarmupScheduler={warm}: only Linear is supported")
    for key in ("RangeFrom", "RangeTo"):
        if not ranged and s.get(key) not in (None, "", "-1"):
            unsupported.append(f"optimizer {key}={s.get(key)}: nnconsole updates on every iteration")
    return opt


# NNC's [StructureSearch] Method -> the sampler of 'nnconsole search' (NNC's Random is random; its other, Bayesian
# method is the sequential model-based one: TPE, or NSGA-II for the error x multiply-adds front).
SEARCH_METHODS = {"random": "random"}


def read_structure_search(reader: SdcReader, notes: List[str]) -> Optional[Search]:
    """NNC's [StructureSearch] as the project's ``search`` section when it is enabled (None otherwise): the
    method, the objective (ErrorAndCalculation: error x multiply-adds, a Pareto front), the Validation and
    CostMultiplyAdd min/max bounds (-1 = none), EarlyStopping (median pruning, single objective only) and the
    time limit (NNC's h:mm:ss or minutes)."""
    s = reader.section("StructureSearch", required=False)
    if s is None or not as_bool(s.get("Enabled"), False):
        return None
    front = (s.get("Objective") or "").strip() == "ErrorAndCalculation"
    method = (s.get("Method") or "").strip()
    sampler = SEARCH_METHODS.get(method.lower(), "nsga2" if front else "tpe")
    search = Search(structure=True, objectives=["error", "multiply_adds"] if front else ["error"], sampler=sampler)
    search.error_max = max(0.0, as_float(s.get("Validation_Max"), -1.0))
    search.multiply_adds_min = max(0, as_int(s.get("CostMultiplyAdd_Min"), -1))
    search.multiply_adds_max = max(0, as_int(s.get("CostMultiplyAdd_Max"), -1))
    search.pruner = "median" if as_bool(s.get("EarlyStopping"), False) and not front else "none"
    limit = (s.get("TimeLimit") or "").strip()
    if limit:
        parts = [float(p) for p in limit.split(":") if re.fullmatch(r"\d+(\.\d+)?", p)]
        if len(parts) == len(limit.split(":")) and parts:
            search.timeout_minutes = sum(v * 60 ** (len(parts) - 2 - i) for i, v in enumerate(parts)) \
                if len(parts) > 1 else parts[0]
        else:
            notes.append(f"{reader.where(s, 'TimeLimit')}: '{limit[:40]}' is not h:mm:ss or minutes; the search has "
                         "no time limit (set search.timeout_minutes)")
    notes.append(f"NNC's structure search ({method or 'default method'}) is the project's search section: "
                 f"sampler {sampler}, objectives {', '.join(search.objectives)}; run it with 'nnconsole search'")
    return search
