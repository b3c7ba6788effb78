"""Validation layers: TopNError and BinaryError, computed as nnabla (and so NNC) computes them.

Each takes a prediction and a target like a loss (the importer gives it a target Input from
``T.Dataset``, runtime networks leave it out), but nothing is learned from it: it is not added to the
loss, and when a network has one the first one computes the training and validation error curves
(``nnconsole.engine.runtime.graph.build_graph``'s ``sample_error``) instead of the first loss's own error.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping

from nnconsole.engine.layers.types.loss import _INPUTS, _label_shape, _same_shape
from nnconsole.engine.layers.nntxt_codec import axis_from_nnabla, axis_to_nnabla
from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, norm_axis, register


def _output_itself(pred: Any, target: Any, params: Mapping[str, Any], out: Any) -> Any:
    return out


def _top_n_build(ctx, inputs, layer):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    x, t = inputs
    p = ctx.params(layer)
    return F.top_n_error(x, t, axis=norm_axis(p["axis"], len(x.shape) - 1) + 1, n=p["n"])


def _top_n_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    f.top_n_error_param.axis = axis_to_nnabla(norm_axis(p["axis"], len(in_shapes[0])))
    f.top_n_error_param.n = int(p["n"])


def _top_n_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    if not f.HasField("top_n_error_param"):
        return {}
    return {"axis": axis_from_nnabla(f.top_n_error_param.axis), "n": int(f.top_n_error_param.n) or 1}


register(LayerSpec(
    type="TopNError", group="Validation",
    doc="Per prediction: 1 when the integer label is not among the n largest values along axis, else 0 "
        "(top-n error). Not learned from; it is the error curve of the run.",
    params=[ParamSpec("axis", "int", 0, "Class axis of the prediction (without the batch axis; 0 = channels)."),
            ParamSpec("n", "int", 1, "How many of the largest values count as right.", min=1)],
    n_inputs=(2, 2), input_names=_INPUTS, output_shape=_label_shape("TopNError"), build=_top_n_build,
    is_loss=True, is_metric=True, task="classification", error=_output_itself, class_index_target=True,
    nnc_properties={"Axis": "axis", "N": "n"},
    to_nntxt=_top_n_to_nntxt, from_nntxt=_top_n_from_nntxt, caption=lambda p: f"top {p.get('n', 1)}",
    examples=(({}, ((5,), (1,))), ({"n": 2}, ((5, 3, 3), (1, 3, 3)))),
))


def _binary_build(ctx, inputs, layer):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    return F.binary_error(inputs[0], inputs[1])


register(LayerSpec(
    type="BinaryError", group="Validation",
    doc="Per element: 1 when (prediction >= 0.5) differs from (target >= 0.5), else 0. Not learned from; it is "
        "the error curve of the run.",
    params=[], n_inputs=(2, 2), input_names=_INPUTS, output_shape=_same_shape("BinaryError"), build=_binary_build,
    is_loss=True, is_metric=True, task="classification", error=_output_itself, nnabla_function="binary_error",
))
