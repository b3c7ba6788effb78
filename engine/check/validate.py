"""Semantic checks of a loaded project: value ranges, known names, the network and the datasets.

Every check yields a Problem with the YAML path and a fix; ``check.project_file`` adds file and line.
Two rules protect a user who opens a project written by someone else (see docs/security.md):
the files it names (datasets, initial parameters) must stay inside the project's folder unless
the user allows otherwise, and
``multi_gpu.mpiexec_args`` may only hold launcher options that cannot run other programs.
"""
from __future__ import annotations

import difflib
import math
import os
import re
from typing import Any, Callable, Iterable, List, Optional, Sequence

from nnconsole.engine.data.loading import header_csv, peek_csv
from nnconsole.engine.network.parameter_files import ParameterFileError, parameter_differences, read_parameter_file
from nnconsole.engine.network.data_flow import dataset_variables
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.project.errors import Problem
from nnconsole.engine.project.model import Project
from nnconsole.engine.project.paths import dataset_path, outside_project, project_folder
from nnconsole.engine.project.schema import (MAX_COUNT, NON_NEGATIVE_SOLVER_PARAMS, Setting, SETTINGS, SOLVER_PARAMS,
                                             SOLVER_SPECS, UNIT_INTERVAL_SOLVER_PARAMS, value_at)

from nnconsole.engine.plan.hosts import check_hosts, HOST_FORMS, read_hostfile_problems
from nnconsole.engine.plan.timing_inputs import LINK_FIX, LINK_SETTING, link_setting_problem
from nnconsole.engine.layers.registry import prod
from nnconsole.engine.project.structure import all_networks, MAIN_NETWORK
from nnconsole.engine.network.shared_params import weight_scope_of
from nnconsole.engine.network.repeat_blocks import unroll
from nnconsole.engine.network.units import expanded_project, UnitError
from nnconsole.engine.data.loading import check_dataset
from nnconsole.engine.data.labels import class_label_variables
# One array (a layer's output for a sample, or a parameter) above this many values cannot be trained.
MAX_ARRAY_VALUES = 2**31 - 1
OUTSIDE_FLAG = "--allow-outside-data"


def _choice(path: str, value: str, choices: Iterable[str], what: str) -> Optional[Problem]:
    choices = list(choices)
    if value in choices:
        return None
    close = difflib.get_close_matches(str(value), choices, n=1)
    fix = f"did you mean '{close[0]}'?" if close else "one of: " + ", ".join(choices)
    return Problem(path, f"unknown {what} '{value}'", fix=fix)


def _finite(path: str, value: float) -> Optional[Problem]:
    if isinstance(value, float) and not math.isfinite(value):
        return Problem(path, f"must be a finite number, got {value}", fix="write an ordinary number such as 0.01")
    return None


def _at_least(path: str, value: float, minimum: float, fix: str = "", maximum: Optional[float] = None
              ) -> Optional[Problem]:
    bad = _finite(path, value)
    if bad:
        return bad
    if value < minimum:
        return Problem(path, f"must be >= {minimum}, got {value}", fix=fix or f"set it to {minimum} or more")
    if maximum is not None and value > maximum:
        shown = f"{value:,}" if abs(value) < 1e15 else f"{float(value):.3g}"
        return Problem(path, f"must be <= {maximum:,}, got {shown}", fix="this is far beyond any real setting; "
                       "check for a typo")
    return None


def _count(path: str, value: int, minimum: int, fix: str = "", maximum: int = MAX_COUNT) -> Optional[Problem]:
    return _at_least(path, value, minimum, fix, maximum)


def _positive(path: str, value: float) -> Optional[Problem]:
    bad = _finite(path, value)
    if bad:
        return bad
    if not value > 0:
        return Problem(path, f"must be > 0, got {value}", fix="use a positive number")
    return None


