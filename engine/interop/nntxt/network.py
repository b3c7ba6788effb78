"""Import stage 2 for nnabla files: the training network's functions as graph nodes with registry
parameters (each type's conversion is its registration's ``from_nntxt``), weights and initializers.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from nnconsole.engine.layers.nntxt_codec import Unsupported, dims, f7, read_fields
from nnconsole.engine.project.model import Initializer

from nnconsole.engine.interop import mapping
from nnconsole.engine.interop.netgraph import Node, WeightInfo, unique_name
from nnconsole.engine.interop.nntxt.recurrent import (LOOP_TYPES, generator_values, recurrent_ids,
                                                      recurrent_node_params)
from nnconsole.engine.interop.report import InteropError
from nnconsole.engine.layers import get_spec
from nnconsole.engine.layers.types.sequence_rnn_nntxt import collapse
from nnconsole.engine.network.noise_buffers import VAT_NOISE
from nnconsole.engine.layers.types.inputs import GENERATORS

_dims = dims
_f = f7


def _function_params(f: Any, in_shapes: List[Optional[List[int]]], weights: Dict[str, List[int]],
                     ftype: str = "") -> Dict[str, Any]:
    """Registry parameters of one nnabla function (its type's ``from_nntxt`` hook, else its
    ``nntxt_fields``); ``ftype`` overrides the function's type (a Broadcast read as a Parameter layer);
    raises Unsupported for settings nnconsole lacks."""

    ftype = ftype or f.type
    spec = get_spec(mapping.registry_type(ftype) or ftype)
    if spec.from_nntxt is not None:
        return spec.from_nntxt(f, in_shapes, weights)
    return read_fields(f, spec.nntxt_fields)


def _initializer(var: Any, unsupported: List[str], label: str) -> Optional[Initializer]:
    if not var.HasField("initializer") or not var.initializer.type:
        return None
    name = var.initializer.type
    kind = mapping.initializer_type(name)
    m = _f(var.initializer.multiplier)
    if kind is None:
        unsupported.append(f"{label}: initializer {name} has no nnconsole equivalent; the layer's default is used")
        return None
    if kind == "Constant":
        return Initializer("Constant", 1.0, m)
    return Initializer(kind, m, 0.0)


def training_network(proto: Any, notes: List[str]) -> Any:
    names = [n.name for n in proto.network]
    if not names:
        raise InteropError("the file has no network section; export the project again from NNC")
    wanted = proto.optimizer[0].network_name if len(proto.optimizer) else ""
    for n in proto.network:
        if n.name == wanted:
            return n
    for n in proto.network:
        if n.name == "Main":
            return n
    others = [n for n in proto.network if not re.search(r"(Validation|Runtime)$", n.name)]
    chosen = others[0] if others else proto.network[0]
    if not len(proto.optimizer):
        notes.append(f"the file has no optimizer; network '{chosen.name}' was imported (add a loss layer and "
                     "check the CONFIG before training)")
    return chosen


def _data_names(proto: Any) -> Dict[str, str]:
    """Network variable -> dataset variable, from the optimizers, monitors and executors."""
    out: Dict[str, str] = {}
    for group in (proto.executor, proto.monitor, proto.optimizer):
        for item in group:
            for dv in item.data_variable:
                out[dv.variable_name] = dv.data_name
    return out


def _input_generator(var_name: str, g: Any, unsupported: List[str]) -> Dict[str, Any]:
    """An Input's generator parameters from nnabla's GeneratorVariable (type and multiplier)."""
    kind = str(g.type)
    if kind not in GENERATORS[1:]:
        unsupported.append(f"generator variable '{var_name}': type {kind!r} is not one of nnabla's "
                           f"{', '.join(GENERATORS[1:])}; it is generated as Constant")
        kind = "Constant"
    return {"variable": var_name, "generator": kind, "generator_multiplier": _f(g.multiplier)}


def _lr_multipliers(proto: Any, network_name: str) -> Tuple[Dict[str, float], bool]:
    for o in proto.optimizer:
        if o.network_name == network_name:
            values = {p.variable_name: _f(p.learning_rate_multiplier) for p in o.parameter_variable}
            return values, bool(values)
    return {}, False


def _plain_name(name: str) -> str:
    """A variable's name as a layer name: the part after the last '/' (nnabla's scope separator, which layer
    names may not hold), without nnabla's '@' of generated names; the name itself when nothing is left."""
    return name.rsplit("/", 1)[-1].lstrip("@") or name.replace("/", "_")


