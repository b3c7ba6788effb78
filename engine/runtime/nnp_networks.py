"""The networks besides Main in the runtime ``.nnp`` (issue 17): each as a runtime network with an executor.

A GAN's user generates from z with the ``Generator`` network; an executor may evaluate through any network.
Each network of ``Project.networks`` is written under its own name, built as Main's runtime network is
(losses and targets dropped, every head kept), on the same parameters: layers of one parameter scope share
their weights across networks, as in training. Its outputs also include every layer that feeds a layer frozen
in that network (all its learning-rate multipliers 0): where the part its optimizer trains ends, e.g. the
generator's output ``g2`` before the discriminator it only reads.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List

from nnconsole.engine.project.model import Layer, Network, Project

RESERVED = "runtime"  # Main's runtime network and executor keep this name


def is_frozen(layer: Layer) -> bool:
    """Whether the layer's learned parameters are all left alone here (multipliers given, all 0)."""
    return bool(layer.lr_multipliers) and all(float(v) == 0.0 for v in layer.lr_multipliers.values())


def trained_part_ends(network: Network) -> List[str]:
    """Runtime layers, neither Inputs nor frozen nor downstream of a frozen layer, whose output feeds a frozen
    layer, in file order (data-flow order is file order here only for the result's order)."""
    from nnconsole.engine.network.shapes import runtime_layer_names

    kept = set(runtime_layer_names(network))
    layers = [layer for layer in network.layers if layer.name in kept]
    frozen = {layer.name for layer in layers if is_frozen(layer)}
    consumers: Dict[str, List[str]] = {}
    for layer in layers:
        for src in layer.inputs:
            consumers.setdefault(src, []).append(layer.name)
    after_frozen, stack = set(), list(frozen)
    while stack:
        for name in consumers.get(stack.pop(), []):
            if name not in after_frozen:
                after_frozen.add(name)
                stack.append(name)
    feeds_frozen = {src for layer in layers if layer.name in frozen for src in layer.inputs}
    return [layer.name for layer in layers if layer.name in feeds_frozen and layer.type != "Input"
            and layer.name not in frozen | after_frozen]


def nnp_name(name: str) -> str:
    """The network's name in the .nnp (a user's network called 'runtime' must not replace Main's)."""
    return name if name != RESERVED else f"{RESERVED}_{name}"


def add_other_networks(project: Project, contents: Dict[str, Any]) -> None:
    """Append every network of ``project.networks`` and an executor for it to nnabla ``save`` ``contents``
    (on the current parameters)."""
    from nnconsole.engine.runtime.nnp import build_runtime
    from nnconsole.engine.network.shapes import runtime_layer_names

    for name, network in project.networks.items():
        if not runtime_layer_names(network):
            continue  # nothing to run (e.g. a network of Inputs only)
        view = dataclasses.replace(project, network=network, networks={}, optimizers=[], executors=[])
        runtime = build_runtime(view, batch_size=1, keep=trained_part_ends(network))
        outputs = runtime.all_outputs()
        contents["networks"].append({"name": nnp_name(name), "batch_size": 1, "outputs": outputs,
                                     "names": dict(runtime.inputs)})
        contents["executors"].append({"name": nnp_name(name), "network": nnp_name(name),
                                      "data": list(runtime.inputs), "output": list(outputs)})
    add_project_executors(project, contents)


def add_project_executors(project: Project, contents: Dict[str, Any]) -> None:
    """The project's executors (NumEvaluations, repeat evaluation type: Monte-Carlo dropout...), each on the
    written runtime network of its network; a name taken already (a network's own executor) is left out."""
    from nnconsole.engine.project.model import MAIN_NETWORK

    taken = {e["name"] for e in contents["executors"]}
    by_network = {e["network"]: e for e in contents["executors"]}
    for ex in project.executors:
        network = RESERVED if ex.network == MAIN_NETWORK else nnp_name(ex.network)
        if ex.name in taken or network not in by_network:
            continue
        taken.add(ex.name)
        contents["executors"].append(dict(by_network[network], name=ex.name, num_evaluations=int(ex.num_evaluations),
                                          repeat_evaluation_type=ex.repeat_evaluation_type))
