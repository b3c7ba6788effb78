"""The ``search`` section judged: every searched target, range, objective, budget, pruner and sampler, and
every layer property marked searched (``network.layers[i].search.<property>``, NNC's Search flag).

Each problem names its YAML path (``search.params[0].low``) and the fix, as the other checks do; the file and
line are added by ``check.project_file``. A project without a ``search`` section and without searched
properties has nothing to check here.
"""
from __future__ import annotations

import math
import os
from typing import Any, List, Optional

from nnconsole.engine.project.errors import Problem
from nnconsole.engine.project.model import MAIN_NETWORK, Project, Search, SearchParam
from nnconsole.engine.project.paths import dataset_path
from nnconsole.engine.project.schema import (BY_PATH, MAX_COUNT, MAX_SEED, SEARCH_KINDS, SEARCH_OBJECTIVES,
                                             SEARCH_PRUNERS, SEARCH_SAMPLERS)
from nnconsole.engine.project.search_targets import Target, TargetError, current_value, resolve_target
from nnconsole.engine.layers.types.unit import parse_arguments
from nnconsole.engine.project.searched_properties import ARGUMENT_VALUE, FlaggedProperty, flagged_properties


def check_search(project: Project) -> List[Problem]:
    """Every problem of ``project.search`` (none when the project has no search section)."""
    search = project.search
    flagged = flagged_properties(project)
    problems: List[Problem] = _check_flags(project, flagged)
    if search is None:
        return problems
    for i, param in enumerate(search.params):
        problems += _check_param(project, param, f"search.params[{i}]")
    seen = {}
    for i, param in enumerate(search.params):
        if param.target in seen:
            problems.append(Problem(f"search.params[{i}].target", f"'{param.target}' is searched twice",
                                    fix="keep one entry per target"))
        seen[param.target] = f"search.params[{i}]"
    for flag in flagged:
        if flag.target in seen:
            problems.append(Problem(flag.path, f"'{flag.target}' is marked searched here and listed in "
                                    f"{seen[flag.target]} too", fix="keep one of the two"))
    problems += _check_choices_of(search)
    if not search.params and not search.structure and not flagged:
        problems.append(Problem("search.params", "the search varies nothing", fix="add a params entry (e.g. target: "
                                "optimizer.learning_rate, kind: log_float, low: 1.0e-5, high: 1.0) or set structure: true"))
    if search.structure and project.networks:
        problems.append(Problem("search.structure", "structure search changes the Main network only, and this project "
                                f"has other networks too ({', '.join(project.networks)}) that would no longer match it",
                                fix="set structure: false, or search a project whose only network is Main"))
    if search.structure and search.policy:
        policy = dataset_path(project, search.policy)
        if not os.path.isfile(policy):
            problems.append(Problem("search.policy", f"no policy file '{search.policy}' ({policy})",
                                    fix="give an .ini file relative to the project, or leave it empty for NNC's policy"))
    for name, value, low, high in (("trials", search.trials, 1, MAX_COUNT), ("max_mutations", search.max_mutations, 1, 64),
                                   ("epochs", search.epochs, 0, MAX_COUNT), ("seed", search.seed, 0, MAX_SEED),
                                   ("multiply_adds_min", search.multiply_adds_min, 0, None),
                                   ("multiply_adds_max", search.multiply_adds_max, 0, None)):
        if value < low or (high is not None and value > high):
            problems.append(Problem(f"search.{name}", f"must be between {low} and {high if high is not None else 'any'}"
                                    f", got {value}", fix=_FIXES[name]))
    for name, value in (("timeout_minutes", search.timeout_minutes), ("error_max", search.error_max)):
        if not math.isfinite(value) or value < 0:
            problems.append(Problem(f"search.{name}", f"must be a number >= 0, got {value}", fix="0 means no bound"))
    if search.multiply_adds_max and search.multiply_adds_min > search.multiply_adds_max:
        problems.append(Problem("search.multiply_adds_min", f"{search.multiply_adds_min:,} is above multiply_adds_max "
                                f"{search.multiply_adds_max:,}", fix="lower the minimum or raise the maximum"))
    return problems


