"""One-call registration of a layer type that is one nnabla function: most of NNC's palette.

``function_layer`` fills in what follows from the function's name: the build (``F.<fn>(*inputs,
**params)``), NNC's property names (the parameters in CamelCase, as NNC's definitions spell them:
alpha -> Alpha) and the protobuf fields (``<fn>_param.<parameter>``). Shape rules for the common
cases are here too; anything else is given as a keyword (see LayerSpec).
"""
from __future__ import annotations

from typing import Any, Callable, List, Mapping, Sequence

from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, register


def same_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    """Element-wise on one input: the output has the input's shape."""
    return tuple(ins[0])


def equal_shapes(type_name: str) -> Callable[[List[Shape], Mapping[str, Any]], Shape]:
    """Element-wise on inputs that must have one shape (Add2, Mul2)."""
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        first = tuple(ins[0])
        for other in ins[1:]:
            if tuple(other) != first:
                shapes = [fmt_shape(s) for s in ins]
                raise ShapeError(f"{type_name} inputs must have equal shapes, got "
                                 f"{', '.join(shapes[:-1])} and {shapes[-1]}")
        return first
    return rule


def nnc_property_name(param: str) -> str:
    """'alpha' -> 'Alpha', 'decay_rate' -> 'DecayRate': how NNC names a function argument."""
    return "".join(part.capitalize() for part in param.split("_"))


def call_build(fn: str) -> Callable:
    """A build function calling nnabla.functions.<fn>(*inputs, **checked params)."""
    def build(ctx: Any, inputs: list, layer: Any) -> Any:
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI
        return getattr(F, fn)(*inputs, **ctx.params(layer))
    return build


def function_layer(type_name: str, group: str, fn: str, doc: str, params: Sequence[ParamSpec] = (),
                   n_inputs: tuple = (1, 1), output_shape: Callable = same_shape, **more: Any) -> LayerSpec:
    """Register (and return) a layer type computed by nnabla.functions.<fn>; ``more`` sets or overrides
    any other LayerSpec field (nnc_properties, nntxt_fields, caption, examples, ...)."""
    fields = dict(build=call_build(fn), nnabla_function=fn,
                  nnc_properties={nnc_property_name(p.name): p.name for p in params},
                  nntxt_fields={p.name: f"{fn}_param.{p.name}" for p in params})
    fields.update(more)
    return register(LayerSpec(type=type_name, group=group, doc=doc, params=list(params), n_inputs=n_inputs,
                              output_shape=output_shape, **fields))
