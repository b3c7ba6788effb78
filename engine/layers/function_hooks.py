"""Building blocks shared by the element-wise palette (Activation, Math, Trigonometric, Arithmetic,
Logical): builds whose axis parameters gain the batch axis, .nntxt hooks for nnabla arguments NNC
does not expose (fixed at nnabla's value), NNC's side data connector (R / x) properties, and shape
rules for reductions and inputs of one shape. Pure Python; builds import nnabla lazily.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

from nnconsole.engine.layers.nntxt_codec import (AXIS_PARAMS, Unsupported, axis_to_nnabla, f7, read_fields,
                                                 write_fields)
from nnconsole.engine.layers.registry import Shape, ShapeError, fmt_shape, norm_axis


def nnabla_kwargs(params: Mapping[str, Any]) -> Dict[str, Any]:
    """Parameters as nnabla keywords: axis/axes (without the batch axis here) gain the batch axis."""
    out = dict(params)
    for name in AXIS_PARAMS:
        if name in out:
            value = out[name]
            out[name] = [axis_to_nnabla(a) for a in value] if isinstance(value, (list, tuple)) \
                else axis_to_nnabla(value)
    return out


def no_gradient(y: Any) -> Any:
    """``y`` with need_grad off: backward stops there (nnabla's comparisons raise 'not_implemented' in
    backward), while forward still runs through it (unlike get_unlinked_variable, which cuts both)."""
    y.need_grad = False
    return y


def axis_build(fn: str, rename: Optional[Mapping[str, str]] = None, constant: bool = False) -> Callable:
    """A build calling ``F.<fn>(*inputs, **params)`` with axes counted with the batch axis; ``rename``
    maps a parameter to the Python keyword (nnabla's F.sum takes axis/keepdims for axes/keep_dims).
    ``constant``: no gradient flows back through the output (index outputs), see ``no_gradient``."""
    def build(ctx: Any, inputs: list, layer: Any) -> Any:
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI
        kwargs = {(rename or {}).get(k, k): v for k, v in nnabla_kwargs(ctx.params(layer)).items()}
        y = getattr(F, fn)(*inputs, **kwargs)
        return no_gradient(y) if constant else y
    return build


def fixed_nntxt(fields: Mapping[str, str], fixed: Mapping[str, Any]) -> tuple:
    """(to_nntxt, from_nntxt) hooks writing ``fields`` plus nnabla arguments NNC does not expose, at
    the value nnconsole uses (a missing protobuf message would make nnabla read 0, e.g. SoftPlus's
    beta); an imported file with another value is reported as unsupported."""
    def to_nntxt(f: Any, params: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
        write_fields(f, fields, params)
        for path, value in fixed.items():
            message, _, name = path.partition(".")
            setattr(getattr(f, message), name, value)

    def from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> dict:
        for path, value in fixed.items():
            message, _, name = path.partition(".")
            if f.HasField(message) and f7(getattr(getattr(f, message), name)) != f7(value):
                raise Unsupported(f"{name} {getattr(getattr(f, message), name)} (nnconsole uses {value})")
        return read_fields(f, fields)
    return to_nntxt, from_nntxt


def side_input_properties(*pins: str) -> Callable:
    """from_sdcproj hook for NNC's side data connectors (``R``, ``x``; ClipGradByValue's ``min`` and ``Max``):
    each operand comes from the link to its pin. An unlinked pin NNC fills from its ``<pin>.Generator`` or
    ``<pin>.Dataset``: for a layer with one side pin the .sdcproj reader adds an Input doing that
    (interop.sdcproj.network._unlinked_operand); a layer with two (ClipGradByValue) with a pin unlinked is left
    an input short, which the network check reports by name. The properties are handled here either way."""
    def hook(name: str, props: Mapping[str, Any], params: dict, unsupported: list) -> set:
        return {f"{pin}.{prop}" for pin in pins for prop in ("Dataset", "Generator", "GeneratorMultiplier")}
    return hook


def reduced_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    """Sum/Mean/Max/...: the ``axes`` removed (kept as 1 with ``keep_dims``)."""
    x = tuple(ins[0])
    listed = [norm_axis(a, len(x), "axes entry") for a in p["axes"]]
    axes = set(listed)
    if len(axes) != len(listed):  # nnabla's setup fails on a repeated axis
        raise ShapeError(f"axes {list(p['axes'])} name an axis more than once (negative entries count from the "
                         f"end of {fmt_shape(x)}); give each axis once")
    if p.get("with_index") and not p.get("only_index"):
        raise ShapeError("WithIndex gives two outputs (values and indices); nnconsole layers have one: "
                         "set OnlyIndex for the indices, or clear WithIndex for the values")
    return tuple(1 if i in axes else d for i, d in enumerate(x) if i not in axes or p["keep_dims"])


def doubled_axis_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    """CReLU/CELU: the positive and negative parts concatenated along ``axis``."""
    x = list(ins[0])
    a = norm_axis(p["axis"], len(x))
    x[a] *= 2
    return tuple(x)


def axis_checked_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    """Shape-preserving along a checked ``axis`` (LogSoftmax, CumSum, CumProd)."""
    norm_axis(p["axis"], len(ins[0]))
    return tuple(ins[0])


def same_shapes(type_name: str) -> Callable[[List[Shape], Mapping[str, Any]], Shape]:
    """Element-wise on any number of inputs that must have one shape (AddN, Greater, ATan2, ...)."""
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        first = tuple(ins[0])
        if any(tuple(s) != first for s in ins[1:]):
            raise ShapeError(f"{type_name} inputs must have equal shapes, got {', '.join(fmt_shape(s) for s in ins)}")
        return first
    return rule
