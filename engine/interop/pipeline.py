"""The import pipeline every importer shares: read -> graph -> mapping -> report -> project.

Each format has a reader (``nntxt_read``, ``sdcproj_read``) and a graph stage (``nntxt_network``,
``sdcproj_network``) that turns the file's network into an ``ImportedGraph``: nodes with the file's
type names, links, registry parameters (converted by each layer type's registration), weights, repeat
counts and loss targets. From there the steps are the same for every format and live here: drop
no-op layers, check repeat blocks (kept as layers), give losses their target Inputs, make project
layers (shared parameter scopes kept) and report what the project cannot hold. The format's settings stage
(``*_settings``) maps datasets, CONFIG and optimizer through the one solver table, and the format's
entry module assembles the ``ImportResult`` (the report) with the project.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Set, Tuple

from nnconsole.engine.project.model import Comment, Layer, Network

from nnconsole.engine.interop import mapping
from nnconsole.engine.interop.common import add_loss_targets
from nnconsole.engine.interop.netgraph import (Node, keep_repeat_blocks, parameter_renames, remove_pass_through,
                                               share_scopes, to_layers, unique_name)
from nnconsole.engine.interop.report import InteropError
from nnconsole.engine.network.layered_layout import GAP_X, NODE_WIDTH, ROW_STEP, crowded, layered_layout
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.layers import find_spec


@dataclass
class ImportedGraph:
    """What a format's graph stage hands to the shared steps."""

    nodes: List[Node]
    times: Dict[str, int] = field(default_factory=dict)  # repeat id -> count
    loss_targets: Dict[str, str] = field(default_factory=dict)  # loss node (base) name -> dataset variable
    marked_weights: bool = False  # weights name their repeats as nnabla files do ('conv{R}/conv/W')


def graph_to_layers(graph: ImportedGraph, unsupported: List[str], notes: List[str],
                    where: str, library: Optional[Mapping[str, Network]] = None) -> Tuple[List[Layer], List[Node]]:
    """Project layers from an imported graph, and the final nodes (for parameter names).

    ``library``: the file's other networks by name, which its Unit layers use (for the losses' target shapes).
    Raises InteropError (naming ``where``) for malformed repeat blocks."""
    from_file = {n.name for n in graph.nodes}
    nodes, removed = remove_pass_through(graph.nodes, mapping.PASS_THROUGH)
    if removed:
        notes.append(f"Identity layers removed (no-ops): {', '.join(removed)}")
    try:
        keep_repeat_blocks(nodes, graph.times, graph.marked_weights, notes, where)
    except ValueError as exc:
        raise InteropError(str(exc)) from None
    share_scopes(nodes, notes)  # weights several layers read stay one set (parameter_scope)
    if graph.loss_targets:
        targets = {n.name: graph.loss_targets[n.base_name] for n in nodes if n.base_name in graph.loss_targets}
        # Side-pin operands first (Sub2's unlinked R), one at a time in data-flow order, so that every loss and
        # later operand sees the shapes of the layers they complete.
        for n in [n for n in nodes if n.name in targets and not _is_loss(n)]:
            nodes = add_loss_targets(nodes, {n.name: targets.pop(n.name)}, unsupported, library)
        nodes = reshape_scalar_predictions(nodes, targets, notes)
        nodes = add_loss_targets(nodes, targets, unsupported, library)
    layers = to_layers(nodes, unsupported, layout=False)
    added = {layer.name for layer in layers} - from_file
    lay_out(layers, notes, added)
    for node, layer in zip(nodes, layers):
        if node.name in added:  # where the import put it: a file position it never had (comments_follow_layout)
            node.position = layer.position
    return layers, nodes


