"""Repeat blocks in an exported .nntxt, kept as blocks the way NNC writes them (issue 17).

nnabla's file form (``nnabla_cli train`` expands it, nnabla/core/graph_def.py ``expand_loop_control``): a
``repeat_info {id, times}`` per block on each network; ``repeat_id`` on every function and variable inside a
block (outermost first; a RepeatStart lists its own id too, a RepeatEnd only the blocks around it); a
RepeatStart reads [outer input, loop-back (the layer feeding its RepeatEnd)] with ``repeat_param {repeat_id}``;
a RepeatEnd has ``repeat_param {repeat_id, times}``. A repeated layer's weights are named
``layer{id}/affine/W`` (nested: ``layer{outer}{inner}/...``), one set per repetition that nnabla names
``layer[i]/affine/W`` when it expands the file, as the engine names them; a layer with a ``parameter_scope``
keeps one set for every repetition. The id of a block is its RepeatStart's name. The importer reads this form
back as blocks (``netgraph.keep_repeat_blocks``).
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Sequence, Tuple

from nnconsole.engine.network.recurrent_unroll import LOOP_TYPES
from nnconsole.engine.network.repeat_blocks import END, START, enclosing_blocks, find_blocks, has_repeats, unroll
from nnconsole.engine.network.shapes import infer_network


def keeps_blocks(project: Any) -> bool:
    """Whether Main's repeat blocks are written as blocks: it has some, and no recurrent layers (recurrent
    blocks use repeat ids of their own; a network holding both is written unrolled)."""
    return _blocks_kept(project.network)


def _blocks_kept(network: Any) -> bool:
    layers = network.layers
    return has_repeats(layers) and not any(layer.type in LOOP_TYPES for layer in layers)


def annotate_project(proto: Any, project: Any, main_kept: bool, main_names: Sequence[str]) -> None:
    """The repeat form on Main's written networks (``main_names``) when its blocks were kept, and on every
    other network of the project (written as they are, blocks included, by ``nntxt_optimizers``)."""
    if main_kept:
        annotate_repeats(proto, project.network, main_names)
    for name, network in project.networks.items():
        if _blocks_kept(network):
            annotate_repeats(proto, network, (name,))


def annotate_repeats(proto: Any, network: Any, written: Sequence[str]) -> None:
    """Give the networks of ``proto`` named in ``written`` (written from ``network``'s layers: Main and its
    validation and runtime copies) nnabla's repeat form (see the module docstring); renames the repeated
    weights where optimizers and executors list them too."""
    blocks, _ = find_blocks(network.layers)
    around = {name: [b.start for b in bs] for name, bs in enclosing_blocks(blocks).items()}
    layers = {layer.name: layer for layer in network.layers}
    by_start = {b.start: b for b in blocks}
    renames: Dict[str, str] = {}
    for net in [n for n in proto.network if n.name in written]:
        functions = {f.name for f in net.function}
        present = [b for b in blocks if b.start in functions]
        if not present:
            continue
        for b in present:
            info = net.repeat_info.add()
            info.id, info.times = b.start, int(b.times)
        param_ids: Dict[str, List[str]] = {}
        buffer_ids: Dict[str, List[str]] = {}
        for f in net.function:
            ids = [i for i in around.get(f.name, []) if i in functions]
            if f.type == START:
                f.repeat_id.extend(ids + [f.name])
                loop_back = layers[by_start[f.name].end].inputs[0]
                f.input.append(loop_back)
                f.repeat_param.repeat_id = f.name
                buffer_ids[f.name] = ids + [f.name]
                continue
            if f.type == END:
                start = next(b.start for b in present if b.end == f.name)
                f.repeat_id.extend(ids)
                f.repeat_param.repeat_id = start
                f.repeat_param.times = int(by_start[start].times)
                buffer_ids[f.name] = ids
                continue
            f.repeat_id.extend(ids)
            for out in f.output:
                buffer_ids[out] = ids
            layer = layers.get(f.name)
            if not ids or layer is None or (layer.parameter_scope and getattr(layer, "scope_given", True)):
                continue  # a scope the user named: one set for every repetition
            own = layer.parameter_scope or ""  # a unit's layer: 'u/fc', marked after its own name ('u/fc{id}/...')
            for k, name in enumerate(f.input):
                if name in layers or "/" not in name:
                    continue
                scope, _, rest = (own, "/", name[len(own) + 1:]) if own and name.startswith(own + "/") else \
                    name.partition("/")
                new = f"{scope}{''.join('{' + i + '}' for i in ids)}/{rest}"
                renames[name] = new
                param_ids[new] = ids
                f.input[k] = new
        for v in net.variable:
            if v.type == "Parameter" and v.name in renames:
                v.name = renames[v.name]
                v.repeat_id.extend(param_ids[v.name])
            elif v.type == "Buffer" and buffer_ids.get(v.name):
                v.repeat_id.extend(buffer_ids[v.name])
    _rename_elsewhere(proto, renames)


def _rename_elsewhere(proto: Any, renames: Dict[str, str]) -> None:
    """The renamed weights where optimizers, monitors and executors list parameters."""
    if not renames:
        return
    for group in (proto.optimizer, proto.executor):
        for item in group:
            for pv in item.parameter_variable:
                pv.variable_name = renames.get(pv.variable_name, pv.variable_name)
    for param in proto.parameter:
        param.variable_name = renames.get(param.variable_name, param.variable_name)


def unrolled_project(project: Any, info: Any, notes: List[str]) -> Tuple[Any, Any]:
    """For exporters: a shallow copy of ``project`` with its repeat blocks unrolled and that network's
    inference (``project`` and ``info`` themselves when it has none); ``notes`` says so."""
    if not has_repeats(project.network.layers):
        return project, info

    out = copy.copy(project)
    out.network = unroll(project.network)
    starts = [layer.name for layer in project.network.layers if layer.type == START]
    notes.append(f"repeat blocks ({', '.join(starts)}) are written unrolled, one copy of their layers per "
                 "repetition (parameters 'layer[i]/...', the names nnabla gives them)")
    return out, infer_network(out.network)
