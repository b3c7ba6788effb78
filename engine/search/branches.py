"""NNC's branch rules of the structure-search policy on our graph: ``Branch`` and ``RemoveUntilJoin``.

``Branch`` (NNC: ``Cond=Convolution,DepthwiseConvolution``) gives a convolution a parallel path from its input
joined to its output by ``Add2``: a residual connection. The path is the input itself when its shape is the
convolution's output shape, else a 1x1 Convolution with the convolution's outmaps and stride (a projection, as
ResNet's), so the two sides of the Add2 agree.

``RemoveUntilJoin`` (NNC's ``RemoveBranch``: ``Cond=-1:*BranchStart``, a layer that follows a branch start)
removes one path of a branch: the layers from the branch start's consumer up to the join (an ``Add2``,
``AddN`` or ``Concatenate`` all of whose inputs go back to one branch start). A join left with one input is
removed too, its consumers reading that input. The site is the join; the variant picks the path (its input).

Both only change the graph; every candidate still goes through the shape checks (``mutations``) before it
trains, and one that fails them (a Concatenate whose consumer needed its size, say) is not used.
"""
from __future__ import annotations

from typing import Callable, List, Optional

from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.project.model import Layer, Network

JOIN_TYPES = ("Add2", "AddN", "Concatenate")
BRANCH_TYPES = ("Convolution", "DepthwiseConvolution")
PATHS_PER_JOIN = 2  # the variants of RemoveUntilJoin: which input of the join (modulo its inputs)


def branch_start(network: Network, name: str) -> str:
    """The layer a path ends at going back from ``name`` through layers of one input and one consumer: the
    first layer met with several consumers (or no single input)."""
    by_name = {layer.name: layer for layer in network.layers}
    while name in by_name:
        layer = by_name[name]
        if len(network.consumers(name)) > 1 or len(layer.inputs) != 1:
            return name
        name = layer.inputs[0]
    return name


def join_sites(network: Network) -> List[str]:
    """Joins whose inputs all go back to one branch start: the sites of ``RemoveUntilJoin``."""
    out = []
    for layer in network.layers:
        if layer.type in JOIN_TYPES and len(layer.inputs) >= 2:
            starts = {branch_start(network, name) for name in layer.inputs}
            if len(starts) == 1 and len(network.consumers(next(iter(starts)))) > 1:
                out.append(layer.name)
    return out


def branch_sites(network: Network, keep: Callable[[Layer], bool]) -> List[str]:
    """Convolutions of one input that ``keep`` allows: the sites of ``Branch``."""
    return [layer.name for layer in network.layers
            if layer.type in BRANCH_TYPES and len(layer.inputs) == 1 and keep(layer)]


def remove_path(network: Network, join: Layer, variant: int) -> None:
    """Remove the path of ``join``'s input ``variant`` (modulo its inputs) back to the branch start."""
    index = variant % len(join.inputs)
    name = join.inputs[index]
    start = branch_start(network, name)
    by_name = {layer.name: layer for layer in network.layers}
    while name != start:  # each layer of the path has one input and one consumer
        layer = by_name[name]
        network.layers.remove(layer)
        name = layer.inputs[0]
    del join.inputs[index]
    if len(join.inputs) == 1:
        source = join.inputs[0]
        for consumer in network.consumers(join.name):
            consumer.inputs = [source if n == join.name else n for n in consumer.inputs]
        network.layers.remove(join)


def add_branch(network: Network, conv: Layer, unique: Callable[[str], str]) -> None:
    """Join ``conv``'s output and a path from its input with Add2 (identity, or a 1x1 projection)."""
    info = infer_network(network)
    source = conv.inputs[0]
    in_shape, out_shape = _shape(info, source), _shape(info, conv.name)
    shortcut = source
    if in_shape is None or out_shape is None or tuple(in_shape) != tuple(out_shape):
        stride = conv.params.get("stride", [1, 1])
        projection = Layer(name=unique("convolution"), type="Convolution", inputs=[source],
                           params={"outmaps": int(out_shape[0]) if out_shape else int(conv.params.get("outmaps", 1)),
                                   "kernel": [1] * len(stride), "pad": [0] * len(stride), "stride": list(stride)})
        network.layers.insert(network.layers.index(conv), projection)
        shortcut = projection.name
    add = Layer(name=unique("add2"), type="Add2")
    for consumer in network.consumers(conv.name):
        consumer.inputs = [add.name if n == conv.name else n for n in consumer.inputs]
    add.inputs = [conv.name, shortcut]
    network.layers.insert(network.layers.index(conv) + 1, add)


def _shape(info, name: str) -> Optional[tuple]:
    layer = info.layers.get(name)
    return tuple(layer.out_shape) if layer is not None and layer.out_shape is not None else None
