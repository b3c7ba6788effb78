"""Several networks and optimizers in one project (issue 17): look-ups (their checks: ``nnconsole.engine.check.structure``).

``Project.network`` is NNC's Main network and ``Project.optimizer`` its first optimizer; a project may also
hold more networks by name (``Project.networks``) and more optimizers (``Project.optimizers``), each training
its own network. Layers naming one ``parameter_scope`` share one set of weights across all of them.
Pure Python: no nnabla, no Qt.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Dict, Tuple

from nnconsole.engine.project.model import MAIN_NETWORK, ExtraOptimizer, Network, Project

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
