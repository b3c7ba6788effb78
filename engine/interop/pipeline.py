"""The import pipeline every importer shares: read -> graph -> mapping -> report -> project.

Each format has a reader (``nntxt_read``, ``sdcproj_read``) and a graph stage (``nntxt_network``,
``sdcproj_network``) that turns the file's network into an ``ImportedGraph``: nodes with the file's
type names, links, registry parameters (converted by each layer type's registration), weights, repeat
counts and loss targets. From there the steps are the same for every format and live here: drop
no-op layers, expand repeat blocks, name the copies, give losses their target Inputs, make project
layers (shared parameter scopes kept) and report what the project cannot hold. The format's settings stage
(``*_settings``) maps datasets, CONFIG and optimizer through the one solver table, and the format's
entry module assembles the ``ImportResult`` (the report) with the project.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from nnconsole.engine.project.model import Layer

from . import mapping
from .common import add_loss_targets
from .netgraph import (Node, expand_repeats, finalize_names, parameter_renames, remove_pass_through, share_scopes,
                       to_layers)
from .report import InteropError


@dataclass
class ImportedGraph:
    """What a format's graph stage hands to the shared steps."""

    nodes: List[Node]
    times: Dict[str, int] = field(default_factory=dict)  # repeat id -> count
    loss_targets: Dict[str, str] = field(default_factory=dict)  # loss node (base) name -> dataset variable


def graph_to_layers(graph: ImportedGraph, unsupported: List[str], notes: List[str],
                    where: str) -> Tuple[List[Layer], List[Node]]:
    """Project layers from an imported graph, and the final nodes (for parameter names).

    Raises InteropError (naming ``where``) for repeat blocks that cannot be expanded."""
    nodes, removed = remove_pass_through(graph.nodes, mapping.PASS_THROUGH)
    if removed:
        notes.append(f"Identity layers removed (no-ops): {', '.join(removed)}")
    try:
        nodes = expand_repeats(nodes, graph.times, notes, unsupported, where)
    except ValueError as exc:
        raise InteropError(str(exc)) from None
    finalize_names(nodes)
    share_scopes(nodes, notes)  # weights several layers read stay one set (parameter_scope)
    if graph.loss_targets:  # copies of a repeated loss read the same dataset variable
        targets = {n.name: graph.loss_targets[n.base_name] for n in nodes if n.base_name in graph.loss_targets}
        nodes = add_loss_targets(nodes, targets, unsupported)
    return to_layers(nodes, unsupported, layout=True), nodes


def parameter_names(nodes: List[Node], unsupported: List[str], copies_initialized: bool) -> Dict[str, List[str]]:
    """Source parameter name -> the project's parameter names; a source parameter that still maps to several
    project parameters (sharing share_scopes could not keep) is reported."""
    renames, shared = parameter_renames(nodes)
    scopes: Dict[str, List[str]] = {}
    for pname in shared:
        scopes.setdefault(pname.rsplit("/", 2)[0], [t.split("/")[0] for t in renames[pname]])
    how = " (initialized from the shared values)" if copies_initialized else ""
    for scope, users in scopes.items():
        unsupported.append(f"parameters '{scope}/...' are shared by layers {', '.join(users)}; nnconsole gives each "
                           f"layer its own copy{how}")
    return renames
