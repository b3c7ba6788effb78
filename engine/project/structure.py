"""Several networks and optimizers in one project (issue 17): look-ups and their checks.

``Project.network`` is NNC's Main network and ``Project.optimizer`` its first optimizer; a project may also
hold more networks by name (``Project.networks``) and more optimizers (``Project.optimizers``), each training
its own network. Layers naming one ``parameter_scope`` share one set of weights across all of them.
Pure Python: no nnabla, no Qt.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Dict, List, Tuple

from .errors import Problem
from .model import DATASET_SPLITS, MAIN_NETWORK, ExtraOptimizer, Network, Project

FIRST_OPTIMIZER = "Optimizer"  # the name NNC gives the CONFIG tab's first optimizer
# A network's name also names sections of NNC's project file ([<name>_Layer_3]) and nnabla networks.
NETWORK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def all_networks(project: Project) -> Dict[str, Network]:
    """Every network by name, Main first."""
    return {MAIN_NETWORK: project.network, **project.networks}


def network_named(project: Project, name: str) -> Network:
    """The network ``name`` (``Main`` or a key of ``networks``); KeyError names the known ones."""
    networks = all_networks(project)
    if name not in networks:
        raise KeyError(f"no network named '{name}' (networks: {', '.join(networks)})")
    return networks[name]


def trained_networks(project: Project) -> Dict[str, Network]:
    """The networks an optimizer trains, by name, Main first (their Inputs read the datasets)."""
    out = {MAIN_NETWORK: project.network}
    for entry in project.optimizers:
        if entry.network in project.networks:
            out.setdefault(entry.network, project.networks[entry.network])
    return out


def optimizer_project(project: Project, entry: ExtraOptimizer) -> Project:
    """A view of ``project`` in which ``entry`` is the optimizer and its network the Main network (shared
    objects, not copies): what the plan and the solver factory read for that optimizer."""
    return dataclasses.replace(project, network=network_named(project, entry.network), optimizer=entry.optimizer,
                               networks={}, optimizers=[])


def evaluation_view(project: Project) -> Tuple[Project, int, str]:
    """(the project with its first executor's network as Main, passes per batch, how they combine): what
    evaluation runs. Without executors: the project itself, once."""
    if not project.executors:
        return project, 1, "mean"
    ex = project.executors[0]
    view = dataclasses.replace(project, network=network_named(project, ex.network), networks={}, optimizers=[],
                               executors=[])
    return view, max(1, int(ex.num_evaluations)), ex.repeat_evaluation_type


def dataset_variables(project: Project) -> Dict[str, Tuple[int, ...]]:
    """The dataset variables that the trained networks' Inputs read, with their shapes (Main's first)."""
    from nnconsole.engine.shapes import infer_network

    shapes: Dict[str, Tuple[int, ...]] = {}
    for network in trained_networks(project).values():
        for name, shape in infer_network(network).input_variables.items():
            shapes.setdefault(name, tuple(shape))
    return shapes


def check_structure(project: Project) -> List[Problem]:
    """The extra networks (names, layers, shapes) and optimizers (network, dataset, range, settings)."""
    problems = _check_networks(project)
    names = {FIRST_OPTIMIZER}
    for i, entry in enumerate(project.optimizers):
        problems += _check_optimizer(project, i, entry, names)
    problems += _check_shared_inputs(project)
    problems += _check_executors(project)
    return problems


def _check_executors(project: Project) -> List[Problem]:
    from .model import REPEAT_EVALUATION_TYPES

    problems: List[Problem] = []
    networks = all_networks(project)
    for i, ex in enumerate(project.executors):
        where = f"executors[{i}]"
        if ex.network not in networks:
            problems.append(Problem(f"{where}.network", f"executor '{ex.name}' runs network '{ex.network}', which "
                                    "the project does not have", fix="use one of: " + ", ".join(networks)))
        if not 1 <= ex.num_evaluations <= 10000:
            problems.append(Problem(f"{where}.num_evaluations", f"must be 1 to 10000, got {ex.num_evaluations}",
                                    fix="1 evaluates once; more average Monte-Carlo passes"))
        if ex.repeat_evaluation_type not in REPEAT_EVALUATION_TYPES:
            problems.append(Problem(f"{where}.repeat_evaluation_type", f"'{ex.repeat_evaluation_type}' is not one of "
                                    + ", ".join(REPEAT_EVALUATION_TYPES), fix="mean averages the passes"))
    return problems


def _check_networks(project: Project) -> List[Problem]:
    from nnconsole.engine.shapes import infer_network

    problems: List[Problem] = []
    for name, network in project.networks.items():
        where = f"networks.{name}"
        if name == MAIN_NETWORK or not NETWORK_NAME.fullmatch(name):
            problems.append(Problem(where, f"network name '{name}' is not usable" + (
                " (Main is the project's 'network')" if name == MAIN_NETWORK else ""),
                fix="give each extra network its own name of letters, digits, '_', '-' or '.', e.g. Generator"))
        index = {layer.name: i for i, layer in reversed(list(enumerate(network.layers)))}
        for lname, message in infer_network(network, all_networks(project), name).errors:  # Units: other networks
            at = f"{where}.layers[{index[lname]}]" if lname in index else f"{where}.layers"
            problems.append(Problem(at, f"network '{name}', layer '{lname}': {message}"))
    return problems


def _check_optimizer(project: Project, i: int, entry: ExtraOptimizer, names: set) -> List[Problem]:
    from nnconsole.engine.shapes import infer_network

    from .validate import check_settings

    where = f"optimizers[{i}]"
    problems: List[Problem] = []
    if not entry.name.strip() or entry.name in names:
        problems.append(Problem(f"{where}.name", f"optimizer name '{entry.name}' is empty or used twice "
                                f"('{FIRST_OPTIMIZER}' is the CONFIG tab's)", fix="give each optimizer its own name"))
    names.add(entry.name)
    networks = all_networks(project)
    if entry.network not in networks:
        problems.append(Problem(f"{where}.network", f"optimizer '{entry.name}' trains network '{entry.network}', "
                                "which the project does not have", fix="use one of: " + ", ".join(networks)))
    elif not infer_network(networks[entry.network]).loss_layers:
        problems.append(Problem(f"{where}.network", f"network '{entry.network}' of optimizer '{entry.name}' has no "
                                "loss layer", fix="add a loss layer to it or train another network"))
    if entry.dataset not in DATASET_SPLITS:
        problems.append(Problem(f"{where}.dataset", f"dataset '{entry.dataset}' is not one of the project's",
                                fix="use " + " or ".join(DATASET_SPLITS)))
    for key in ("start_iteration", "end_iteration"):
        value = getattr(entry, key)
        if value < 0:
            problems.append(Problem(f"{where}.{key}", f"must be 0 or more, got {value}", fix="0 means no bound"))
    if entry.end_iteration and entry.end_iteration < entry.start_iteration:
        problems.append(Problem(f"{where}.end_iteration", f"ends ({entry.end_iteration}) before it starts "
                                f"({entry.start_iteration})", fix="set end_iteration 0 (to the end) or later"))
    view = dataclasses.replace(project, optimizer=entry.optimizer)
    for p in check_settings(view):
        if p.path.startswith("optimizer."):
            p.path = f"{where}.{p.path}"
            problems.append(p)
    return problems


def _check_shared_inputs(project: Project) -> List[Problem]:
    """A dataset variable read by several trained networks must have one shape."""
    from nnconsole.engine.shapes import infer_network

    seen: Dict[str, Tuple[str, Tuple[int, ...]]] = {}
    problems: List[Problem] = []
    for name, network in trained_networks(project).items():
        for var, shape in infer_network(network).input_variables.items():
            first = seen.setdefault(var, (name, tuple(shape)))
            if first[1] != tuple(shape):
                problems.append(Problem(f"networks.{name}", f"variable '{var}' has shape {list(shape)} here but "
                                        f"{list(first[1])} in network '{first[0]}'",
                                        fix="give the Input layers reading it one shape"))
    return problems