def check_setting(setting: Setting, value: Any) -> List[Problem]:
    """One setting's value against its schema entry: range, finiteness or choice (types are the codec's)."""
    path, kind = setting.path, setting.kind
    if kind == "choice":
        bad = _choice(path, value, setting.choices, setting.label.lower())
    elif kind == "int":
        bad = _count(path, value, int(setting.minimum or 0), setting.fix,
                     int(setting.maximum) if setting.maximum is not None else MAX_COUNT)
    elif kind == "float" and setting.positive:
        bad = _positive(path, value)
    elif kind == "float":
        bad = _at_least(path, value, setting.minimum or 0, setting.fix, setting.maximum)
    elif kind == "int_list":
        return [p for i, item in enumerate(value) for p in [_count(f"{path}[{i}]", item, int(setting.minimum or 0),
                                                                   setting.fix)] if p]
    else:
        bad = None  # text, paths, flags and mappings: their own checks below
    return [bad] if bad else []


def check_settings(project: Project) -> List[Problem]:
    """CONFIG, optimizer and multi-GPU values: ranges, finite numbers and known names (from the schema)."""
    problems = [p for setting in SETTINGS if not setting.path.startswith("datasets.") or setting.kind == "float"
                for p in check_setting(setting, value_at(project, setting.path))]  # datasets: the cache budget
    m = project.multi_gpu
    problems += _check_solver_params(project)
    problems += check_mpiexec_args(m.mpiexec_args)
    problems += [Problem(f"multi_gpu.hosts[{i}]", why, fix=f"write {HOST_FORMS}") if i >= 0 else
                 Problem("multi_gpu.hosts", why, fix="list the hosts' real slot counts (GPUs or cores each)")
                 for i, why in check_hosts(m.hosts)]
    link_problem = link_setting_problem(m.link)
    if link_problem:
        problems.append(Problem(LINK_SETTING, link_problem, fix=LINK_FIX))
    return problems


def _check_solver_params(project: Project) -> List[Problem]:
    o = project.optimizer
    known = SOLVER_PARAMS.get(o.solver)
    problems: List[Problem] = []
    for key, value in o.solver_params.items():
        path = f"optimizer.solver_params.{key}"
        if known is not None and key not in known:
            problems.append(Problem(path, f"'{key}' is not a parameter of {o.solver}",
                                    fix=f"{o.solver} accepts: {', '.join(known) or 'none'}"))
            continue
        bad = _finite(path, value)
        if bad:
            problems.append(bad)
        elif known is not None and key in SOLVER_SPECS[o.solver].flags and float(value) not in (0.0, 1.0):
            problems.append(Problem(path, f"{o.solver}'s '{key}' is a switch, got {value!r}",
                                    fix="use 0 (off) or 1 (on)"))
        elif key in UNIT_INTERVAL_SOLVER_PARAMS and not 0.0 <= float(value) < 1.0:
            problems.append(Problem(path, f"{o.solver}'s '{key}' is a decay rate, got {value!r}",
                                    fix=f"use a value in [0, 1), e.g. {SOLVER_PARAMS.get(o.solver, {}).get(key, 0.9)}"))
        elif key in NON_NEGATIVE_SOLVER_PARAMS and float(value) < 0.0:
            problems.append(Problem(path, f"{o.solver}'s '{key}' must not be negative, got {value!r}",
                                    fix=f"use 0 or more, e.g. {SOLVER_PARAMS.get(o.solver, {}).get(key, 0)}"))
    return problems


# ---- launcher arguments written in a project file ---------------------------------------------------
# mpiexec and srun can run arbitrary programs (e.g. '--mca plm_rsh_agent CMD', '-x LD_PRELOAD=...'),
# so a project file may only carry options that pick network interfaces, placement and output.
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:,._^-]*$")
_SAFE_MCA = re.compile(r"^(btl|pml|mtl|coll|osc|[a-z0-9_]+_if_(include|exclude)|[a-z0-9_]+_verbose)$")
_SAFE_MCA_VALUE = re.compile(r"^[A-Za-z0-9^][A-Za-z0-9:,./_^-]*$")  # names, lists, CIDR ranges
_FLAGS = {"--oversubscribe", "--report-bindings", "--display-map", "--display-allocation", "--tag-output",
          "--timestamp-output"}
