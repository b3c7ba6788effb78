"""The trained network as nnabla's ``.nnp`` (runtime network + parameters), through nnabla's own save API.

The runtime network is the training network without losses and targets; a SoftmaxCrossEntropy
head gets a Softmax, as Neural Network Console's runtime network does, so the output is a probability.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict

from nnconsole.engine.project.model import Project


@dataclass
class RuntimeGraph:
    """A runtime graph ready to run: inputs by dataset variable, and the output variable."""

    inputs: Dict[str, Any]
    output: Any
    output_name: str
    task: str


def _loss_layer(project: Project):
    """The first loss layer of the training network (it decides the runtime head), or None."""
    from nnconsole.engine.shapes import first_loss

    name = first_loss(project.network)
    return project.network.layer(name) if name else None


def build_runtime(project: Project, batch_size: int = 1) -> RuntimeGraph:
    """Runtime graph on the current parameters: dropout off, batch-norm in inference mode."""
    import nnabla.functions as F

    from nnconsole.engine.graph import build_graph
    from nnconsole.engine.layers import get_spec

    graph = build_graph(project.network, batch_size, "runtime")
    output = graph.prediction
    loss_layer = _loss_layer(project)
    head = get_spec(loss_layer.type).runtime_head if loss_layer else ""  # the loss type decides
    if head == "Softmax":
        axis = int(loss_layer.params.get("axis", -1))
        output = F.softmax(output, axis=axis + 1 if axis >= 0 else output.ndim + axis)
    elif head == "Sigmoid":
        output = F.sigmoid(output)
    return RuntimeGraph(inputs=dict(graph.inputs), output=output, output_name="y'", task=graph.task)


def export_nnp(project: Project, parameters_path: str, nnp_path: str) -> str:
    """Write ``nnp_path`` with the runtime network and the parameters from ``parameters_path``.

    Loads the parameters into the current (global) parameter scope, replacing what is there.
    """
    import nnabla as nn
    from nnabla.utils.save import save

    nn.clear_parameters()
    nn.load_parameters(parameters_path)
    runtime = build_runtime(project, batch_size=1)
    contents = {
        "networks": [{"name": "runtime", "batch_size": 1, "outputs": {runtime.output_name: runtime.output},
                      "names": dict(runtime.inputs)}],
        "executors": [{"name": "runtime", "network": "runtime", "data": list(runtime.inputs),
                       "output": [runtime.output_name]}],
    }
    from nnconsole.engine.atomic import write_via

    return write_via(nnp_path, lambda tmp: save(tmp, contents, variable_batch_size=True))
