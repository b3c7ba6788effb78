"""Import stage 3 for nnabla files: the optimizer (solver and learning-rate schedule, through
``solver_table``), the datasets and ``training_config`` as the project's settings.
"""
from __future__ import annotations

from typing import Any, List, Tuple

from nnconsole.engine.layers.nntxt_codec import f7 as _f
from nnconsole.engine.project.model import Datasets, Optimizer, Schedule, TrainingConfig

from nnconsole.engine.interop import solver_table
from nnconsole.engine.interop.common import resolve_dataset
from nnconsole.engine.interop.settings_map import read_training_config
from nnconsole.engine.runtime.solvers import SOLVER_PARAMS

def read_optimizer(proto: Any, unsupported: List[str], notes: List[str], index: int = 0) -> Optimizer:
    """An optimizer's (the first by default) solver, learning rate, weight decay and schedule as nnconsole's
    Optimizer; the others' networks and ranges are read by nntxt_optimizers."""

    opt = Optimizer()
    p: Any = None
    if not len(proto.optimizer):
        return opt
    o = proto.optimizer[index]
    s = o.solver
    name = solver_table.SOLVER_TYPES.get(s.type)
    if name is None:
        unsupported.append(solver_table.unsupported_solver_message(s.type or "(none)"))
        field_name = s.WhichOneof("parameter")  # e.g. rmsprop_graves_param: keep the file's learning rate
        lr = 0.001
        if field_name:
            p = getattr(s, field_name)
            lr = _f(getattr(p, "alpha", 0) or getattr(p, "lr", 0) or getattr(p, "eta", 0) or 0.001)
        opt.solver, opt.learning_rate = "Adam", lr
    else:
        opt.solver = name
        field_name = solver_table.SOLVER_PARAM_FIELDS[name]
        p = getattr(s, field_name)
        opt.learning_rate = _f(getattr(p, solver_table.LR_FIELD[name]))
        known = SOLVER_PARAMS[name]
        opt.solver_params = {k: _f(getattr(p, k)) for k in known if hasattr(p, k)}
        if not s.HasField(field_name):
            opt.solver_params = dict(known)
            unsupported.append(f"solver {name}: the file gives no {field_name}; learning rate "
                               f"{opt.learning_rate:g} and nnabla's defaults are used")
            if opt.learning_rate == 0:
                opt.learning_rate = 0.001
        if name in solver_table.WD_INSIDE and solver_table.decays_inside(name, opt.solver_params):
            opt.weight_decay = _f(p.wd)
        elif name in solver_table.WD_INSIDE and p.wd and not s.weight_decay:
            notes.append(f"solver {name}: wd {p.wd:g} has no effect without weight_decouple (as in nnabla); "
                         "weight decay is 0")
    if s.weight_decay > 0:  # nnabla_cli calls solver.weight_decay(weight_decay): it replaces a decoupled wd
        if opt.weight_decay and opt.weight_decay != _f(s.weight_decay):
            notes.append(f"solver {name}: weight_decay {s.weight_decay:g} replaces its wd {opt.weight_decay:g} at "
                         "every update, as nnabla_cli does")
        opt.weight_decay = _f(s.weight_decay)
    opt.update_interval = max(1, int(o.update_interval or 1))
    kind = s.lr_scheduler_type
    if kind == "Exponential":
        g = s.exponential_scheduler_param
        opt.schedule = Schedule(type="exponential")
        opt.lr_multiplier = _f(g.gamma) if g.gamma > 0 else 1.0
        opt.lr_update_interval = int(g.iter_interval)
        if opt.lr_multiplier != 1.0 and opt.lr_update_interval <= 0:
            opt.lr_update_interval = 1  # nnabla multiplies every iteration then; nnconsole's 0 would mean never
            notes.append("exponential scheduler without iter_interval: nnabla decays every iteration, so "
                         "lr_update_interval is 1")
    elif kind == "Step":
        g = s.step_scheduler_param
        opt.schedule = Schedule(type="step", steps=[int(v) for v in g.iter_steps], gamma=_f(g.gamma))
    elif kind == "Cosine":
        opt.schedule = Schedule(type="cosine", max_iter=int(s.cosine_scheduler_param.max_iter))
    elif kind == "Polynomial":
        g = s.polynomial_scheduler_param
        opt.schedule = Schedule(type="polynomial", max_iter=int(g.max_iter), power=_f(g.power))
    elif kind == "":
        opt.schedule = Schedule(type="exponential")
        if s.lr_decay and s.lr_decay != 1.0:
            opt.lr_multiplier = _f(s.lr_decay)
            opt.lr_update_interval = int(s.lr_decay_interval or 1)
    else:
        unsupported.append(f"learning-rate scheduler {kind}: not supported by nnconsole; the rate stays constant")
        opt.schedule = Schedule(type="constant")
    if s.lr_warmup_scheduler_type == "Linear":
        opt.warmup_iterations = int(s.linear_warmup_scheduler_param.warmup_iter)
    elif s.lr_warmup_scheduler_type not in ("", "None"):  # NNC writes "None" for no warm-up
        unsupported.append(f"warm-up scheduler {s.lr_warmup_scheduler_type}: only Linear is supported")
    if index == 0 and (o.start_iter or o.end_iter):
        unsupported.append(f"optimizer '{o.name}' start_iter/end_iter {o.start_iter}/{o.end_iter}: the CONFIG "
                           "tab's optimizer updates on every iteration (the others keep their range)")
    return opt