def _layer_name(f: Any, variables: Dict[str, Any]) -> str:
    """A layer name for a function: its own name, or for nnabla's generated names (``@runtime/Affine_2``)
    the parameter scope of its weights (``fc1``) or the part after the last '/'; never containing '/'."""
    name = f.name
    if name.startswith("@") or "/" in name:
        params = [i for i in f.input if i in variables and variables[i].type == "Parameter" and "/" in i]
        name = params[0].split("/", 1)[0] if params else name.rsplit("/", 1)[-1]
    return name.replace("/", "_").lstrip("@") or f.type


def _parameter_layer_type(f: Any, data_inputs: List[str], param_inputs: List[str], lr_values: Dict[str, float],
                          has_lr_list: bool) -> str:
    """A Broadcast of one parameter and nothing else is how Parameter layers are written (WorkingMemory when the
    optimizer does not learn it); any other function keeps its type."""
    if f.type != "Broadcast" or data_inputs or len(param_inputs) != 1:
        return f.type
    learned = lr_values.get(param_inputs[0], 0.0 if has_lr_list else 1.0) != 0.0
    return "Parameter" if learned else "WorkingMemory"


def _kept_at_test(proto: Any, net: Any, f: Any) -> bool:
    """A random function (Dropout, RandomFlip ...) that another network of the file (the validation or runtime
    one) still runs under its name: NNC's SkipAtTest was off (with it on, those networks hold an Identity)."""
    return any(g.name == f.name and g.type == f.type for other in proto.network if other.name != net.name
               for g in other.function)


def _noise_buffers(proto: Any, net: Any) -> Dict[str, Optional[Tuple[str, float]]]:
    """The VATNoise buffers of ``net`` (their functions' second inputs) -> (generator, multiplier) of the
    optimizer of that network that fills it (NNC's Buf.Generator), or None."""
    names = {f.input[1] for f in net.function if f.type == VAT_NOISE and len(f.input) > 1}
    out: Dict[str, Optional[Tuple[str, float]]] = {name: None for name in names}
    for o in proto.optimizer:
        if o.network_name == net.name:
            for g in o.generator_variable:
                if g.variable_name in out:
                    out[g.variable_name] = (g.type, _f(g.multiplier))
    return out