def _check_flags(project: Project, flagged: List[FlaggedProperty]) -> List[Problem]:
    """The problems of each layer property marked searched, at its place in the layer (``...search.units``)."""
    problems: List[Problem] = []
    for flag in flagged:
        if flag.param is None:
            problems.append(Problem(flag.path, flag.why, fix="give its range under the layer: search: "
                                    "{value: {kind: int, low: 4, high: 16}}, or set search: false"))
            continue
        found = _check_param(project, flag.param, flag.path)
        for problem in found:
            if problem.path == f"{flag.path}.target":
                problem.path = flag.path
                problem.fix = f"mark a property that layer '{flag.layer}' has"
        problems += found or _unit_overrides(project, flag)
    return problems


def _unit_overrides(project: Project, flag: FlaggedProperty) -> List[Problem]:
    """A searched Argument of a network Units run changes nothing when every such Unit gives it its own value."""
    if flag.network == MAIN_NETWORK or flag.prop != ARGUMENT_VALUE:
        return []
    units = [layer for network in [project.network, *project.networks.values()] for layer in network.layers
             if layer.type == "Unit" and layer.params.get("network") == flag.network]
    giving = []
    for unit in units:
        try:
            given = parse_arguments(str(unit.params.get("arguments", "") or ""))
        except ValueError:
            return []  # the unit's own problem, named by the network checks
        if given.get(flag.layer, "") != "":
            giving.append(unit.name)
    if units and len(giving) == len(units):
        return [Problem(flag.path, f"every Unit running network {flag.network} ({', '.join(giving)}) gives Argument "
                        f"'{flag.layer}' its own value, so searching the Argument's value changes nothing",
                        fix=f"remove {flag.layer} from those units' arguments (they then take the searched value)")]
    return []


_FIXES = {"trials": "the number of trials to run, e.g. 20", "max_mutations": "structure changes per trial, e.g. 2",
          "epochs": "0 trains each trial for config.max_epoch", "seed": "use a seed between 0 and 4294967295",
          "multiply_adds_min": "0 means no lower bound", "multiply_adds_max": "0 means no upper bound"}


def _check_choices_of(search: Search) -> List[Problem]:
    problems = []
    objectives = list(search.objectives)
    if not objectives or objectives[0] != "error" or len(set(objectives)) != len(objectives):
        problems.append(Problem("search.objectives", f"{objectives} is not [error] or [error, multiply_adds]",
                                fix="write objectives: [error] for one best trial, [error, multiply_adds] for a Pareto front"))
    for i, name in enumerate(objectives):
        if name not in SEARCH_OBJECTIVES:
            problems.append(Problem(f"search.objectives[{i}]", f"unknown objective '{name}'",
                                    fix="one of: " + ", ".join(SEARCH_OBJECTIVES)))
    for key, choices in (("pruner", SEARCH_PRUNERS), ("sampler", SEARCH_SAMPLERS)):
        value = getattr(search, key)
        if value not in choices:
            problems.append(Problem(f"search.{key}", f"unknown {key} '{value}'", fix="one of: " + ", ".join(choices)))
    if len(objectives) > 1 and search.pruner != "none":
        problems.append(Problem("search.pruner", f"pruning ('{search.pruner}') needs a single objective; "
                                "a Pareto front compares whole trials", fix="set pruner: none, or objectives: [error]"))
    return problems


