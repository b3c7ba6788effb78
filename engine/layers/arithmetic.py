"""Element-wise arithmetic on two inputs of equal shape: Add2 and Mul2."""
from __future__ import annotations

from typing import Any, List, Mapping

from .registry import LayerSpec, Shape, ShapeError, fmt_shape, register


def _equal(type_name: str):
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        a, b = tuple(ins[0]), tuple(ins[1])
        if a != b:
            raise ShapeError(f"{type_name} inputs must have equal shapes, got {fmt_shape(a)} and {fmt_shape(b)}")
        return a
    return rule


def _fn(name: str):
    def build(ctx, inputs, layer):
        import nnabla.functions as F
        return getattr(F, name)(inputs[0], inputs[1])
    return build


register(LayerSpec(
    type="Add2", group="Arithmetic", doc="Element-wise sum of two inputs of the same shape (e.g. a residual).",
    params=[], n_inputs=(2, 2), output_shape=_equal("Add2"), build=_fn("add2"),
))
register(LayerSpec(
    type="Mul2", group="Arithmetic", doc="Element-wise product of two inputs of the same shape.",
    params=[], n_inputs=(2, 2), output_shape=_equal("Mul2"), build=_fn("mul2"),
))