_WITH_VALUE = {"--map-by", "--bind-to", "--rank-by", "--npernode", "-N"}
_MCA = {"--mca", "-mca", "--gmca", "--prtemca", "--pmixmca"}


def check_mpiexec_args(args: Sequence[str], path: str = "multi_gpu.mpiexec_args") -> List[Problem]:
    """Launcher arguments a project file may carry; anything that could run a program is refused."""
    fix = ("options that could start other programs are only taken from the command line, where you see "
           "them: nnconsole train --mpiexec-arg=...")
    problems: List[Problem] = []
    i = 0
    while i < len(args):
        arg = str(args[i])
        where = f"{path}[{i}]"
        if arg in _FLAGS:
            i += 1
            continue
        if arg in _WITH_VALUE:
            value = str(args[i + 1]) if i + 1 < len(args) else ""
            if not _SAFE_VALUE.match(value):
                problems.append(Problem(where, f"'{arg}' needs a plain value, got '{value}'", fix=fix))
            i += 2
            continue
        if arg in _MCA:
            name = str(args[i + 1]) if i + 1 < len(args) else ""
            value = str(args[i + 2]) if i + 2 < len(args) else ""
            if not _SAFE_MCA.match(name):
                problems.append(Problem(where, f"MCA parameter '{name}' is not allowed in a project file "
                                        "(allowed: btl, pml, mtl, coll, osc, *_if_include, *_if_exclude, "
                                        "*_verbose)", fix=fix))
            elif not _SAFE_MCA_VALUE.match(value):
                problems.append(Problem(where, f"MCA parameter '{name}' needs a plain value (letters, digits, "
                                        f"',', ':', '.', '/', '-', '^'), got '{value}'", fix=fix))
            i += 3
            continue
        if arg in ("-x", "--x") and i + 1 < len(args) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", str(args[i + 1])):
            i += 2  # export a variable of the user's own environment (no value can be set here)
            continue
        problems.append(Problem(where, f"launcher argument '{arg}' is not allowed in a project file", fix=fix))
        i += 1
    return problems


def check_network(project: Project) -> List[Problem]:
    """Layer names, initializers, sizes and the engine's shape inference, located at each layer."""

    problems: List[Problem] = []
    layers = project.network.layers
    index: dict = {}
    for i, layer in enumerate(layers):
        index.setdefault(layer.name, i)  # duplicates are reported by infer_network
        if not layer.name.isascii():  # nnabla turns parameter names into C++ ASCII strings
            problems.append(Problem(f"network.layers[{i}].name", f"layer name '{layer.name}' holds characters "
                                    "outside ASCII, which nnabla cannot use in parameter names",
                                    fix="rename it with ASCII letters, digits, '_' or '-'"))
        for key, mult in layer.lr_multipliers.items():
            p = _at_least(f"network.layers[{i}].lr_multipliers.{key}", mult, 0, fix="0 freezes the parameter")
            if p:
                problems.append(p)
        for key, init in layer.initializers.items():
            if init is None:
                continue
            for attr in ("multiplier", "value"):
                p = _finite(f"network.layers[{i}].initializers.{key}.{attr}", getattr(init, attr))
                if p:
                    problems.append(p)
        if layer.position is not None:
            for j, v in enumerate(layer.position):
                p = _finite(f"network.layers[{i}].position[{j}]", v)
                if p:
                    problems.append(p)
    if not layers:
        problems.append(Problem("network.layers", "the network has no layers",
                                fix="start from a template: nnconsole new --template digits_cnn"))
        return problems

    info = infer_network(project.network, all_networks(project), MAIN_NETWORK)  # Units use the other networks
    for name, message in info.errors:
        where = f"network.layers[{index[name]}]" if name in index else "network.layers"
        problems.append(Problem(where, f"layer '{name}': {message}"))
    for name, li in info.layers.items():
        sizes = [("output", li.output_size)] + [(f"parameter {k}", prod(s)) for k, s in li.weight_shapes.items()]
        for what, size in sizes:
            if size > MAX_ARRAY_VALUES:
                where = f"network.layers[{index[name]}]" if name in index else "network.layers"
                problems.append(Problem(where, f"layer '{name}': its {what} holds {size:,} values per sample, more "
                                        f"than the {MAX_ARRAY_VALUES:,} one array can hold",
                                        fix="check the shapes for a typo (an extra digit?)"))
                break
    if not info.loss_layers:
        problems.append(Problem("network.layers", "the network has no loss layer, so it cannot be trained",
                                fix="add e.g. SoftmaxCrossEntropy fed by the output and the label Input"))
    if not problems:
        problems += check_batch_memory(project, sum(li.output_size for li in info.layers.values()))
    return problems


