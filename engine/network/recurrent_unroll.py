"""Unrolling recurrent blocks over time, as nnabla's loader expands them (``expand_loop_control`` in
nnabla/core/graph_def.py, ``NnpExpander`` in nnabla/utils/converter/nnabla/expander.py).

A block starts at its RecurrentInput layers and holds every layer fed by them (or by the block's Delays)
up to its RecurrentOutput layers. Unrolled over its T steps (the length of the RecurrentInput's input
along its axis):

- a RecurrentInput becomes, per step t, a Slice of step t and a Reshape dropping the time axis (nnabla's
  Split); its step is named ``<name>[t]``;
- every other layer of the block is copied once per step as ``<name>[t]``, reading step t of what feeds
  it; a layer outside the block that feeds it is read by every step; the copies keep the original's
  parameter scope, so the weights are shared over time under the original names (``fc/affine/W``), as
  in nnabla;
- a Delay at step 0 is its Initial input (or, unconnected, the value its generator gives: a Constant
  broadcast to its size, or the dataset variable it names); at step t > 0 it is step t - 1 of its first
  input (nnabla: an Identity);
- a RecurrentOutput becomes a Stack of its input's T steps along its axis, under its own name, so the
  layers after the block are unchanged.

``infer_recurrent`` gives the shape inference of such a network in the original layers' names (the
per-step shape of a block's layers, the costs of all steps), which the EDIT tab and ``info`` show.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from nnconsole.engine.layers.types.recurrent import step_shape
from nnconsole.engine.layers.registry import resolve_params
from nnconsole.engine.project.model import Layer, Network
from nnconsole.engine.network.recurrent_units import UNIT_TYPES, expand_units
from nnconsole.engine.network.shared_params import weight_scope_of
from nnconsole.engine.network.layer_order import topological_order

LOOP_TYPES = ("RecurrentInput", "RecurrentOutput", "Delay")
MAX_UNROLLED_LAYERS = 50_000  # steps x layers of a block: beyond it a graph is too big to check, build or train
Problem = Tuple[str, str]


def has_recurrent(network: Network) -> bool:
    """Whether the network holds loop-control layers or recurrent units to unroll."""
    return any(layer.type in LOOP_TYPES or layer.type in UNIT_TYPES for layer in network.layers)


@dataclass
class Block:
    """One recurrent block: its RecurrentInputs (the first names the block, NNC's RecurrentGroupID), its
    RecurrentOutputs and every layer that runs once per step (RecurrentInputs and Delays included)."""

    inputs: List[str]
    outputs: List[str] = field(default_factory=list)
    body: Set[str] = field(default_factory=set)

    @property
    def id(self) -> str:
        return self.inputs[0]


@dataclass
class Unrolled:
    """The unrolled network (None when the blocks cannot be unrolled), where each of its layers came from
    (unrolled name -> original name), which unrolled layer shows each original's per-step shape, the
    blocks with their lengths, and the problems found (layer, message)."""

    network: Optional[Network]
    origin: Dict[str, str] = field(default_factory=dict)
    shown_by: Dict[str, str] = field(default_factory=dict)
    blocks: List[Tuple[Block, int]] = field(default_factory=list)
    errors: List[Problem] = field(default_factory=list)


def _unique_layers(network: Network) -> Dict[str, Layer]:
    by_name: Dict[str, Layer] = {}
    for layer in network.layers:
        if layer.name:
            by_name.setdefault(layer.name, layer)
    return by_name


def find_blocks(network: Network) -> Tuple[List[Block], List[Problem]]:
    """The recurrent blocks, paired through the graph as NNC pairs them, and what is wrong with them."""
    by_name = _unique_layers(network)
    consumers: Dict[str, List[Tuple[str, int]]] = {n: [] for n in by_name}
    for layer in by_name.values():
        for pin, src in enumerate(layer.inputs):
            if src in consumers:
                consumers[src].append((layer.name, pin))
    errors: List[Problem] = []
    blocks: List[Block] = []
    for start in [n for n, layer in by_name.items() if layer.type == "RecurrentInput"]:
        block = Block(inputs=[start], body={start})
        queue = [start]
        while queue:
            for name, pin in consumers[queue.pop()]:
                kind = by_name[name].type
                if kind == "RecurrentOutput":
                    if name not in block.outputs:
                        block.outputs.append(name)
                elif kind == "RecurrentInput":
                    errors.append((name, f"RecurrentInput '{name}' is fed from inside the recurrent block of "
                                         f"'{start}'; blocks cannot be nested: close that block with a "
                                         "RecurrentOutput first"))
                elif kind == "Delay" and pin == 1:
                    errors.append((name, f"Delay '{name}' takes its initial value (second input) from inside the "
                                         f"recurrent block of '{start}'; the initial value must come from "
                                         "outside the block"))
                elif name not in block.body:
                    block.body.add(name)
                    queue.append(name)
        for other in [b for b in blocks if b.body & block.body]:  # one body fed by several RecurrentInputs
            blocks.remove(other)
            block.inputs = other.inputs + block.inputs
            block.outputs = other.outputs + [o for o in block.outputs if o not in other.outputs]
            block.body |= other.body
        blocks.append(block)
    inside = set().union(*(b.body for b in blocks)) if blocks else set()
    closing = {o for b in blocks for o in b.outputs}
    for name, layer in by_name.items():
        if layer.type == "Delay" and name not in inside:
            errors.append((name, f"Delay '{name}' is not inside a recurrent block: its first input must be "
                                 "computed, at each step, from a RecurrentInput"))
        elif layer.type == "RecurrentOutput" and name not in closing:
            errors.append((name, f"RecurrentOutput '{name}' closes no recurrent block: feed it from a layer "
                                 "computed from a RecurrentInput"))
    for block in blocks:
        for name in sorted(block.body):
            for src in by_name[name].inputs:
                if src in block.outputs:
                    errors.append((name, f"layer '{name}' runs at every step of the recurrent block of "
                                         f"'{block.id}' but reads its RecurrentOutput '{src}' (the whole "
                                         "sequence, known only after the last step); use a Delay instead"))
    return blocks, errors


def _ancestors(by_name: Dict[str, Layer], names: List[str]) -> Set[str]:
    seen: Set[str] = set()
    stack = [n for n in names if n in by_name]
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(s for s in by_name[n].inputs if s in by_name and s not in seen)
    return seen


def _input_shapes(work: Network, block: Block, infer_plain: Callable[[Network], Any]
                  ) -> Tuple[Dict[str, tuple], List[Problem]]:
    """The shape of each RecurrentInput's input (what comes before the block is plain by now)."""
    by_name = _unique_layers(work)
    sources = [by_name[r].inputs[0] for r in block.inputs if len(by_name[r].inputs) == 1]
    before = _ancestors(by_name, sources)
    info = infer_plain(Network(layers=[layer for layer in work.layers if layer.name in before]))
    shapes: Dict[str, tuple] = {}
    errors: List[Problem] = []
    for r in block.inputs:
        layer = by_name[r]
        if len(layer.inputs) != 1:
            errors.append((r, f"RecurrentInput expects 1 input, got {len(layer.inputs)}"))
            continue
        li = info.layers.get(layer.inputs[0])
        if li is None or li.out_shape is None:
            errors.append((r, f"RecurrentInput '{r}': the shape of its input '{layer.inputs[0]}' is unknown "
                              "(fix the problem reported there), so the number of time steps is too"))
            continue
        shapes[r] = tuple(li.out_shape)
    return shapes, errors


class _Unroller:
    """Emits the per-step copies of one block into a list of layers."""

    def __init__(self, by_name: Dict[str, Layer], block: Block, length: int, out: Unrolled):
        self.by_name, self.block, self.length, self.out = by_name, block, length, out
        self.initial: Dict[str, str] = {}
        self.layers: List[Layer] = []

    def step(self, src: str, t: int) -> str:
        """The unrolled name of ``src``'s value at step t."""
        if src not in self.block.body:
            return src
        layer = self.by_name[src]
        if layer.type == "Delay":
            return self.initial[src] if t == 0 else self.step(layer.inputs[0], t - 1)
        return f"{src}[{t}]"

    def add(self, layer: Layer, origin: str) -> None:
        self.layers.append(layer)
        self.out.origin[layer.name] = origin

    def delay_initial(self, name: str, shapes_known: Dict[str, tuple]) -> Optional[str]:
        layer = self.by_name[name]
        params = resolve_params("Delay", layer.params)
        if len(layer.inputs) > 1:
            return layer.inputs[1]
        size = [int(s) for s in params["size"]]
        generator = params["initial_generator"]
        if not size:
            self.out.errors.append((name, f"Delay '{name}' has no Initial input, so give its size (the shape of "
                                          "the value it delays, e.g. [16]) for the generated initial value"))
            return None
        if generator == "None":
            self.add(Layer(f"{name}[0]", "Input", params={"shape": size, "variable": params["initial_dataset"]}),
                     name)
        elif generator == "Constant":
            value = f"{float(params['initial_multiplier']):g}"
            self.add(Layer(f"{name}_initial", "Constant", params={"value": value, "value_type": "Float"}), name)
            src = f"{name}_initial"
            if len(size) > 1:
                self.add(Layer(f"{name}_initial_shape", "Reshape", [src], {"shape": [1] * len(size)}), name)
                src = f"{name}_initial_shape"
            self.add(Layer(f"{name}[0]", "Broadcast", [src], {"shape": size}), name)
        else:  # Normal, Uniform: an Input generating the first step's value, as NNC's Initial.Generator does
            self.add(Layer(f"{name}[0]", "Input", params={
                "shape": size, "variable": f"{name}_initial", "generator": generator,
                "generator_multiplier": float(params["initial_multiplier"])}), name)
        return f"{name}[0]"

    def emit(self, network: Network, shapes: Dict[str, tuple]) -> bool:
        block, by_name = self.block, self.by_name
        ok = True
        for name in [n for n in by_name if n in block.body and by_name[n].type == "Delay"]:
            initial = self.delay_initial(name, shapes)
            ok = ok and initial is not None
            self.initial[name] = initial or ""
        if not ok:
            return False
        for t in range(self.length):
            for layer in network.layers:
                name = layer.name
                if name not in block.body or by_name.get(name) is not layer or layer.type == "Delay":
                    continue
                if layer.type == "RecurrentInput":
                    axis = int(resolve_params(layer.type, layer.params)["axis"])
                    shape = shapes[name]
                    self.add(Layer(f"{name}[{t}]_slice", "Slice", [layer.inputs[0]],
                                   {"start": [0] * axis + [t], "stop": list(shape[:axis]) + [t + 1]}), name)
                    self.add(Layer(f"{name}[{t}]", "Reshape", [f"{name}[{t}]_slice"],
                                   {"shape": list(step_shape(shape, axis))}), name)
                    continue
                twin = copy.deepcopy(layer)
                twin.name = f"{name}[{t}]"
                twin.inputs = [self.step(src, t) for src in layer.inputs]
                twin.parameter_scope = weight_scope_of(layer)  # one set of weights for every step
                self.add(twin, name)
        for name in block.outputs:
            layer = by_name[name]
            axis = int(resolve_params(layer.type, layer.params)["axis"])
            self.add(Layer(name, "Stack", [self.step(layer.inputs[0], t) for t in range(self.length)],
                           {"axis": axis}, position=layer.position), name)
        return True


def unroll_recurrent(network: Network, infer_plain: Callable[[Network], Any]) -> Unrolled:
    """Unroll every recurrent block of ``network`` (not modified); ``infer_plain`` is shape inference for a
    network without loop control (it gives each block's length)."""
    out = Unrolled(network=None)
    network, unit_of = expand_units(network)  # NNC's LSTM unit: the recurrent layers it is made of
    blocks, errors = find_blocks(network)
    out.errors = [(unit_of.get(name, name), message) for name, message in errors]
    if out.errors:
        return out
    work = Network(layers=[copy.deepcopy(layer) for layer in network.layers])
    for layer in work.layers:
        out.origin.setdefault(layer.name, layer.name)
    pending = list(blocks)
    while pending:
        by_name = _unique_layers(work)
        loop_names = {n for b in pending for n in b.body | set(b.outputs)}
        ready = [b for b in pending
                 if not _ancestors(by_name, [by_name[r].inputs[0] for r in b.inputs if by_name[r].inputs])
                 & loop_names]
        if not ready:  # pragma: no cover - find_blocks leaves no block fed by an unrolled one's inside
            out.errors.append((pending[0].id, "recurrent blocks feed each other in a loop; break the loop"))
            return out
        block = ready[0]
        pending.remove(block)
        shapes, errors = _input_shapes(work, block, infer_plain)
        lengths = {}
        for r, shape in shapes.items():
            axis = int(resolve_params("RecurrentInput", by_name[r].params)["axis"])
            try:
                step_shape(shape, axis)
            except ValueError as exc:
                errors.append((r, str(exc)))
                continue
            lengths[r] = shape[axis]
        if len(set(lengths.values())) > 1:
            text = ", ".join(f"'{r}' {n}" for r, n in lengths.items())
            errors.append((block.id, f"the RecurrentInputs of one recurrent block cut sequences of different "
                                     f"lengths ({text}); give them inputs of one length"))
        if errors:
            out.errors.extend(errors)
            return out
        length = next(iter(lengths.values()))
        if length * len(block.body) > MAX_UNROLLED_LAYERS:
            out.errors.append((block.id, f"the recurrent block of '{block.id}' has {length} steps of {len(block.body)} "
                                         f"layers, {length * len(block.body):,} layers unrolled (at most "
                                         f"{MAX_UNROLLED_LAYERS:,}); shorten the sequences or the block"))
            return out
        unroller = _Unroller(by_name, block, length, out)
        if not unroller.emit(work, shapes):
            return out
        taken = {layer.name for layer in work.layers if layer.name not in block.body and
                 layer.name not in block.outputs}
        clash = [layer.name for layer in unroller.layers if layer.name in taken]
        if clash:
            out.errors.append((clash[0], f"layer name '{clash[0]}' is also the name of step of the recurrent "
                                         f"block of '{block.id}' when unrolled; rename the layer"))
            return out
        kept = [layer for layer in work.layers if layer.name not in block.body and layer.name not in block.outputs]
        position = next(i for i, layer in enumerate(work.layers) if layer.name in block.body)
        before = sum(1 for layer in work.layers[:position] if layer in kept)
        work = Network(layers=kept[:before] + unroller.layers + kept[before:])
        for name in block.body:
            kind = by_name[name].type
            out.shown_by[name] = unroller.initial[name] if kind == "Delay" else f"{name}[0]"
        out.blocks.append((block, length))
    out.network = work
    out.origin = {name: unit_of.get(origin, origin) for name, origin in out.origin.items()}
    for name, shown in list(out.shown_by.items()):
        if name in unit_of:  # a unit is shown by its RecurrentOutput, which has the unit's name
            out.shown_by.pop(name)
    return out


def infer_recurrent(network: Network, infer_plain: Callable[[Network], Any]) -> Any:
    """Shape inference of a network with recurrent blocks, in its own layer names: a block's layers show
    their per-step shapes, costs count every step, weights shared over time count once."""
    result = unroll_recurrent(network, infer_plain)
    loop_names = {layer.name for layer in network.layers if layer.type in LOOP_TYPES}
    if result.network is None:  # report the block problems on the network with its loops cut
        cut = Network(layers=[dataclasses.replace(layer, inputs=[]) if layer.type == "Delay" else layer
                              for layer in network.layers])
        info = infer_plain(cut)
        info.errors = [(n, m) for n, m in info.errors if n not in loop_names] + result.errors
        for name, message in result.errors:
            if name in info.layers:
                info.layers[name].error = message
                info.layers[name].out_shape = None
        return info
    plain = infer_plain(result.network)
    return _fold(network, result, plain)


def _file_order_without_loops(network: Network) -> List[str]:
    """Data-flow order of the original layers with each Delay's loop-back input cut (ties keep file order),
    the order a file lists them in."""

    cut = Network(layers=[dataclasses.replace(layer, inputs=layer.inputs[1:]) if layer.type == "Delay" else layer
                          for layer in network.layers])
    order, _ = topological_order(cut)
    names = list(_unique_layers(network))
    return order + [n for n in names if n not in order]


def _fold(network: Network, result: Unrolled, plain: Any) -> Any:
    """The unrolled network's inference under the original layer names."""
    info = type(plain)()
    macs: Dict[str, int] = {}
    params: Dict[str, int] = {}  # shared over time: only the first step's copy counts its weights
    stored: Dict[str, int] = {}
    for name in plain.order:
        origin = result.origin.get(name, name)
        macs[origin] = macs.get(origin, 0) + plain.layers[name].macs
        params[origin] = params.get(origin, 0) + plain.layers[name].n_params
        stored[origin] = stored.get(origin, 0) + plain.layers[name].n_stored
    originals = _unique_layers(network)
    shown = {n: result.shown_by.get(n, n) for n in originals}
    for name in _file_order_without_loops(network):
        li = plain.layers.get(shown[name])
        if li is None:
            continue
        li = dataclasses.replace(li, name=name, type=originals[name].type, macs=macs.get(name, 0),
                                 n_params=params.get(name, 0), n_stored=stored.get(name, 0))
        kind = originals[name].type
        if kind in UNIT_TYPES:
            slice_info = plain.layers.get(f"{name}_RecurrentInput[0]_slice")
            li.in_shapes = list(slice_info.in_shapes) if slice_info else []
            li.weight_shapes = {f"{n[len(name) + 1:-3]}.{k}": s
                                for n, i in plain.layers.items() if result.origin.get(n) == name and n.endswith("[0]")
                                for k, s in i.weight_shapes.items()}
        elif kind == "RecurrentInput":
            slice_info = plain.layers.get(f"{name}[0]_slice")
            li.in_shapes = list(slice_info.in_shapes) if slice_info else []
        elif kind == "Delay":
            li.in_shapes, li.weight_shapes, li.n_params, li.n_stored = [li.out_shape] if li.out_shape else [], {}, 0, 0
        elif kind == "RecurrentOutput":
            li.in_shapes = li.in_shapes[:1]  # one input, seen once per step
        info.layers[name] = li
        info.order.append(name)
    info.total_params, info.total_stored, info.total_macs = plain.total_params, plain.total_stored, plain.total_macs
    info.input_variables = dict(plain.input_variables)
    info.generated_variables = dict(plain.generated_variables)
    seen: Set[Problem] = set()
    for source, target in ((plain.errors, info.errors), (plain.warnings, info.warnings)):
        for name, message in source:
            item = (result.origin.get(name, name), message)
            if item not in seen:
                seen.add(item)
                target.append(item)
    for name in plain.loss_layers:
        origin = result.origin.get(name, name)
        if origin not in info.loss_layers:
            info.loss_layers.append(origin)
    return info
