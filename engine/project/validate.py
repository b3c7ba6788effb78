"""Semantic checks of a loaded project: value ranges, known names, the network and the datasets.

Every check yields a Problem with the YAML path and a fix; ``io.load_project`` adds file and line.
"""
from __future__ import annotations

import difflib
import os
from typing import Callable, Iterable, List, Optional

from .errors import Problem
from .model import (DEVICES, PRECISIONS, SCALING_POLICIES, SCHEDULES, SOLVERS, Project)


def _choice(path: str, value: str, choices: Iterable[str], what: str) -> Optional[Problem]:
    choices = list(choices)
    if value in choices:
        return None
    close = difflib.get_close_matches(str(value), choices, n=1)
    fix = f"did you mean '{close[0]}'?" if close else "one of: " + ", ".join(choices)
    return Problem(path, f"unknown {what} '{value}'", fix=fix)


def _at_least(path: str, value: float, minimum: float, fix: str = "") -> Optional[Problem]:
    if value < minimum:
        return Problem(path, f"must be >= {minimum}, got {value}", fix=fix or f"set it to {minimum} or more")
    return None


def _positive(path: str, value: float) -> Optional[Problem]:
    if not value > 0:
        return Problem(path, f"must be > 0, got {value}", fix="use a positive number")
    return None


def check_settings(project: Project) -> List[Problem]:
    """CONFIG, optimizer and multi-GPU values: ranges and known names."""
    c, o, m = project.config, project.optimizer, project.multi_gpu
    checks = [
        _at_least("config.max_epoch", c.max_epoch, 1),
        _at_least("config.batch_size", c.batch_size, 1, fix="batch size is per worker; use e.g. 32"),
        _at_least("config.monitor_interval", c.monitor_interval, 1),
        _choice("config.precision", c.precision, PRECISIONS, "precision"),
        _choice("config.device", c.device, DEVICES, "device"),
        _choice("optimizer.solver", o.solver, SOLVERS, "solver"),
        _positive("optimizer.learning_rate", o.learning_rate),
        _at_least("optimizer.weight_decay", o.weight_decay, 0),
        _positive("optimizer.lr_multiplier", o.lr_multiplier),
        _at_least("optimizer.lr_update_interval", o.lr_update_interval, 0, fix="0 means never"),
        _at_least("optimizer.update_interval", o.update_interval, 1, fix="1 means update every iteration"),
        _at_least("optimizer.warmup_iterations", o.warmup_iterations, 0),
        _choice("optimizer.schedule.type", o.schedule.type, SCHEDULES, "schedule"),
        _at_least("optimizer.schedule.max_iter", o.schedule.max_iter, 0, fix="0 means the whole run"),
        _at_least("multi_gpu.workers", m.workers, 1, fix="1 trains in a single process"),
        _choice("multi_gpu.scaling", m.scaling, SCALING_POLICIES, "scaling policy"),
        _at_least("multi_gpu.warmup_epochs", m.warmup_epochs, 0),
        _choice("multi_gpu.launcher", m.launcher, ("auto", "mpiexec", "srun"), "launcher"),
        _at_least("multi_gpu.bucket_mb", m.bucket_mb, 0),
    ]
    problems = [p for p in checks if p]
    for i, step in enumerate(o.schedule.steps):
        if step < 1:
            problems.append(Problem(f"optimizer.schedule.steps[{i}]", f"step points are iterations >= 1, got {step}"))
    return problems


def check_network(project: Project) -> List[Problem]:
    """Layer names, initializers and the engine's shape inference, located at each layer."""
    from engine.shapes import infer_network

    problems: List[Problem] = []
    layers = project.network.layers
    index: dict = {}
    for i, layer in enumerate(layers):
        index.setdefault(layer.name, i)  # duplicates are reported by infer_network
        for key, mult in layer.lr_multipliers.items():
            p = _at_least(f"network.layers[{i}].lr_multipliers.{key}", mult, 0, fix="0 freezes the parameter")
            if p:
                problems.append(p)
    if not layers:
        problems.append(Problem("network.layers", "the network has no layers",
                                fix="start from a template: nnconsole new --template digits_cnn"))
        return problems
    info = infer_network(project.network)
    for name, message in info.errors:
        where = f"network.layers[{index[name]}]" if name in index else "network.layers"
        problems.append(Problem(where, f"layer '{name}': {message}"))
    if not info.loss_layers:
        problems.append(Problem("network.layers", "the network has no loss layer, so it cannot be trained",
                                fix="add e.g. SoftmaxCrossEntropy fed by the output and the label Input"))
    return problems


def dataset_path(project: Project, relative: str) -> str:
    """A dataset path resolved against the project file's folder."""
    base = os.path.dirname(os.path.abspath(project.path)) if project.path else os.getcwd()
    return os.path.normpath(os.path.join(base, relative))


def check_datasets(project: Project, peek: Optional[Callable] = None) -> List[Problem]:
    """Dataset files exist and their CSV header provides every variable the Input layers expect."""
    from engine.shapes import infer_network

    if peek is None:
        from engine.data import peek_csv as peek
    problems: List[Problem] = []
    info = infer_network(project.network)
    needed = set(info.input_variables)
    for key in ("training", "validation"):
        rel = getattr(project.datasets, key)
        path = f"datasets.{key}"
        if not rel:
            problems.append(Problem(path, f"no {key} dataset set", fix="give a CSV path relative to the project file"))
            continue
        full = dataset_path(project, rel)
        if not os.path.isfile(full):
            problems.append(Problem(path, f"dataset file not found: {full}",
                                    fix="paths are relative to the project file's folder"))
            continue
        try:
            header = peek(full, 0)
        except ValueError as exc:
            problems.append(Problem(path, str(exc)))
            continue
        variables = set(header.variables if hasattr(header, "variables") else header[0])
        missing = sorted(needed - variables)
        if missing:
            problems.append(Problem(
                path, f"CSV {full} has no column for variable(s) {', '.join(missing)} "
                f"(header variables: {', '.join(sorted(variables)) or 'none'})",
                fix="rename the Input layer's 'variable' or the CSV header so they match"))
    return problems


def validate(project: Project, datasets: bool = True) -> List[Problem]:
    """All semantic problems of a project (errors and warnings)."""
    problems = check_settings(project) + check_network(project)
    if datasets:
        problems += check_datasets(project)
    return problems