def physical_memory() -> int:
    """Bytes of RAM on this machine (0 when the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def check_batch_memory(project: Project, values_per_sample: int, memory: Optional[int] = None) -> List[Problem]:
    """``config.batch_size`` whose arrays cannot fit in memory: every layer output of a sample is held
    as float32 for the forward pass, its gradient and the validation pass (3 x 4 bytes per value).
    A batch beyond the machine's RAM would end in a MemoryError or the kernel killing the worker."""
    memory = physical_memory() if memory is None else memory
    batch = project.config.batch_size
    per_sample = 12 * max(values_per_sample, 1)
    if not memory or batch * per_sample <= memory:
        return []
    fits = max(memory // per_sample, 1)
    return [Problem("config.batch_size", f"a batch of {batch:,} samples needs about "
                    f"{batch * per_sample / (1 << 30):,.0f} GiB for this network's arrays, more than this machine's "
                    f"{memory / (1 << 30):,.0f} GiB of memory", fix=f"use a smaller batch size: the arrays of {fits:,} "
                    "samples alone would fill the memory (the batch size is per worker)")]


def check_project_file(project: Project, path: str, rel: str, what: str, allow_outside: bool = False
                       ) -> Optional[Problem]:
    """The one rule for every file a project names (datasets, initial parameters): it must lie inside
    the project's folder unless the user allowed otherwise, and exist as a regular file."""
    outside = outside_project(project, rel)
    if outside and not allow_outside:
        return Problem(
            path, f"'{rel}' points outside the project's folder (to {outside}); a project file may only "
            f"read files inside its own folder, {project_folder(project)}",
            fix=f"copy or link the file into the project folder and use a relative path, or, if you trust "
                f"this project, allow it with '{OUTSIDE_FLAG}' (nnconsole train/validate)")
    full = dataset_path(project, rel)
    if os.path.exists(full) and not os.path.isfile(full):  # a FIFO or a device would block the reader
        return Problem(path, f"{what} {full} is not a regular file (a folder, FIFO or device)",
                       fix="point it at a regular file")
    if not os.path.isfile(full):
        return Problem(path, f"{what} file not found: {full}", fix="paths are relative to the project file's "
                       "folder; check the name, or clear the field")
    return None


def check_hostfile(project: Project) -> List[Problem]:
    """``multi_gpu.hostfile`` as ``train`` reads it (relative to the project's folder): it must exist, be a regular
    file and hold only host lines (``plan.hosts.read_hostfile_problems``, the launcher's own check)."""
    rel = project.multi_gpu.hostfile
    if not rel:
        return []
    problems = read_hostfile_problems(dataset_path(project, rel))
    if not problems:
        return []
    shown = "; ".join(problems[:3]) + (f"; ... ({len(problems)} problems)" if len(problems) > 3 else "")
    return [Problem("multi_gpu.hostfile", shown, fix="give an Open MPI hostfile (lines 'host [slots=N]'), relative "
                    "to the project's folder, or clear the field to run on this machine or on multi_gpu.hosts")]


def check_initial_parameters(project: Project, allow_outside: bool = False) -> List[Problem]:
    """``config.initial_parameters``: the same folder rule as the datasets, and the file must exist."""
    rel = project.config.initial_parameters
    if not rel:
        return []
    refused = check_project_file(project, "config.initial_parameters", rel, "initial parameters", allow_outside)
    if refused:
        return [refused]
    try:
        found = read_parameter_file(dataset_path(project, rel), shapes_only=True)
    except ParameterFileError as exc:
        return [Problem("config.initial_parameters", str(exc).split("; it is damaged")[0] + " (damaged or truncated)",
                        fix="export the parameters again, or clear the field to start from the initializers")]
    # nnabla names a parameter <layer>/<function scope>/<weight>; the registry knows layer and weight.



    try:  # Units' weights are named as their expansion names them ('unit/layer/affine/W')
        network = expanded_project(project).network
    except UnitError:  # reported by the network check
        network = project.network
    network = unroll(network) if not infer_network(network).errors else network
    info = infer_network(network)  # repeat blocks unrolled: one set of weights per repetition ('conv[0]/...')
    by_name = {layer.name: layer for layer in network.layers}
    expected = {f"{weight_scope_of(by_name[name])}/{weight}": shape for name, li in info.layers.items()
                for weight, shape in li.weight_shapes.items() if name in by_name}
    differences = parameter_differences({_without_function_scope(n): s for n, s in found.items()},
                                        expected, allow_missing=True)
    if differences:
        return [Problem("config.initial_parameters", f"{dataset_path(project, rel)} does not fit the network: "
                        + "; ".join(differences[:4]) + ("; ..." if len(differences) > 4 else ""),
                        fix="use parameters saved for this network, or clear the field")]
    return []


def _without_function_scope(name: str) -> str:
    """'conv1/conv/W' -> 'conv1/W', 'u1/fc/affine/W' -> 'u1/fc/W' (a unit's layer): the scope and the weight."""
    parts = name.split("/")
    return "/".join(parts[:-2] + parts[-1:]) if len(parts) >= 3 else name


def check_datasets(project: Project, peek: Optional[Callable] = None, allow_outside: bool = False,
                   deep: bool = False) -> List[Problem]:
    """Dataset files exist, lie inside the project's folder, and provide what the Input layers expect.

    By default only the CSV (header and column counts) is read, which is quick enough for the GUI
    to call on every edit. ``deep`` also checks every cell and every image file's presence, with
    the Input layers' shapes, without decoding images (``nnconsole validate`` and ``train``).
    Paths outside the project folder (and, with ``deep``, image cells of the CSVs that lead outside
    it) are refused unless ``allow_outside`` (the user said so).
    """
    # With ``deep`` the header is all the first read needs: check_dataset then reads every row once (and keeps
    # the row count for the launcher's plan), instead of a second whole pass here (issue 31).
    if peek is None:
        peek = (lambda full, _rows: header_csv(full)) if deep else peek_csv
    problems: List[Problem] = []

    for key in ("training", "validation"):
        needed = dataset_variables(project, key)  # the Inputs this split feeds (network.data_flow)
        rel = getattr(project.datasets, key)
        path = f"datasets.{key}"
        if not rel:
            problems.append(Problem(path, f"no {key} dataset set", fix="give a CSV path relative to the project file"))
            continue
        refused = check_project_file(project, path, rel, "dataset", allow_outside)
        if refused:
            problems.append(refused)
            continue
        full = dataset_path(project, rel)
        try:
            header = peek(full, 0)
        except ValueError as exc:
            problems.append(Problem(path, str(exc)))
            continue
        variables = set(header.variables if hasattr(header, "variables") else header[0])
        missing = sorted(set(needed) - variables)
        if missing:
            problems.append(Problem(
                path, f"CSV {full} has no column for variable(s) {', '.join(missing)} "
                f"(header variables: {', '.join(sorted(variables)) or 'none'})",
                fix="rename the Input layer's 'variable' or the CSV header so they match"))
            continue
        if deep:
            try:
                check_dataset(full, expected_shapes={k: tuple(v) for k, v in needed.items()},
                              confine_to=None if allow_outside else project_folder(project),
                              label_classes=class_label_variables(project.network))
            except ValueError as exc:
                problems.append(Problem(path, str(exc)))
    return problems