def network_nodes(proto: Any, net: Any, unsupported: List[str], notes: List[str], where: str) -> List[Node]:
    """Nodes of one network (repeats not yet expanded)."""

    sequence_outputs = collapse(net, unsupported)  # nnabla's Transpose + LSTM/GRU/RNN + Transpose: one LSTMSequence ...
    variables = {v.name: v for v in net.variable}
    data_names = _data_names(proto)
    lr_values, has_lr_list = _lr_multipliers(proto, net.name)
    taken: set = set()
    producer: Dict[str, str] = {}
    alias: Dict[str, str] = {}
    node_names: List[Optional[str]] = []
    for f in net.function:  # pass 1: who produces each variable (a RepeatStart reads a later output)
        if f.type in mapping.PASS_THROUGH and f.input and f.output:
            alias[f.output[0]] = f.input[0]
            node_names.append(None)
            notes.append(f"{f.type} '{f.name}' removed (a no-op)")
            continue
        name = unique_name(_layer_name(f, variables), taken)
        node_names.append(name)
        for out in f.output:
            producer[out] = name
    nodes: List[Node] = []
    inputs_made: Dict[str, str] = {}
    generators = {g.variable_name: g for group in (proto.optimizer, proto.monitor, proto.executor)
                  for item in group for g in item.generator_variable}
    buffers = _noise_buffers(proto, net)  # VATNoise's noise buffers: generated or written, never a dataset column
    frozen: List[str] = []
    loop_ids, generated = recurrent_ids(net), generator_values(proto, net.name)  # recurrent blocks

    def source(var_name: str) -> str:
        seen = set()
        while var_name in alias and var_name not in seen:
            seen.add(var_name)
            var_name = alias[var_name]
        if var_name in producer:
            return producer[var_name]
        if var_name in inputs_made:
            return inputs_made[var_name]
        v = variables.get(var_name)
        shape = _dims(v.shape)[1:] if v is not None else [1]
        plain = _plain_name(var_name)  # nnabla's '@net/x' names its graph's variable x
        name = unique_name(plain, taken)
        params: Dict[str, Any] = {"shape": shape or [1], "variable": data_names.get(var_name, plain)}
        g = generated.get(var_name) or generators.get(var_name)  # this network's generator first
        if g is not None and var_name not in buffers:  # nnabla's generator_variable: the Input generates it
            params.update(_input_generator(var_name, g, unsupported))
        nodes.append(Node(name=name, type="Input", params=params))
        inputs_made[var_name] = name
        return name

    for f, name in zip(net.function, node_names):
        if name is None:
            continue
        data_inputs = [i for i in f.input if i not in variables or variables[i].type != "Parameter"]
        param_inputs = [i for i in f.input if i in variables and variables[i].type == "Parameter"]
        loop_params = recurrent_node_params(f, variables, generated, unsupported) if f.type in LOOP_TYPES else None
        if loop_params and loop_params.pop("_drop_initial", False):  # a generated Delay initial value
            data_inputs = data_inputs[:1]
        if f.type == VAT_NOISE:  # its second input is the noise buffer, a parameter of the layer
            data_inputs = data_inputs[:1]
        srcs = [source(i) for i in data_inputs]
        node = Node(name=name, type=_parameter_layer_type(f, data_inputs, param_inputs, lr_values, has_lr_list),
                    inputs=srcs, repeat_ids=[r for r in f.repeat_id if r not in loop_ids])
        if f.type in mapping.REPEAT_TYPES:
            node.repeat_id = f.repeat_param.repeat_id
            node.params = {"times": int(f.repeat_param.times)}
        elif loop_params is not None:
            node.params = loop_params
        else:
            spec = mapping.layer_spec(node.type)
            rtype = spec.type if spec else ""
            order = spec.weight_order if spec else ()
            weights: Dict[str, List[int]] = {}
            for k, pname in enumerate(param_inputs):
                key = order[k] if k < len(order) else f"param{k}"
                if pname.rsplit("/", 1)[-1] in order:  # nnabla names them (LSTM's optional middle 'weight')
                    key = pname.rsplit("/", 1)[-1]
                v = variables[pname]
                weights[key] = _dims(v.shape)
                lr = lr_values.get(pname)
                if has_lr_list and lr is None:
                    lr = 0.0
                    if key not in mapping.non_trainable(rtype):
                        frozen.append(pname)
                node.weights[key] = WeightInfo(source_name=pname,
                                               initializer=_initializer(v, unsupported, f"parameter '{pname}'"),
                                               lr_multiplier=lr)
            in_shapes = [(_dims(variables[i].shape)[1:] if i in variables else None) for i in data_inputs]
            if rtype:
                try:
                    node.params = _function_params(f, in_shapes, weights, node.type)
                    node.params.update(sequence_outputs.get(f.name, {}))
                except Unsupported as exc:
                    unsupported.append(f"layer '{f.name}' ({f.type}): {exc}; nnconsole's defaults are used")
                if f.type == VAT_NOISE and len(f.input) > 1 and buffers.get(f.input[1]):
                    node.params["buffer_generator"], node.params["buffer_multiplier"] = buffers[f.input[1]]
                if any(p.name == "skip_at_test" for p in spec.params) and _kept_at_test(proto, net, f):
                    node.params["skip_at_test"] = False
        nodes.append(node)
    if frozen:
        notes.append(f"parameters not listed in the optimizer are not trained (learning-rate multiplier 0): "
                     f"{', '.join(frozen)}")
    return nodes
