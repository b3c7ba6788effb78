"""The trained network as nnabla's ``.nnp`` (runtime network + parameters), through nnabla's own save API.

The runtime network is the training network without losses and targets; a SoftmaxCrossEntropy
head gets a Softmax, as Neural Network Console's runtime network does, so the output is a probability.

The networks besides Main (issue 17) are written too: each as a runtime network with an executor.

A GAN's user generates from z with the ``Generator`` network; an executor may evaluate through any network.
Each network of ``Project.networks`` is written under its own name, built as Main's runtime network is
(losses and targets dropped, every head kept), on the same parameters: layers of one parameter scope share
their weights across networks, as in training. Its outputs also include every layer that feeds a layer frozen
in that network (all its learning-rate multipliers 0): where the part its optimizer trains ends, e.g. the
generator's output ``g2`` before the discriminator it only reads.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence

from nnconsole.engine.project.model import Layer, MAIN_NETWORK, Network, Project
from nnconsole.engine.network.shapes import first_loss, infer_network, runtime_layer_names
from nnconsole.engine.layers import get_spec
from nnconsole.engine.runtime.graph import build_graph
from nnconsole.engine.network.units import expanded_project
from nnconsole.engine.atomic import write_via


@dataclass
class RuntimeGraph:
    """A runtime graph ready to run: inputs by dataset variable, the output variable, and the other heads.

    ``output`` is the prediction of the first loss (the one evaluation reads). ``extra_outputs`` holds,
    by layer name, every other head the runtime network keeps: the prediction of each further loss and
    each layer that feeds nothing (a GAN's discriminator on generated data, fed by the generator's z).
    Every input reaches ``output`` or one of them, so a saved runtime network has no unused input.
    """

    inputs: Dict[str, Any]
    output: Any
    output_name: str
    task: str
    extra_outputs: Dict[str, Any] = field(default_factory=dict)
    generated: Dict[str, Any] = field(default_factory=dict)  # BuiltGraph.generated: filled, not read from data

    def variables(self) -> Dict[str, Any]:
        """Every variable entering the network by name: the dataset's, then the generated ones (a saved .nnp
        takes both as data, so that its user can give z)."""
        return {**self.inputs, **{name: var for name, (var, _spec) in self.generated.items()}}

    def all_outputs(self) -> Dict[str, Any]:
        """Every head by its name in the saved network: ``y'`` first, then the others by layer name."""
        return {self.output_name: self.output, **self.extra_outputs}


def _loss_layer(project: Project):
    """The first loss layer of the training network (it decides the runtime head), or None."""

    name = first_loss(project.network)
    return project.network.layer(name) if name else None


def _with_head(F: Any, output: Any, loss_layer: Any) -> Any:
    """The runtime head of ``loss_layer``'s type on its prediction (Softmax, Sigmoid or none)."""

    head = get_spec(loss_layer.type).runtime_head if loss_layer is not None else ""
    if head == "Softmax":
        axis = int(loss_layer.params.get("axis", -1))
        return F.softmax(output, axis=axis + 1 if axis >= 0 else output.ndim + axis)
    if head == "Sigmoid":
        return F.sigmoid(output)
    return output


def _other_heads(project: Project, graph: Any) -> Dict[str, Any]:
    """The runtime heads besides the primary prediction, by layer name (see RuntimeGraph)."""
    import nnabla.functions as F  # deferred: nnabla stays out of the launcher


    network = project.network
    kept = set(runtime_layer_names(network))
    consumed = {src for layer in network.layers if layer.name in kept for src in layer.inputs}
    heads: Dict[str, Any] = {}
    for loss_name in infer_network(network).loss_layers:
        loss = network.layer(loss_name)
        name = loss.inputs[0] if loss.inputs else ""
        if name in graph.outputs and name != graph.prediction_layer and name not in heads:
            heads[name] = _with_head(F, graph.outputs[name], loss)
    for layer in network.layers:
        name = layer.name
        if (name in kept and name not in consumed and name in graph.outputs and name != graph.prediction_layer
                and name not in heads and graph.outputs[name] not in graph.inputs.values()
                and all(graph.outputs[name] is not var for var, _spec in graph.generated.values())):
            heads[name] = graph.outputs[name]
    return heads


