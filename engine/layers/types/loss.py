"""Loss layers. Each takes two inputs, prediction then target, and outputs a per-element loss.

- SoftmaxCrossEntropy: prediction = logits, target = integer label with the prediction's shape
  except 1 along ``axis`` (``[1]`` for a plain classifier). Error: argmax != label.
- CategoricalCrossEntropy: the same with probabilities (after Softmax) as the prediction.
- BinaryCrossEntropy: probabilities in [0, 1] vs targets of the same shape; error: (p >= 0.5) != (t >= 0.5).
- SigmoidCrossEntropy: logits vs 0/1 targets of the same shape; error: (x >= 0) != (t >= 0.5).
- SquaredError, AbsoluteError, HuberLoss (delta), EpsilonInsensitiveLoss (epsilon): regression; the error is
  the loss itself.
- KLMultinomial: KL divergence of distribution p from q (same shape); the error is the divergence.

build_graph averages each loss over its non-batch axes to get a per-sample loss.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, norm_axis, register

_INPUTS = ("prediction", "target")


def _label_shape(type_name: str):
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        pred, target = tuple(ins[0]), tuple(ins[1])
        axis = norm_axis(p["axis"], len(pred))
        want = pred[:axis] + (1,) + pred[axis + 1:]
        if target != want:
            raise ShapeError(f"{type_name} target must have shape {fmt_shape(want)} (one integer label per "
                             f"prediction along axis {axis}, whose size is {pred[axis]}), got {fmt_shape(target)}")
        return want
    return rule


def _same_shape(type_name: str):
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        pred, target = tuple(ins[0]), tuple(ins[1])
        if pred != target:
            raise ShapeError(f"{type_name} target must have the prediction's shape {fmt_shape(pred)}, "
                             f"got {fmt_shape(target)}")
        return pred
    return rule


def _label_build(fn: str):
    def build(ctx, inputs, layer):
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI
        x, t = inputs
        axis = norm_axis(ctx.params(layer)["axis"], len(x.shape) - 1) + 1
        return getattr(F, fn)(x, t, axis=axis)
    return build


def _label_error(pred, target, params, loss_out):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    axis = norm_axis(params["axis"], len(pred.shape) - 1) + 1
    guess = F.max(pred, axis=axis, keepdims=True, only_index=True)
    return F.not_equal(guess, target)


def _pair_build(fn: str, *keys: str):
    def build(ctx, inputs, layer):
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI
        p = ctx.params(layer)
        return getattr(F, fn)(inputs[0], inputs[1], **{k: p[k] for k in keys})
    return build


def _threshold_error(pred_threshold: float):
    def error(pred, target, params, loss_out):
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI
        return F.not_equal(F.greater_equal_scalar(pred, pred_threshold), F.greater_equal_scalar(target, 0.5))
    return error


def _loss_itself(pred, target, params, loss_out):
    return loss_out


_AXIS = ParamSpec("axis", "int", -1, "Class axis of the prediction (without the batch axis); -1 is the last.")

for _type, _fn, _doc in (
        ("SoftmaxCrossEntropy", "softmax_cross_entropy",
         "Cross entropy of softmax(prediction logits) against an integer class label."),
        ("CategoricalCrossEntropy", "categorical_cross_entropy",
         "Cross entropy of class probabilities (e.g. after Softmax) against an integer class label.")):
    register(LayerSpec(
        type=_type, group="Loss", doc=_doc, params=[_AXIS], n_inputs=(2, 2), input_names=_INPUTS,
        output_shape=_label_shape(_type), build=_label_build(_fn), is_loss=True,
        task="classification", error=_label_error, class_index_target=True,
        runtime_head="Softmax" if _type == "SoftmaxCrossEntropy" else "",
        nnc_properties={"Axis": "axis"}, nntxt_fields={"axis": f"{_fn}_param.axis"},
        examples=(({}, ((5,), (1,))), ({"axis": 0}, ((5, 3, 3), (1, 3, 3)))),
    ))

register(LayerSpec(
    type="BinaryCrossEntropy", group="Loss",
    doc="Cross entropy of probabilities in [0, 1] (e.g. after Sigmoid) against 0/1 targets of the same shape.",
    params=[], n_inputs=(2, 2), input_names=_INPUTS, output_shape=_same_shape("BinaryCrossEntropy"),
    build=_pair_build("binary_cross_entropy"), is_loss=True, task="classification", error=_threshold_error(0.5),
))
register(LayerSpec(
    type="SigmoidCrossEntropy", group="Loss",
    doc="Cross entropy of sigmoid(prediction logits) against 0/1 targets of the same shape.",
    params=[], n_inputs=(2, 2), input_names=_INPUTS, output_shape=_same_shape("SigmoidCrossEntropy"),
    build=_pair_build("sigmoid_cross_entropy"), is_loss=True, task="classification", error=_threshold_error(0.0),
    runtime_head="Sigmoid",
))
register(LayerSpec(
    type="SquaredError", group="Loss", doc="Squared difference (prediction - target)^2 per element.",
    params=[], n_inputs=(2, 2), input_names=_INPUTS, output_shape=_same_shape("SquaredError"),
    build=_pair_build("squared_error"), is_loss=True, task="regression", error=_loss_itself,
))
register(LayerSpec(
    type="AbsoluteError", group="Loss", doc="Absolute difference |prediction - target| per element.",
    params=[], n_inputs=(2, 2), input_names=_INPUTS, output_shape=_same_shape("AbsoluteError"),
    build=_pair_build("absolute_error"), is_loss=True, task="regression", error=_loss_itself,
))
register(LayerSpec(
    type="HuberLoss", group="Loss",
    doc="Squared error for differences below delta and linear beyond it (robust regression).",
    params=[ParamSpec("delta", "float", 1.0, "Where the loss turns from quadratic to linear.", min=0.0)],
    n_inputs=(2, 2), input_names=_INPUTS, output_shape=_same_shape("HuberLoss"),
    build=_pair_build("huber_loss", "delta"), is_loss=True, task="regression", error=_loss_itself,
    nnc_properties={"Delta": "delta"}, nntxt_fields={"delta": "huber_loss_param.delta"},
))
register(LayerSpec(
    type="EpsilonInsensitiveLoss", group="Loss",
    doc="max(|prediction - target| - epsilon, 0) per element: errors within epsilon cost nothing (SVR-style).",
    params=[ParamSpec("epsilon", "float", 0.0, "Differences up to epsilon are not penalised.", min=0.0)],
    n_inputs=(2, 2), input_names=_INPUTS, output_shape=_same_shape("EpsilonInsensitiveLoss"),
    build=_pair_build("epsilon_insensitive_loss", "epsilon"), is_loss=True, task="regression", error=_loss_itself,
    nnabla_function="epsilon_insensitive_loss",
    nnc_properties={"Epsilon": "epsilon"}, nntxt_fields={"epsilon": "epsilon_insensitive_loss_param.epsilon"},
))


def _kl_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    pred, target = tuple(ins[0]), tuple(ins[1])
    if pred != target:
        raise ShapeError(f"KLMultinomial q (target) must have p's shape {fmt_shape(pred)}, got {fmt_shape(target)}")
    if not 0 <= p["base_axis"] < len(pred):
        raise ShapeError(f"KLMultinomial base_axis {p['base_axis']} is out of range for input {fmt_shape(pred)}; "
                         f"use 0..{len(pred) - 1} (0: one distribution per sample)")
    return pred[:p["base_axis"]] + (1,)


def _kl_build(ctx, inputs, layer):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    return F.kl_multinomial(inputs[0], inputs[1], base_axis=ctx.params(layer)["base_axis"] + 1)


def _kl_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    f.kl_multinomial_param.base_axis = int(p["base_axis"]) + 1  # nnabla counts the batch axis


def _kl_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    if not f.HasField("kl_multinomial_param"):
        return {}
    return {"base_axis": max(int(f.kl_multinomial_param.base_axis) - 1, 0)}


register(LayerSpec(
    type="KLMultinomial", group="Loss",
    doc="Kullback-Leibler divergence sum p log(p / q) of the distribution p (prediction, e.g. after Softmax) "
        "from q (target probabilities of the same shape), one value per distribution.",
    params=[ParamSpec("base_axis", "int", 0, "Axes before base_axis (without the batch axis) hold separate "
                      "distributions; 0: the whole sample is one distribution.", min=0)],
    n_inputs=(2, 2), input_names=("p", "q"), output_shape=_kl_shape, build=_kl_build,
    is_loss=True, task="regression", error=_loss_itself,
    nnc_properties={"BaseAxis": "base_axis"}, to_nntxt=_kl_to_nntxt, from_nntxt=_kl_from_nntxt,
    examples=(({}, ((5,), (5,))), ({"base_axis": 1}, ((2, 3), (2, 3)))),
))
