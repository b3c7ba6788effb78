"""Recurrent blocks in nnabla files: written and read as NNC writes them, so that ``nnabla_cli train`` (its
loader expands them, nnabla/core/graph_def.py ``expand_loop_control``) and nnconsole read the same network.

In an .nntxt a recurrent block is a ``repeat_info {id, times}`` entry (the id is the block's first
RecurrentInput, NNC's RecurrentGroupID; times its number of steps), ``repeat_id: id`` on every function and
variable of the block (RecurrentOutput excluded), and ``recurrent_param`` on RecurrentInput and
RecurrentOutput (``axis`` counting the batch axis, RecurrentOutput's ``length``) and on Delay (two inputs:
the value to delay and the initial value, a variable that the optimizer, monitors and executor fill with a
``generator_variable`` when the project generates it).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

from nnconsole.engine.layers import resolve_params
from nnconsole.engine.network.recurrent_unroll import LOOP_TYPES, find_blocks
from nnconsole.engine.layers.nntxt_codec import set_shape
from nnconsole.engine.network.recurrent_units import expand_units, has_units
from nnconsole.engine.network.shapes import infer_network

INITIAL_SUFFIX = "_initial"  # the variable holding a generated Delay initial value


def _lengths(network: Any, info: Any) -> Dict[str, int]:
    """Each block id -> its number of steps (from the inferred input shape of its first RecurrentInput)."""
    blocks, _ = find_blocks(network)
    out = {}
    for block in blocks:
        li = info.layers[block.id]
        axis = int(resolve_params("RecurrentInput", network.layer(block.id).params)["axis"])
        out[block.id] = int(li.in_shapes[0][axis])
    return out


def annotate_recurrent(proto: Any, network: Any, info: Any, unsupported: List[str]) -> None:
    """Mark the recurrent blocks of every written network of ``proto`` (see the module docstring)."""
    if not any(layer.type in LOOP_TYPES for layer in network.layers):
        return
    blocks, _ = find_blocks(network)
    lengths = _lengths(network, info)
    layers = {layer.name: layer for layer in network.layers}
    generated: Dict[str, Dict[str, Tuple[str, float]]] = {}  # network -> initial variable -> (generator, multiplier)
    for net in proto.network:
        names = {f.name for f in net.function}
        for block in [b for b in blocks if b.id in names]:
            ri = net.repeat_info.add()
            ri.id, ri.times = block.id, lengths[block.id]
            for f in net.function:
                if f.name in block.body:
                    f.repeat_id.append(block.id)
                if f.name not in block.body and f.name not in block.outputs:
                    continue
                p = resolve_params(f.type, layers[f.name].params) if f.type in LOOP_TYPES else {}
                if f.type in ("RecurrentInput", "RecurrentOutput"):
                    f.recurrent_param.repeat_id = block.id
                    f.recurrent_param.axis = int(p["axis"]) + 1  # nnabla counts the batch axis
                    if f.type == "RecurrentOutput":
                        f.recurrent_param.length = lengths[block.id]
                elif f.type == "Delay":
                    f.recurrent_param.repeat_id = block.id
                    if len(f.input) == 1:
                        _generated_initial(net, f, p, generated, unsupported)
            for v in net.variable:
                if v.name in block.body and v.type != "Parameter":
                    v.repeat_id.append(block.id)
    for group in (proto.optimizer, proto.monitor, proto.executor):
        for item in group:
            for variable, (kind, value) in generated.get(item.network_name, {}).items():
                g = item.generator_variable.add()
                g.variable_name, g.type, g.multiplier = variable, kind, value


def _generated_initial(net: Any, f: Any, p: Dict[str, Any], generated: Dict[str, Dict[str, Tuple[str, float]]],
                       unsupported: List[str]) -> None:
    """A Delay without an Initial input reads a variable filled by its generator (Constant, Normal, Uniform)."""

    kind = p["initial_generator"] if p["initial_generator"] in ("Normal", "Uniform") else "Constant"
    if p["initial_generator"] == "None":
        unsupported.append(f"layer '{f.name}' (Delay): an initial value read from the dataset variable "
                           f"'{p['initial_dataset']}' is written as a constant {p['initial_multiplier']:g}; connect an "
                           "Input layer to the Delay's Initial input to keep it in nnabla files")
    name = f.name + INITIAL_SUFFIX
    out = next(v for v in net.variable if v.name == f.output[0])
    v = net.variable.add()
    v.name, v.type = name, "Buffer"
    set_shape(v.shape, [int(d) for d in out.shape.dim])
    f.input.append(name)
    generated.setdefault(net.name, {})[name] = (kind, float(p["initial_multiplier"]))


# ------------------------------------------------------------------------------------------------- import
def recurrent_ids(net: Any) -> Set[str]:
    """The repeat ids of a network that are recurrent blocks (not repeat blocks)."""
    return {f.recurrent_param.repeat_id for f in net.function if f.type in LOOP_TYPES and f.recurrent_param.repeat_id}


def generator_values(proto: Any, net_name: str) -> Dict[str, Any]:
    """Variables filled by a generator in ``net_name``: name -> the GeneratorVariable message."""
    return {g.variable_name: g for group in (proto.optimizer, proto.monitor, proto.executor) for item in group
            if item.network_name == net_name for g in item.generator_variable}


def recurrent_node_params(f: Any, variables: Dict[str, Any], generators: Dict[str, Any],
                          unsupported: List[str]) -> Optional[Dict[str, Any]]:
    """The layer parameters of a RecurrentInput/RecurrentOutput/Delay function. For a Delay whose initial
    value is a generated variable the generator becomes its parameters and ``_drop_initial`` is set."""
    if f.type in ("RecurrentInput", "RecurrentOutput"):
        return {"axis": max(int(f.recurrent_param.axis) - 1, 0)}
    out = variables.get(f.output[0])
    params: Dict[str, Any] = {"size": [int(d) for d in out.shape.dim][1:]} if out is not None else {}
    if len(f.input) > 1 and f.input[1] in generators:
        g = generators[f.input[1]]
        kind = g.type if g.type in ("Normal", "Uniform", "Constant") else "Constant"
        if kind != g.type:
            unsupported.append(f"layer '{f.name}' (Delay): initial value generator {g.type} is not supported; a "
                               f"constant {g.multiplier:g} is used")
        params.update(initial_generator=kind, initial_multiplier=float(g.multiplier), _drop_initial=True)
    return params


def units_expanded(project: Any, info: Any, notes: List[str]) -> Tuple[Any, Any]:
    """The project to write with NNC's LSTM units replaced by the recurrent layers they are made of (nnabla's
    own LSTM function is another computation), and its shape inference."""

    if not has_units(project.network):
        return project, info
    written = project.copy()
    written.network, unit_of = expand_units(project.network)
    notes.append(f"LSTM unit{'s' if len(set(unit_of.values())) > 1 else ''} {', '.join(sorted(set(unit_of.values())))} "
                 "written as the recurrent layers NNC's unit is made of (RecurrentInput, Affine gates, Delay, "
                 "RecurrentOutput)")
    return written, infer_network(written.network)