def _check_param(project: Project, param: SearchParam, path: str) -> List[Problem]:
    try:
        target = resolve_target(project, param.target)
    except TargetError as exc:
        return [Problem(f"{path}.target", str(exc), fix="name a setting path or layers.<layer>.<property>")]
    if param.kind not in SEARCH_KINDS:
        return [Problem(f"{path}.kind", f"unknown kind '{param.kind}'", fix="one of: " + ", ".join(SEARCH_KINDS))]
    if param.kind == "choice":
        return _check_choice_param(project, target, param, path)
    problems = []
    setting_kind = target.kind()
    if setting_kind == "choice":
        return [Problem(f"{path}.kind", f"'{param.target}' takes names, not numbers", fix="use kind: choice with choices: [...]")]
    for key in ("low", "high"):
        value = getattr(param, key)
        if not math.isfinite(value):
            problems.append(Problem(f"{path}.{key}", f"must be a finite number, got {value}", fix="e.g. 1.0e-5"))
    if problems:
        return problems
    if not param.low < param.high:
        problems.append(Problem(f"{path}.high", f"high {param.high:g} must be above low {param.low:g}",
                                fix="give the range as low < high"))
    if param.kind == "log_float" and param.low <= 0:
        problems.append(Problem(f"{path}.low", f"a log-uniform range starts above 0, got {param.low:g}",
                                fix="e.g. low: 1.0e-5"))
    if param.kind == "int" or setting_kind == "int" or _holds_ints(project, target):
        if param.kind != "int":
            problems.append(Problem(f"{path}.kind", f"'{param.target}' holds whole numbers", fix="use kind: int"))
        for key in ("low", "high"):
            if not float(getattr(param, key)).is_integer():
                problems.append(Problem(f"{path}.{key}", f"must be a whole number, got {getattr(param, key)}",
                                        fix="e.g. 16"))
        if param.step < 1:
            problems.append(Problem(f"{path}.step", f"must be >= 1, got {param.step}", fix="1 tries every value"))
    if target.setting:
        setting = BY_PATH[target.setting]
        bound = 0.0 if setting.positive else setting.minimum
        if bound is not None and (param.low <= bound if setting.positive else param.low < bound):
            problems.append(Problem(f"{path}.low", f"{param.target} must be {setting.allowed()}, the range starts at "
                                    f"{param.low:g}", fix=f"start the range within {setting.allowed()}"))
    elif param.low < 1 and _holds_ints(project, target):
        problems.append(Problem(f"{path}.low", f"layer sizes start at 1, got {param.low:g}", fix="e.g. low: 8"))
    return problems


def _holds_ints(project: Project, target: Target) -> bool:
    if not target.layer:
        return False
    value = current_value(project, target)
    values = value if isinstance(value, (list, tuple)) else [value]
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _check_choice_param(project: Project, target: Target, param: SearchParam, path: str) -> List[Problem]:
    if not param.choices:
        return [Problem(f"{path}.choices", "a choice needs at least one value", fix="e.g. choices: [16, 32, 64]")]
    problems = []
    for i, value in enumerate(param.choices):
        bad = _bad_choice(project, target, value)
        if bad:
            problems.append(Problem(f"{path}.choices[{i}]", bad, fix=_choice_fix(target)))
    return problems


def _bad_choice(project: Project, target: Target, value: Any) -> Optional[str]:
    if target.setting:
        setting = BY_PATH[target.setting]
        if setting.kind == "choice":
            return None if value in setting.choices else f"'{value}' is not a {setting.label.lower()}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{value!r} is not a number"
        if setting.kind == "int" and not float(value).is_integer():
            return f"{value!r} is not a whole number"
        if (setting.positive and value <= 0) or (setting.minimum is not None and value < setting.minimum):
            return f"{value!r} is outside {setting.allowed()}"
        return None
    current = current_value(project, target)
    if isinstance(current, (list, tuple)) and isinstance(value, (list, tuple)) and len(value) != len(current):
        return f"{value!r} has {len(value)} entries; {target.layer}.{target.param} has {len(current)}"
    if isinstance(current, str) != isinstance(value, str):
        return f"{value!r} is not of the kind {target.layer}.{target.param} holds ({current!r})"
    return None


def _choice_fix(target: Target) -> str:
    if target.setting and BY_PATH[target.setting].choices:
        return "one of: " + ", ".join(BY_PATH[target.setting].choices)
    return "give values of the kind the property holds"
