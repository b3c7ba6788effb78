"""The network as importers read it, before it becomes project layers: nodes in NNC terms,
RepeatStart/RepeatEnd blocks expanded, and the conversion to ``nnconsole.engine.project.model.Layer``.

Both the ``.nntxt`` and the ``.sdcproj`` importers produce a list of ``Node``: one per NNC layer
(function), inputs by node name in pin order, parameters already in the registry's snake_case
spelling, weights with the name they had in the source file (so a ``.nnp``'s parameters can be
renamed to the project's). ``expand_repeats`` then unrolls loop-control blocks the way nnabla's own
``NnpExpander`` does: the layers between ``RepeatStart`` and ``RepeatEnd`` are copied ``times`` times,
each copy with its own weights (``Conv{RepeatStart}/conv/W`` becomes ``Conv[0]/conv/W``, ``Conv[1]/...``).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from nnconsole.engine.project.model import Initializer, Layer

from .mapping import non_trainable, registry_type

LAYOUT_STEP = 80.0  # vertical distance between layers laid out automatically (same as the templates)
REPEAT_SHIFT = 240.0  # horizontal offset of each further copy of a repeated block


@dataclass
class WeightInfo:
    """One weight of a node: its name in the source file, and its initializer / LR multiplier if given."""

    source_name: str
    initializer: Optional[Initializer] = None
    lr_multiplier: Optional[float] = None


@dataclass
class Node:
    """One NNC layer. ``type`` is NNC's type name; ``repeat_ids`` are the repeats enclosing it
    (outermost first; a RepeatStart lists its own id too, as nnabla does). ``repeat_id`` is the repeat
    a RepeatStart opens or a RepeatEnd closes. A RepeatStart's inputs are [outer input, loop-back]."""

    name: str
    type: str
    inputs: List[str] = field(default_factory=list)
    params: Dict[str, Any] = field(default_factory=dict)
    weights: Dict[str, WeightInfo] = field(default_factory=dict)
    repeat_ids: List[str] = field(default_factory=list)
    position: Optional[Tuple[float, float]] = None
    repeat_id: str = ""
    copy_indices: List[int] = field(default_factory=list)  # one per expanded repeat, innermost first
    base_name: str = ""
    parameter_scope: str = ""  # set when the node shares its weights with others (see share_scopes)

    def __post_init__(self) -> None:
        self.base_name = self.base_name or self.name


def unique_name(wanted: str, taken: Set[str]) -> str:
    """``wanted``, or ``wanted_2``, ``wanted_3`` ... whichever is not in ``taken`` (and add it)."""
    name, n = wanted, 1
    while name in taken:
        n += 1
        name = f"{wanted}_{n}"
    taken.add(name)
    return name


def _depth(nodes: Sequence[Node], rid: str) -> int:
    for n in nodes:
        if n.type == "RepeatStart" and n.repeat_id == rid:
            return len([r for r in n.repeat_ids if r != rid])
    return 0


def expand_repeats(nodes: List[Node], times: Dict[str, int], notes: List[str], unsupported: List[str],
                   where: str) -> List[Node]:
    """Unroll every RepeatStart/RepeatEnd block (innermost first); returns the new node list.

    ``times`` maps repeat id -> iterations. Raises ValueError naming the repeat when a block is
    malformed (no matching RepeatEnd, times < 1).
    """
    ids = [rid for rid in times if any(n.type == "RepeatStart" and n.repeat_id == rid for n in nodes)]
    for n in nodes:
        if n.type in ("RepeatStart", "RepeatEnd") and n.repeat_id not in ids:
            if n.type == "RepeatStart":
                raise ValueError(f"{where}: RepeatStart '{n.name}' has no repeat count (times); "
                                 "set its Times property")
            raise ValueError(f"{where}: RepeatEnd '{n.name}' closes repeat '{n.repeat_id}', which has no "
                             "RepeatStart; set its ID to the name of the RepeatStart it closes")
    ids.sort(key=lambda rid: -_depth(nodes, rid))
    shared_reported: Set[str] = set()
    for rid in ids:
        nodes = _expand_one(nodes, rid, int(times[rid]), notes, unsupported, shared_reported, where)
    return nodes