def lay_out(layers: List[Layer], notes: List[str], added: Set[str]) -> None:
    """Give the layers the layered layout of the EDIT canvas (``network.layered_layout``) unless the file placed
    every one of them with room to spare at the canvas's node size: an NNC file's smaller, closer boxes would
    touch, their pins overlap and long edges run through them. ``added``: layers the import made (a loss's
    target Input, which NNC files do not hold); with the file's layout kept, one that lands on a box moves right
    to a free spot. Positions are changed in place."""
    placed = {layer.name: tuple(layer.position) for layer in layers
              if layer.position is not None and layer.name not in added}
    if placed and len(placed) + len(added) == len(layers) and not crowded(placed):
        for layer in layers:
            if layer.name in added:
                x, y = layer.position if layer.position is not None else (0.0, 0.0)
                while crowded({**placed, layer.name: (x, y)}):
                    x += NODE_WIDTH + GAP_X
                layer.position = placed[layer.name] = (x, y)
        return
    positions = layered_layout(Network(layers=layers)).positions
    for layer in layers:
        layer.position = positions[layer.name]
    if placed:
        notes.append("layers laid out again top to bottom: at nnconsole's node size the file's positions made "
                     "boxes touch (Edit > Auto Layout arranges them again after edits)")


def comments_follow_layout(comments: List[Comment], nodes: List[Node], layers: List[Layer]) -> List[Comment]:
    """``comments`` (the file's canvas notes), moved with the layers when ``lay_out`` arranged them again:
    the file placed a note next to the layers it explains, so each goes right of the network, level with the
    layer that was nearest to it in the file, a row lower where another note took that place."""
    old = {n.name: tuple(n.position) for n in nodes if n.position is not None}
    new = {layer.name: tuple(layer.position) for layer in layers if layer.position is not None}
    old = {name: p for name, p in old.items() if name in new}
    if not comments or not old or all(old[name] == new[name] for name in old):
        return comments
    right = max(x for x, _ in new.values()) + NODE_WIDTH + 2 * GAP_X
    taken: List[float] = []
    for note in sorted(comments, key=lambda c: (c.position or (0.0, 0.0))[1]):
        if note.position is None:
            continue
        cx, cy = note.position
        nearest = min(old, key=lambda name: (old[name][0] - cx) ** 2 + (old[name][1] - cy) ** 2)
        y = new[nearest][1]
        while any(abs(y - other) < ROW_STEP for other in taken):
            y += ROW_STEP
        taken.append(y)
        note.position = (right, y)
    return comments


def _is_loss(node: Node) -> bool:
    rtype = mapping.registry_type(node.type)
    spec = find_spec(rtype) if rtype else None
    return bool(spec is not None and spec.is_loss)


def reshape_scalar_predictions(nodes: List[Node], targets: Dict[str, str], notes: List[str]) -> List[Node]:
    """Losses whose prediction is one scalar per sample (BatchDet, BatchLogdet, a Sum over every axis) read it
    through a Reshape to [1], so their target Input gets shape [1]: a dataset variable is at least one value
    per sample, and an Input of shape [] is not a valid project layer (NNC broadcasts the two)."""

    losses = [n for n in nodes if n.name in targets and n.inputs]
    if not losses:
        return nodes
    info = infer_network(Network(layers=to_layers([n for n in nodes if n.name not in targets], [], layout=False)))
    taken = {n.name for n in nodes}
    reshapes: Dict[str, Node] = {}  # prediction name -> its Reshape (losses reading one prediction share it)
    for loss in losses:
        pred = loss.inputs[0]
        li = info.layers.get(pred)
        if li is None or li.out_shape is None or tuple(li.out_shape) != ():
            continue
        if pred not in reshapes:
            position = None if loss.position is None else (loss.position[0], loss.position[1] - 48.0)
            reshapes[pred] = Node(name=unique_name(f"{pred}_as_1", taken), type="Reshape",
                                  params={"shape": [1]}, inputs=[pred], position=position)
            notes.append(f"loss '{loss.name}' reads '{pred}', one scalar per sample: a Reshape "
                         f"'{reshapes[pred].name}' to [1] was added so its target Input has shape [1]")
        loss.inputs = [reshapes[pred].name] + list(loss.inputs[1:])
    out: List[Node] = []
    for n in nodes:
        out.append(n)
        if n.name in reshapes:
            out.append(reshapes[n.name])
    return out


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