def build_runtime(project: Project, batch_size: int = 1, keep: Sequence[str] = ()) -> RuntimeGraph:
    """Runtime graph on the current parameters: dropout off, batch-norm in inference mode. ``keep``: layers
    whose outputs are heads too (a generator's output inside a GAN's network, ``export_networks``)."""
    import nnabla.functions as F  # deferred: nnabla stays out of the launcher


    project = expanded_project(project)  # Units run as their networks' layers (a run's project keeps them)
    graph = build_graph(project.network, batch_size, "runtime")
    output = _with_head(F, graph.prediction, _loss_layer(project))
    extra = {name: var for name, var in _other_heads(project, graph).items() if name != "y'"}
    extra.update({name: graph.outputs[name] for name in keep if name in graph.outputs and name not in extra})
    return RuntimeGraph(inputs=dict(graph.inputs), output=output, output_name="y'", task=graph.task,
                        extra_outputs=extra, generated=dict(graph.generated))


def export_nnp(project: Project, parameters_path: str, nnp_path: str) -> str:
    """Write ``nnp_path`` with the runtime network and the parameters from ``parameters_path``.

    Loads the parameters into the current (global) parameter scope, replacing what is there.
    """
    import nnabla as nn  # deferred: nnabla stays out of the launcher
    from nnabla.utils.save import save  # deferred: nnabla stays out of the launcher

    nn.clear_parameters()
    nn.load_parameters(parameters_path)
    runtime = build_runtime(project, batch_size=1)
    contents = {
        "networks": [{"name": "runtime", "batch_size": 1, "outputs": runtime.all_outputs(),
                      "names": runtime.variables()}],
        "executors": [{"name": "runtime", "network": "runtime", "data": list(runtime.variables()),
                       "output": list(runtime.all_outputs())}],
    }

    add_other_networks(project, contents)  # a GAN's Generator... (issue 17)

    return write_via(nnp_path, lambda tmp: save(tmp, contents, variable_batch_size=True))


# ---- the networks besides Main -----------------------------------------------------------------------
RESERVED = "runtime"  # Main's runtime network and executor keep this name


def is_frozen(layer: Layer) -> bool:
    """Whether the layer's learned parameters are all left alone here (multipliers given, all 0)."""
    return bool(layer.lr_multipliers) and all(float(v) == 0.0 for v in layer.lr_multipliers.values())


def trained_part_ends(network: Network) -> List[str]:
    """Runtime layers, neither Inputs nor frozen nor downstream of a frozen layer, whose output feeds a frozen
    layer, in file order (data-flow order is file order here only for the result's order)."""

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

    for name, network in project.networks.items():
        if not runtime_layer_names(network):
            continue  # nothing to run (e.g. a network of Inputs only)
        view = dataclasses.replace(project, network=network, networks={}, optimizers=[], executors=[])
        runtime = build_runtime(view, batch_size=1, keep=trained_part_ends(network))
        outputs = runtime.all_outputs()
        contents["networks"].append({"name": nnp_name(name), "batch_size": 1, "outputs": outputs,
                                     "names": runtime.variables()})
        contents["executors"].append({"name": nnp_name(name), "network": nnp_name(name),
                                      "data": list(runtime.variables()), "output": list(outputs)})
    add_project_executors(project, contents)


def add_project_executors(project: Project, contents: Dict[str, Any]) -> None:
    """The project's executors (NumEvaluations, repeat evaluation type: Monte-Carlo dropout...), each on the
    written runtime network of its network; a name taken already (a network's own executor) is left out."""

    taken = {e["name"] for e in contents["executors"]}
    by_network = {e["network"]: e for e in contents["executors"]}
    for ex in project.executors:
        network = RESERVED if ex.network == MAIN_NETWORK else nnp_name(ex.network)
        if ex.name in taken or network not in by_network:
            continue
        taken.add(ex.name)
        contents["executors"].append(dict(by_network[network], name=ex.name, num_evaluations=int(ex.num_evaluations),
                                          repeat_evaluation_type=ex.repeat_evaluation_type))