def _expand_one(nodes: List[Node], rid: str, times: int, notes: List[str], unsupported: List[str],
                shared_reported: Set[str], where: str) -> List[Node]:
    starts = [n for n in nodes if n.type == "RepeatStart" and n.repeat_id == rid]
    ends = [n for n in nodes if n.type == "RepeatEnd" and n.repeat_id == rid]
    if len(starts) != 1 or len(ends) != 1:
        raise ValueError(f"{where}: repeat '{rid}' needs exactly one RepeatStart and one RepeatEnd, found "
                         f"{len(starts)} and {len(ends)}")
    start, end = starts[0], ends[0]
    if times < 1:
        raise ValueError(f"{where}: RepeatStart '{start.name}' repeats {times} times; use 1 or more")
    if not start.inputs or not end.inputs:
        raise ValueError(f"{where}: RepeatStart '{start.name}' and RepeatEnd '{end.name}' each need an input")
    body = [n for n in nodes if rid in n.repeat_ids and n is not start and n is not end]
    body_names = {n.name for n in body}
    outer = start.inputs[0]
    loop_back = start.inputs[1] if len(start.inputs) > 1 else end.inputs[0]
    taken = {n.name for n in nodes}

    def temp(name: str, i: int) -> str:
        return f"{name}#{i}"

    def ref(name: str, i: int) -> str:
        return temp(name, i) if name in body_names else name

    copies: List[Node] = []
    for i in range(times):
        for n in body:
            c = copy.deepcopy(n)
            c.name = temp(n.name, i)
            taken.add(c.name)
            c.repeat_ids = [r for r in n.repeat_ids if r != rid]
            c.copy_indices = n.copy_indices + [i]
            new_inputs = []
            for src in n.inputs:
                if src == start.name:
                    new_inputs.append(outer if i == 0 else ref(loop_back, i - 1))
                else:
                    new_inputs.append(ref(src, i))
            c.inputs = new_inputs
            for key, w in c.weights.items():
                marker = "{" + rid + "}"
                if marker in w.source_name:
                    w.source_name = w.source_name.replace(marker, f"[{i}]", 1)
                elif i == 0 and w.source_name not in shared_reported:
                    shared_reported.add(w.source_name)
                    notes.append(f"parameter '{w.source_name}' is shared by every repetition of '{start.name}': "
                                 f"the copies of layer '{n.base_name}' share one parameter scope")
            if n.position is not None:
                c.position = (n.position[0] + REPEAT_SHIFT * i, n.position[1])
            copies.append(c)
    last = ref(end.inputs[0], times - 1)
    out: List[Node] = []
    inserted = False
    for n in nodes:
        if n is start:
            out.extend(copies)
            inserted = True
            continue
        if n is end or n.name in body_names:
            continue
        n.inputs = [last if src == end.name else src for src in n.inputs]
        out.append(n)
    if not inserted:  # pragma: no cover - start is always in nodes
        out.extend(copies)
    names = ", ".join(n.base_name for n in body) or "no layers"
    notes.append(f"RepeatStart '{start.name}' x{times}: layers {names} expanded into {times} copies "
                 f"(RepeatStart/RepeatEnd removed)")
    return out


def finalize_names(nodes: List[Node]) -> None:
    """Turn the temporary names of expanded copies (``conv#1#0``) into ``conv_0_1`` (outer index first)."""
    taken = {n.name for n in nodes if not n.copy_indices}
    rename: Dict[str, str] = {}
    for n in nodes:
        if n.copy_indices:
            wanted = n.base_name + "".join(f"_{i}" for i in reversed(n.copy_indices))
            rename[n.name] = unique_name(wanted, taken)
    for n in nodes:
        n.name = rename.get(n.name, n.name)
        n.inputs = [rename.get(src, src) for src in n.inputs]


