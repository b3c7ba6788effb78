"""Element-wise activations (shape-preserving) and Softmax."""
from __future__ import annotations

from typing import Any, Callable, List, Mapping

from .registry import LayerSpec, ParamSpec, Shape, norm_axis, register


def _same(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    return tuple(ins[0])


def _fn(name: str, **fixed: Any) -> Callable:
    """A build function calling nnabla.functions.<name>(x, **params)."""
    def build(ctx, inputs, layer):
        import nnabla.functions as F
        kwargs = dict(fixed)
        kwargs.update(ctx.params(layer))
        return getattr(F, name)(inputs[0], **kwargs)
    return build


def _simple(type_name: str, fn: str, doc: str, params: List[ParamSpec] = ()) -> None:
    register(LayerSpec(type=type_name, group="Activation", doc=doc, params=list(params), n_inputs=(1, 1),
                       output_shape=_same, build=_fn(fn)))


_simple("ReLU", "relu", "Rectified linear unit: max(x, 0).")
_simple("LeakyReLU", "leaky_relu", "Leaky ReLU: x for x > 0, alpha * x otherwise.",
        [ParamSpec("alpha", "float", 0.1, "Slope for negative inputs.")])
_simple("ELU", "elu", "Exponential linear unit: x for x > 0, alpha * (exp(x) - 1) otherwise.",
        [ParamSpec("alpha", "float", 1.0, "Scale of the negative part.")])
_simple("SELU", "selu", "Scaled ELU with the self-normalising constants (scale 1.0507, alpha 1.6733).")
_simple("Swish", "swish", "Swish: x * sigmoid(x).")
_simple("Tanh", "tanh", "Hyperbolic tangent.")
_simple("Sigmoid", "sigmoid", "Logistic sigmoid 1 / (1 + exp(-x)).")


def _softmax_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    norm_axis(p["axis"], len(ins[0]))
    return tuple(ins[0])


def _softmax_build(ctx, inputs, layer):
    import nnabla.functions as F
    x = inputs[0]
    axis = norm_axis(ctx.params(layer)["axis"], len(x.shape) - 1) + 1
    return F.softmax(x, axis=axis)


register(LayerSpec(
    type="Softmax", group="Activation",
    doc="Normalises values along an axis into probabilities that sum to 1.",
    params=[ParamSpec("axis", "int", -1, "Axis (without the batch axis); -1 is the last.")],
    n_inputs=(1, 1), output_shape=_softmax_shape, build=_softmax_build,
))
