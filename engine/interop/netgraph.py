"""The network as importers read it, before it becomes project layers: nodes in NNC terms,
RepeatStart/RepeatEnd blocks kept, and the conversion to ``nnconsole.engine.project.model.Layer``.

Both the ``.nntxt`` and the ``.sdcproj`` importers produce a list of ``Node``: one per NNC layer
(function), inputs by node name in pin order, parameters already in the registry's snake_case
spelling, weights with the name they had in the source file (so a ``.nnp``'s parameters can be
renamed to the project's). ``keep_repeat_blocks`` checks RepeatStart/RepeatEnd blocks and keeps them as
layers (the engine unrolls them, ``nnconsole.engine.network.repeat_blocks``); ``parameter_renames`` maps a repeated
layer's weights as nnabla names them once expanded (``Conv{RepeatStart}/conv/W`` is ``Conv[0]/conv/W``,
``Conv[1]/...``) to the project's parameter names, which are the same.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import itertools
from nnconsole.engine.project.model import Initializer, Layer

from nnconsole.engine.interop.mapping import non_trainable, registry_type
from nnconsole.engine.network.repeat_blocks import enclosing_blocks, find_blocks
from nnconsole.engine.layers import find_spec

LAYOUT_STEP = 80.0  # vertical distance between layers laid out automatically (same as the templates)


@dataclass
class WeightInfo:
    """One weight of a node: its name in the source file, and its initializer / LR multiplier if given."""

    source_name: str
    initializer: Optional[Initializer] = None
    lr_multiplier: Optional[float] = None


@dataclass
class Node:
    """One NNC layer. ``type`` is NNC's type name; ``repeat_ids`` are the repeats enclosing it as a file
    names them (outermost first; a RepeatStart lists its own id too, as nnabla does). ``repeat_id`` is the
    file's id of the repeat a RepeatStart opens or a RepeatEnd closes. A RepeatStart's inputs may be
    [outer input, loop-back] as nnabla writes them (``keep_repeat_blocks`` keeps the first)."""

    name: str
    type: str
    inputs: List[str] = field(default_factory=list)
    params: Dict[str, Any] = field(default_factory=dict)
    weights: Dict[str, WeightInfo] = field(default_factory=dict)
    repeat_ids: List[str] = field(default_factory=list)
    position: Optional[Tuple[float, float]] = None
    repeat_id: str = ""
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


def keep_repeat_blocks(nodes: List[Node], times: Dict[str, int], marked_weights: bool, notes: List[str],
                       where: str) -> None:
    """Keep RepeatStart/RepeatEnd blocks as project layers (the engine unrolls them, see repeat_blocks).

    A RepeatStart reads only its outer input (files write the loop-back as a second one) and gets its
    ``times`` (``times`` maps the file's repeat id, a RepeatStart's ``repeat_id``, to its count); a RepeatEnd
    has no parameters. With ``marked_weights`` (nnabla files name a per-repetition weight
    ``conv{RepeatStart}/conv/W``) a repeated layer whose weights lack a block's mark reads one set of
    weights in every repetition: it keeps its source scope as ``parameter_scope``. Raises ValueError naming
    ``where`` and the layer when a block is malformed."""

    for n in nodes:
        if n.type == "RepeatStart":
            n.inputs = n.inputs[:1]
            if n.repeat_id in times:
                n.params = {"times": int(times[n.repeat_id])}
        elif n.type == "RepeatEnd":
            n.params = {}
    blocks, problems = find_blocks(nodes)
    if problems:
        name, message = problems[0]
        raise ValueError(f"{where}: layer '{name}': {message}")
    by_name = {n.name: n for n in nodes}
    block_of = enclosing_blocks(blocks)
    for b in blocks:
        names = ", ".join(b.body) or "no layers"
        count = by_name[b.start].params.get("times", b.times) if b.start in by_name else b.times  # or a name 'n'
        notes.append(f"repeat block '{b.start}' x{count} ({names}) kept as a block: the engine unrolls it, "
                     "each repetition with its own weights")
    for name, around in block_of.items():
        n = by_name[name]
        marks = ["{" + (by_name[b.start].repeat_id or b.start) + "}" for b in around]
        if not marked_weights:  # NNC names them 'conv{RepeatStart}/conv/W': one set per repetition
            for w in n.weights.values():
                scope, _, rest = w.source_name.partition("/")
                w.source_name = f"{scope}{''.join(marks)}/{rest}"
            continue
        sources = [w.source_name for w in n.weights.values()]
        if sources and not n.parameter_scope and not any(m in src for src in sources for m in marks):
            n.parameter_scope = sources[0].rsplit("/", 2)[0].replace("/", "_")
            notes.append(f"layer '{name}' reads the same weights in every repetition of its repeat block: "
                         f"they keep one parameter scope '{n.parameter_scope}'")


def repeated_names(nodes: Sequence[Node]) -> Dict[str, List[Tuple[Dict[str, int], str]]]:
    """Node name -> one (file repeat id -> index, name suffix '[i][j]') per repetition once unrolled
    (outermost block first); nodes outside blocks are left out."""


    if not any(n.type in ("RepeatStart", "RepeatEnd") for n in nodes):
        return {}
    blocks, _ = find_blocks(list(nodes))
    by_name = {n.name: n for n in nodes}
    out: Dict[str, List[Tuple[Dict[str, int], str]]] = {}
    for name, around in enclosing_blocks(blocks).items():
        ids = [by_name[b.start].repeat_id or b.start for b in around]
        for combo in itertools.product(*[range(b.times) for b in around]):
            out.setdefault(name, []).append((dict(zip(ids, combo)), "".join(f"[{i}]" for i in combo)))
    return out


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

    out: Dict[str, List[str]] = {}
    repeats = repeated_names(nodes)
    for n in nodes:
        rtype = registry_type(n.type)
        spec = find_spec(rtype or "")
        scope = spec.weight_scope if spec else ""
        if not scope:  # no nnabla parameters of its own (or a type nnconsole lacks)
            continue
        # a repeated layer's weights: nnabla's 'conv{R}/conv/W' is 'conv[i]/conv/W' in repetition i
        copies = [({}, "")] if n.parameter_scope or n.name not in repeats else repeats[n.name]
        for key, w in n.weights.items():
            for index, suffix in copies:
                source = w.source_name
                for rid, i in index.items():
                    source = source.replace("{" + rid + "}", f"[{i}]")
                target = f"{n.parameter_scope or n.name + suffix}/{scope}/{key}"
                if target not in out.setdefault(source, []):
                    out[source].append(target)
    shared = [name for name, targets in out.items() if len(targets) > 1]
    return out, shared
