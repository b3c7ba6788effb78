"""The checks of several networks and optimizers in one project (issue 17): the extra networks' names, layers and
shapes, each optimizer's network, dataset, range and settings, shared Inputs and the executors."""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Tuple

from nnconsole.engine.check.validate import check_settings
from nnconsole.engine.project.errors import Problem
from nnconsole.engine.project.model import (DATASET_SPLITS, ExtraOptimizer, MAIN_NETWORK, Project,
                                            REPEAT_EVALUATION_TYPES)
from nnconsole.engine.project.structure import FIRST_OPTIMIZER, NETWORK_NAME, all_networks, trained_networks

from nnconsole.engine.network.expansion_size import expanded_layers, size_problem
from nnconsole.engine.network.repeat_blocks import MAX_EXPANDED_LAYERS
from nnconsole.engine.network.data_flow import SPLITS, conflicts, fits, split_readers
from nnconsole.engine.network.shapes import infer_network

# Layers shape inference may go through when one project is checked (each network expanded on its own): Main at the
# bound plus unit networks as large again. Beyond it the remaining networks are reported, not checked (seconds, not
# minutes, for a project of many networks each just under MAX_EXPANDED_LAYERS).
MAX_CHECKED_LAYERS = 2 * MAX_EXPANDED_LAYERS

def check_structure(project: Project) -> List[Problem]:
    """The extra networks (names, layers, shapes) and optimizers (network, dataset, range, settings)."""
    problems = _check_networks(project)
    names = {FIRST_OPTIMIZER}
    for i, entry in enumerate(project.optimizers):
        problems += _check_optimizer(project, i, entry, names)
    problems += _check_shared_inputs(project)
    problems += _check_noise_buffers(project)
    problems += _check_executors(project)
    return problems


def _check_executors(project: Project) -> List[Problem]:
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
    """Each extra network's name, layers and shapes. The layers inferred across the project (each network expanded
    on its own) are counted first and bounded by MAX_CHECKED_LAYERS in all, so many networks each just under the
    bound cannot make one check take minutes; a network beyond what is left is reported, not inferred."""
    problems: List[Problem] = []
    networks = all_networks(project)
    left = MAX_CHECKED_LAYERS - _inferred_size(project.network, networks, MAIN_NETWORK)
    skipped: List[str] = []
    for name, network in project.networks.items():
        where = f"networks.{name}"
        if name == MAIN_NETWORK or not NETWORK_NAME.fullmatch(name):
            problems.append(Problem(where, f"network name '{name}' is not usable" + (
                " (Main is the project's 'network')" if name == MAIN_NETWORK else ""),
                fix="give each extra network its own name of letters, digits, '_', '-' or '.', e.g. Generator"))
        size = _inferred_size(network, networks, name)
        left -= size
        if left < 0:  # counted, not inferred
            skipped.append(name)
            continue
        index = {layer.name: i for i, layer in reversed(list(enumerate(network.layers)))}
        for lname, message in infer_network(network, networks, name).errors:  # Units: other networks
            at = f"{where}.layers[{index[lname]}]" if lname in index else f"{where}.layers"
            problems.append(Problem(at, f"network '{name}', layer '{lname}': {message}"))
    if skipped:
        shown = ", ".join(skipped[:4]) + (f" and {len(skipped) - 4} more" if len(skipped) > 4 else "")
        problems.append(Problem(f"networks.{skipped[0]}", f"network{'s' if len(skipped) > 1 else ''} {shown} not "
                                f"checked: the project's networks have {MAX_CHECKED_LAYERS - left:,} layers in all once "
                                "their units and repeat blocks are expanded (each network on its own), more than the "
                                f"{MAX_CHECKED_LAYERS:,} nnconsole checks in one project",
                                fix="use fewer or smaller units and repeat blocks"))
    return problems


def _inferred_size(network, networks, name: str) -> int:
    """The layers checking ``network`` infers: its expanded size, or none when counting alone refuses it."""
    return 0 if size_problem(network, networks, name) else expanded_layers(network, networks, name)


def _check_optimizer(project: Project, i: int, entry: ExtraOptimizer, names: set) -> List[Problem]:
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
    """A dataset variable fed from one split to several networks must fit each (``network.data_flow``): each
    network has its own variables, so Inputs of different networks may give one variable different shapes as
    long as no dataset column has to feed both."""

    problems: List[Problem] = []
    for split in SPLITS:
        for var, readers in conflicts(split_readers(project, split)).items():
            where = [r for r in readers if not fits(readers[0].shape, r.shape)][0]
            shown = "; ".join(f"{list(r.shape)} in network '{r.network}' ({r.by})" for r in readers)
            problems.append(Problem(f"networks.{where.network}" if where.network in project.networks else "network",
                                    f"the {split} dataset's variable '{var}' feeds Inputs of shapes that one column "
                                    f"cannot fit: {shown}",
                                    fix="give those Inputs one shape, let one of them read another dataset variable, "
                                        "or train that network on the other dataset"))
    return problems


def _check_noise_buffers(project: Project) -> List[Problem]:
    """A VATNoise noise buffer is one variable of the run, shared by every network naming it: one shape."""

    seen: Dict[str, Tuple[str, Tuple[int, ...]]] = {}
    problems: List[Problem] = []
    for name, network in trained_networks(project).items():
        for buffer, shape in infer_network(network).noise_buffers.items():
            first = seen.setdefault(buffer, (name, tuple(shape)))
            if first[1] != tuple(shape):
                problems.append(Problem(f"networks.{name}", f"noise buffer '{buffer}' has shape {list(shape)} here "
                                        f"but {list(first[1])} in network '{first[0]}'",
                                        fix="give the VATNoise inputs writing it and the Inputs reading it one shape, "
                                        "or name another buffer (Buf.Dataset)"))
    return problems