def read_datasets(proto: Any, base_dir: str, notes: List[str], unsupported: List[str]) -> Tuple[Datasets, int]:
    """The training and validation datasets (URIs resolved against ``base_dir``) and the training batch."""
    ds = Datasets()
    by_name = {d.name: d for d in proto.dataset}
    train_name = ""
    if len(proto.optimizer) and proto.optimizer[0].dataset_name:
        train_name = proto.optimizer[0].dataset_name[0]
    valid_name = ""
    for m in proto.monitor:
        if m.dataset_name and m.dataset_name[0] != train_name and ("valid" in m.name.lower() or not valid_name):
            valid_name = m.dataset_name[0]
    names = list(by_name)
    if not names:
        notes.append("the file names no datasets; set datasets.training and datasets.validation")
    if not train_name:
        train_name = "Training" if "Training" in by_name else (names[0] if names else "")
    if not valid_name:
        valid_name = "Validation" if "Validation" in by_name else next((n for n in names if n != train_name), "")
    batch = 0
    if train_name in by_name:
        d = by_name[train_name]
        ds.training = resolve_dataset(d.uri, base_dir, notes, "Training")
        ds.shuffle = bool(d.shuffle)
        ds.normalize = not d.no_image_normalization
        batch = int(d.batch_size)
    if valid_name in by_name:
        ds.validation = resolve_dataset(by_name[valid_name].uri, base_dir, notes, "Validation")
    elif ds.training:
        notes.append("the file names no validation dataset; the training dataset is used for validation")
        ds.validation = ds.training
    extra = [n for n in names if n not in (train_name, valid_name)]
    if extra:
        unsupported.append(f"datasets {', '.join(extra)}: nnconsole uses one training and one validation dataset")
    return ds, batch


def read_config(proto: Any, net: Any, batch: int, notes: List[str]) -> TrainingConfig:
    """The CONFIG from ``training_config``, the network's batch size and the context's precision."""
    t = proto.training_config
    cfg = TrainingConfig()
    # max_epoch, monitor_interval (nnabla_cli validates when epoch % monitor_interval == 0), save_best.
    read_training_config(cfg, t, proto.HasField("training_config"), notes)
    cfg.batch_size = int(net.batch_size or batch or cfg.batch_size)
    backends = list(proto.global_config.default_context.backends)
    if any(b.endswith(":half") for b in backends):
        cfg.precision = "half"
    if backends:
        notes.append(f"the file's context ({', '.join(backends)}) is not kept: nnconsole picks the device itself "
                     "(config.device: auto)")
    return cfg
