"""Repeat blocks (NNC's RepeatStart/RepeatEnd): which layers each block holds, and unrolling them.

A project keeps a block as NNC shows it: a ``RepeatStart`` (with ``times``), the layers of one
repetition, and a ``RepeatEnd``. Names are free: a RepeatEnd closes the RepeatStart reached by walking
back along its input path, counting the RepeatEnds met on the way so nested blocks pair innermost first
(NNC's editor pairs them the same way; its ``ID`` properties are computed, not written).

``find_blocks`` pairs them and lists each block's layers; ``unroll`` turns a network with blocks into
plain layers the way nnabla's ``NnpExpander`` does, outermost block first: repetition ``i`` of a layer
``conv`` is ``conv[i]`` (nested: ``conv[i][j]``, the outer index first), so its weights are
``conv[i]/conv/W``, the names nnabla gives ``conv{RepeatStart}/conv/W`` when it expands a file (a layer
with a ``parameter_scope`` keeps it: one set of weights for every repetition, as a name without the
``{RepeatStart}`` mark is in nnabla). The
first repetition reads the RepeatStart's input, each next one the previous one's output (the layer
feeding the RepeatEnd), and the RepeatEnd's consumers read the last one. ``check_blocks`` is the
shape-inference hook: pairing problems become layer errors, a block must give back the shape it
receives, and a repeated layer's parameters and multiply-adds count once per repetition.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from nnconsole.engine.network.arguments import with_default_arguments
from nnconsole.engine.project.model import Network

START, END = "RepeatStart", "RepeatEnd"
REPEAT_SHIFT = 240.0  # horizontal offset of each further repetition in an unrolled layout
DEFAULT_TIMES = 3  # NNC's default Times
MAX_EXPANDED_LAYERS = 50_000  # layers a network may have once its blocks and units are expanded (expansion_size)


@dataclass
class RepeatBlock:
    """One block: its RepeatStart and RepeatEnd, the layers between (file order) and its count.
    ``parent`` is the RepeatStart of the block around this one ('' at the top level)."""

    start: str
    end: str
    times: int
    body: List[str] = field(default_factory=list)
    parent: str = ""


def is_repeat_type(type_name: str) -> bool:
    return type_name in (START, END)


def has_repeats(items: Iterable[Any]) -> bool:
    return any(is_repeat_type(getattr(n, "type", "")) for n in items)


def times_of(item: Any) -> int:
    """A RepeatStart's repeat count (its ``times`` parameter; NNC's default when not set)."""
    params = getattr(item, "params", None)
    value = params.get("times", DEFAULT_TIMES) if isinstance(params, dict) else DEFAULT_TIMES
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):  # text, or a float no integer holds (inf)
        return 0


def times_named(item: Any) -> bool:
    """The repeat count is the name of an Argument of the network ('n' or NNC's '*n'), not yet its value."""
    params = getattr(item, "params", None)
    value = params.get("times") if isinstance(params, dict) else None
    return isinstance(value, str) and value.strip().lstrip("*").strip()[:1].isalpha()


def _closing_starts(end: Any, by_name: Dict[str, Any]) -> Set[str]:
    """The RepeatStarts a RepeatEnd can close: walking back along every input path, a RepeatEnd met on
    the way opens one more level (its own block is skipped), a RepeatStart closes one; the first
    RepeatStart met at level 0 on a path is the one this RepeatEnd closes."""
    found: Set[str] = set()
    seen: Set[Tuple[str, int]] = set()
    most = sum(1 for n in by_name.values() if n.type == END)  # deeper is a cycle through RepeatEnds
    stack = [(src, 0) for src in list(end.inputs)[:1]]
    while stack:
        name, depth = stack.pop()
        node = by_name.get(name)
        if node is None or (name, depth) in seen or depth > most:
            continue
        seen.add((name, depth))
        if node.type == START:
            if depth == 0:
                found.add(name)
            else:
                stack.extend((src, depth - 1) for src in list(node.inputs)[:1])
        elif node.type == END:
            stack.extend((src, depth + 1) for src in list(node.inputs)[:1])
        else:
            stack.extend((src, depth) for src in node.inputs)
    return found


def _reach(start: str, step) -> Set[str]:
    seen: Set[str] = set()
    stack = [start]
    while stack:
        for nxt in step(stack.pop()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def find_blocks(items: Sequence[Any]) -> Tuple[List[RepeatBlock], List[Tuple[str, str]]]:
    """The blocks of a network (outermost first, then file order) and its problems as (layer, message).

    ``items`` are layers or import nodes: anything with ``name``, ``type``, ``inputs`` (and ``params``
    with ``times`` for RepeatStarts). A RepeatStart's inputs after the first (a loop-back some files
    write) are not followed."""
    by_name = {n.name: n for n in items}
    order = {n.name: i for i, n in enumerate(items)}
    problems: List[Tuple[str, str]] = []
    closed_by: Dict[str, List[str]] = {}
    for end in [n for n in items if n.type == END]:
        if not end.inputs:
            problems.append((end.name, "RepeatEnd needs an input: link the last layer of the repeated block to it"))
            continue
        starts = sorted(_closing_starts(end, by_name), key=order.get)
        if not starts:
            problems.append((end.name, "no RepeatStart before this RepeatEnd: walking back along its inputs meets "
                                       "none that another RepeatEnd does not already close; add a RepeatStart "
                                       "before the layers to repeat"))
        elif len(starts) > 1:
            problems.append((end.name, f"its input paths lead back to several RepeatStarts ({', '.join(starts)}); "
                                       "a repeat block has one entry: join the paths inside the block"))
        else:
            closed_by.setdefault(starts[0], []).append(end.name)
    consumers: Dict[str, List[str]] = {n.name: [] for n in items}
    for n in items:
        for src in (list(n.inputs)[:1] if n.type == START else n.inputs):
            consumers.setdefault(src, []).append(n.name)
    blocks: List[RepeatBlock] = []
    for start in [n for n in items if n.type == START]:
        ends = closed_by.get(start.name, [])
        if not ends:
            problems.append((start.name, "this RepeatStart is never closed: add a RepeatEnd after the last "
                                         "layer to repeat"))
            continue
        if len(ends) > 1:
            problems.append((start.name, f"closed by several RepeatEnds ({', '.join(ends)}); a repeat block has "
                                         "one exit: join the paths before one RepeatEnd"))
            continue
        if times_of(start) < 1 and not times_named(start):  # a name: its Argument's value, checked on substitution
            problems.append((start.name, f"times is {times_of(start)}; a block repeats 1 or more times"))
            continue
        end = by_name[ends[0]]
        down = _reach(start.name, lambda x: consumers.get(x, []))
        up = _reach(end.name, lambda x: (list(by_name[x].inputs)[:1] if by_name[x].type == START
                                         else by_name[x].inputs) if x in by_name else [])
        body = sorted((down & up) - {start.name, end.name}, key=order.get)
        blocks.append(RepeatBlock(start.name, end.name, times_of(start), body))
    problems += _nesting(blocks, consumers)
    return blocks, problems


def _nesting(blocks: List[RepeatBlock], consumers: Dict[str, List[str]]) -> List[Tuple[str, str]]:
    """Set each block's parent, sort outermost first; blocks that overlap without nesting, and layers
    whose output leaves a block other than through its RepeatEnd, are problems."""
    problems: List[Tuple[str, str]] = []
    members = {b.start: set(b.body) | {b.start, b.end} for b in blocks}
    for b in blocks:
        around = [o for o in blocks if o is not b and b.start in o.body]
        for o in around:
            if not members[b.start] <= set(o.body):
                problems.append((b.start, f"this block overlaps the block of '{o.start}' without lying inside it; "
                                          "nest blocks fully or keep them apart"))
        if around:
            b.parent = min(around, key=lambda o: len(o.body)).start
        for name in [b.start] + b.body:
            outside = [c for c in consumers.get(name, []) if c not in members[b.start]]
            if outside:
                problems.append((name, f"inside the repeat block of '{b.start}' but feeds '{outside[0]}' outside "
                                       f"it; only the RepeatEnd '{b.end}' may leave a block"))
    depth = {b.start: 0 for b in blocks}
    for b in blocks:
        p, seen = b.parent, set()
        while p and p not in seen:
            seen.add(p)
            depth[b.start] += 1
            p = next((o.parent for o in blocks if o.start == p), "")
    blocks.sort(key=lambda b: depth[b.start])
    return problems


def repetitions(block_of: Dict[str, List[RepeatBlock]], name: str) -> int:
    """How many times a layer runs once its enclosing blocks are unrolled."""
    n = 1
    for b in block_of.get(name, []):
        n *= b.times
    return n


def enclosing_blocks(blocks: Sequence[RepeatBlock]) -> Dict[str, List[RepeatBlock]]:
    """Layer name -> the blocks whose body holds it (outermost first)."""
    out: Dict[str, List[RepeatBlock]] = {}
    for b in blocks:
        for name in b.body:
            out.setdefault(name, []).append(b)
    return out


# ------------------------------------------------------------------------------------------ unrolling
def _copy_name(name: str, i: int) -> str:
    return f"{name}[{i}]"


def _unroll_one(layers: List[Any], block: RepeatBlock) -> List[Any]:
    by_name = {layer.name: layer for layer in layers}
    start, end = by_name[block.start], by_name[block.end]
    body = set(block.body)
    outer = start.inputs[0]
    last_inside = end.inputs[0]

    def ref(src: str, i: int) -> str:
        if src == start.name:
            return outer if i == 0 else ref(last_inside, i - 1)
        return _copy_name(src, i) if src in body else src

    copies = []
    for i in range(block.times):
        for name in block.body:
            c = copy.deepcopy(by_name[name])
            c.name = _copy_name(name, i)
            c.inputs = [ref(src, i) for src in c.inputs]  # a parameter_scope stays: every repetition shares it
            if getattr(c, "scope_given", True) is False:  # a unit's layer scoped by its names: one set per repetition
                c.parameter_scope = _copy_name(c.parameter_scope, i)
            if getattr(c, "position", None) is not None:
                c.position = (c.position[0] + REPEAT_SHIFT * i, c.position[1])
            copies.append(c)
    taken = {layer.name for layer in layers if layer.name not in body}
    clash = [c.name for c in copies if c.name in taken]
    if clash:
        raise ValueError(f"unrolling the repeat block of '{start.name}' makes a layer '{clash[0]}', a name another "
                         "layer already has; rename that layer")
    last = ref(last_inside, block.times - 1)
    out: List[Any] = []
    for layer in layers:
        if layer is start:
            out.extend(copies)
        elif layer is not end and layer.name not in body:
            if end.name in layer.inputs:
                layer = copy.copy(layer)
                layer.inputs = [last if src == end.name else src for src in layer.inputs]
            out.append(layer)
    return out


def unroll_layers(layers: Sequence[Any]) -> List[Any]:
    """The layers with every repeat block unrolled (see the module docstring); the input is not
    modified. Raises ValueError naming the layer when a block is malformed."""
    out = list(layers)
    blocks, problems = find_blocks(out) if has_repeats(out) else ([], [])
    if not problems and blocks:  # counted before the first copy: times 10^9 once unrolled until memory ran out
        block_of = enclosing_blocks(blocks)
        total = sum(repetitions(block_of, layer.name) for layer in out if not is_repeat_type(layer.type))
        if total > MAX_EXPANDED_LAYERS:
            biggest = max(blocks, key=lambda b: b.times)
            raise ValueError(f"layer '{biggest.start}': unrolling the repeat blocks makes {total:,} layers, more than "
                             f"the {MAX_EXPANDED_LAYERS:,} nnconsole builds; lower the repeat counts")
    while has_repeats(out):
        blocks, problems = find_blocks(out)
        if problems:
            name, message = problems[0]
            raise ValueError(f"layer '{name}': {message}")
        out = _unroll_one(out, blocks[0])
    return out


def unroll(network: Any) -> Any:
    """A network whose repeat blocks are unrolled (the same object when it has none, or when a block is
    malformed: shape inference reports that on the block's layers)."""
    if not has_repeats(network.layers) or find_blocks(network.layers)[1]:
        return network

    return Network(layers=unroll_layers(network.layers))


# ------------------------------------------------------------------------------------------ inference
def check_blocks(network: Any, info: Any) -> None:
    """The shape-inference hook (``shapes.infer_network``): pairing problems become errors of their layers,
    a block must give back the shape it receives (its output feeds its next repetition), and each repeated
    layer counts its parameters and multiply-adds once per repetition."""
    if not has_repeats(network.layers):
        return
    blocks, problems = find_blocks(network.layers)
    for name, message in problems:
        _fail(info, name, message)
    for b in blocks:
        start, end = info.layers.get(b.start), info.layers.get(b.end)
        if start is None or end is None or not start.in_shapes or not end.in_shapes:
            continue
        if tuple(start.in_shapes[0]) != tuple(end.in_shapes[0]):
            _fail(info, b.end, f"the block from '{b.start}' gives back shape {tuple(end.in_shapes[0])} but receives "
                               f"{tuple(start.in_shapes[0])}; each repetition feeds the next, so the layers inside "
                               "must keep the shape")
    block_of = enclosing_blocks(blocks)
    for layer in network.layers:  # 'conv[1]' is the name unrolling gives the second repetition of 'conv'
        base = layer.name.split("[", 1)[0]
        if "[" in layer.name and base in block_of:
            _fail(info, layer.name, f"this name is taken by a repetition of '{base}' once its repeat block is "
                                    "unrolled; rename this layer")
    scoped = {layer.name for layer in network.layers if (getattr(layer, "parameter_scope", "") or "").strip()
              and getattr(layer, "scope_given", True)}  # a unit's layer scoped by its names: a set per repetition
    for name, li in info.layers.items():
        n = repetitions(block_of, name)
        if n > 1 and not li.error:
            if name not in scoped:  # a named parameter scope is one set of weights for every repetition
                info.total_params += li.n_params * (n - 1)
                info.total_stored += li.n_stored * (n - 1)
                li.n_params *= n
                li.n_stored *= n
            info.total_macs += li.macs * (n - 1)
            li.macs *= n


def _fail(info: Any, name: str, message: str) -> None:
    li = info.layers.get(name)
    if li is not None:
        li.error = f"{li.error}; {message}" if li.error else message
        li.out_shape = None
    info.errors.append((name, message))


def block_totals(network: Any, info: Any) -> Dict[str, Tuple[int, int, Optional[Tuple[int, ...]]]]:
    """RepeatStart name -> (times, learned parameters of every repetition, output shape): what the EDIT tab
    shows on a block. Parameter counts come from ``info`` (already multiplied by ``check_blocks``); a count given
    by an Argument's name is that Argument's own value."""
    blocks, _ = find_blocks(with_default_arguments(network).layers)
    out: Dict[str, Tuple[int, int, Optional[Tuple[int, ...]]]] = {}
    for b in blocks:
        params = sum(info.layers[n].n_params for n in b.body if n in info.layers)
        end = info.layers.get(b.end)
        out[b.start] = (b.times, params, None if end is None else end.out_shape)
    return out