def remove_pass_through(nodes: List[Node], types: Sequence[str]) -> Tuple[List[Node], List[str]]:
    """Drop no-op nodes (Identity); their consumers read the node's first input. Returns (nodes, removed names)."""
    alias: Dict[str, str] = {}
    removed = []
    for n in nodes:
        if n.type in types and n.inputs:
            alias[n.name] = n.inputs[0]
            removed.append(n.name)

    def resolve(name: str) -> str:
        seen = set()
        while name in alias and name not in seen:
            seen.add(name)
            name = alias[name]
        return name

    kept = [n for n in nodes if n.name not in alias]
    for n in kept:
        n.inputs = [resolve(src) for src in n.inputs]
    return kept, removed


def to_layers(nodes: List[Node], unsupported: List[str], layout: bool) -> List[Layer]:
    """Project layers from nodes. Unknown types keep NNC's type name (and are listed in ``unsupported``);
    ``layout`` places layers without a position in a column, 80 units apart, in node order."""
    layers: List[Layer] = []
    for k, n in enumerate(nodes):
        rtype = registry_type(n.type)
        if rtype is None:
            rtype = n.type
            unsupported.append(f"layer '{n.name}' ({n.type}): nnconsole has no {n.type} layer; it is kept with "
                               "that type so the project shows where it was; replace it before training")
        initializers: Dict[str, Initializer] = {}
        lr: Dict[str, float] = {}
        for key, w in n.weights.items():
            if w.initializer is not None and key not in non_trainable(rtype):
                initializers[key] = w.initializer
            if (w.lr_multiplier is not None and float(w.lr_multiplier) != 1.0
                    and key not in non_trainable(rtype)):
                lr[key] = float(w.lr_multiplier)
        position = n.position
        if position is None and layout:
            position = (0.0, LAYOUT_STEP * k)
        layers.append(Layer(name=n.name, type=rtype, inputs=list(n.inputs), params=dict(n.params),
                            initializers=initializers, lr_multipliers=lr,
                            position=tuple(position) if position is not None else None,
                            parameter_scope=n.parameter_scope))
    return layers


def share_scopes(nodes: Sequence[Node], notes: List[str]) -> None:
    """Nodes whose weights have the same source names (NNC's ParameterScope, nnabla parameters several
    functions read) get one ``parameter_scope``: the source's scope, so the project keeps one set of weights."""
    from nnconsole.engine.layers import find_spec

    users: Dict[str, List[Node]] = {}
    for n in nodes:
        spec = find_spec(registry_type(n.type) or "")
        if spec is None or not spec.weight_scope:
            continue
        for w in n.weights.values():
            users.setdefault(w.source_name, []).append(n)
    for source, sharing in users.items():
        if len(sharing) < 2 or "/" not in source:
            continue
        scope = source.rsplit("/", 2)[0].replace("/", "_")
        fresh = [n for n in sharing if n.parameter_scope != scope]
        for n in fresh:
            n.parameter_scope = scope
        if fresh:
            notes.append(f"layers {', '.join(n.name for n in sharing)} share parameter scope '{scope}' (one set of "
                         "weights)")


def parameter_renames(nodes: Sequence[Node]) -> Tuple[Dict[str, List[str]], List[str]]:
    """Source parameter name -> project parameter names (``<layer>/<scope>/<key>``), and the names of
    parameters more than one layer uses (weight sharing, which the project model cannot express)."""
    from nnconsole.engine.layers import find_spec

    out: Dict[str, List[str]] = {}
    for n in nodes:
        rtype = registry_type(n.type)
        spec = find_spec(rtype or "")
        scope = spec.weight_scope if spec else ""
        if not scope:  # no nnabla parameters of its own (or a type nnconsole lacks)
            continue
        for key, w in n.weights.items():
            target = f"{n.parameter_scope or n.name}/{scope}/{key}"
            if target not in out.setdefault(w.source_name, []):
                out[w.source_name].append(target)
    shared = [name for name, targets in out.items() if len(targets) > 1]
    return out, shared
