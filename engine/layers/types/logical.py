"""NNC's Logical category: comparisons and boolean logic giving 0/1 outputs (1 where true).

Their outputs are constants for backward (nnabla's backward of a comparison raises 'not_implemented'):
a network may contain them, and layers before them learn only through other paths (the build turns the
output's need_grad off, so backward stops there; forward runs through as usual).
Inputs are true where non-zero. NNC gives Greater/GreaterEqual/Less/LessEqual their second operand on
the ``R`` pin; the Logical*Scalar layers take NNC's Float ``Value`` (non-zero is true, nnabla's bool).
"""
from __future__ import annotations

from typing import Any, Mapping

from nnconsole.engine.layers.factory import function_layer
from nnconsole.engine.layers.function_hooks import no_gradient, same_shapes, side_input_properties
from nnconsole.engine.layers.nntxt_codec import f7
from nnconsole.engine.layers.registry import ParamSpec, Shape


def _comparison_build(fn: str, as_bool: bool = False):
    """F.<fn>(*inputs, **params) as a constant (0/1 has no gradient); ``as_bool``: val is nnabla's bool."""
    def build(ctx: Any, inputs: list, layer: Any) -> Any:
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI
        params = dict(ctx.params(layer))
        if as_bool:
            params["val"] = params["val"] != 0
        return no_gradient(getattr(F, fn)(*inputs, **params))
    return build


for _type, _fn, _doc in (("LogicalNot", "logical_not", "1 where the input is 0, else 0."),
                         ("IsNaN", "isnan", "1 where the input is NaN."),
                         ("IsInf", "isinf", "1 where the input is infinite.")):
    function_layer(_type, "Logical", _fn, _doc, build=_comparison_build(_fn))

for _type, _fn, _pin, _doc in (
        ("Equal", "equal", "", "1 where the inputs are equal."),
        ("NotEqual", "not_equal", "", "1 where the inputs differ."),
        ("Greater", "greater", "R", "1 where the first input is greater than the second (R)."),
        ("GreaterEqual", "greater_equal", "R", "1 where the first input is greater than or equal to the second (R)."),
        ("Less", "less", "R", "1 where the first input is less than the second (R)."),
        ("LessEqual", "less_equal", "R", "1 where the first input is less than or equal to the second (R)."),
        ("LogicalAnd", "logical_and", "", "1 where both inputs are non-zero."),
        ("LogicalOr", "logical_or", "", "1 where either input is non-zero."),
        ("LogicalXor", "logical_xor", "", "1 where exactly one input is non-zero."),
):
    extra = dict(input_names=("x", _pin), from_sdcproj=side_input_properties(_pin)) if _pin else {}
    function_layer(_type, "Logical", _fn, _doc, n_inputs=(2, 2), output_shape=same_shapes(_type),
                   build=_comparison_build(_fn), **extra)

# NNC's Value defaults to 0 (nnabla's val to 1), so the literal-default check is left out for these.
_VAL = ParamSpec("val", "float", 0.0, "The scalar Value compared with.")
for _type, _fn, _doc in (("EqualScalar", "equal_scalar", "1 where x equals Value."),
                         ("NotEqualScalar", "not_equal_scalar", "1 where x differs from Value."),
                         ("GreaterScalar", "greater_scalar", "1 where x > Value."),
                         ("GreaterEqualScalar", "greater_equal_scalar", "1 where x >= Value."),
                         ("LessScalar", "less_scalar", "1 where x < Value."),
                         ("LessEqualScalar", "less_equal_scalar", "1 where x <= Value.")):
    function_layer(_type, "Logical", _fn, _doc, [_VAL], nnc_properties={"Value": "val"}, caption_always=True,
                   build=_comparison_build(_fn), nnabla_function="",
                   examples=(({}, ((3, 4),)), ({"val": 0.5}, ((3, 4),))))


def _bool_val_hooks(fn: str) -> tuple:
    """nnabla's logical_*_scalar take a bool val; NNC's Value is a Float (non-zero is true)."""
    def to_nntxt(f: Any, params: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
        getattr(f, f"{fn}_param").val = params["val"] != 0

    def from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> dict:
        message = f"{fn}_param"
        return {"val": f7(float(getattr(f, message).val))} if f.HasField(message) else {}
    return to_nntxt, from_nntxt


for _type, _fn, _doc in (("LogicalAndScalar", "logical_and_scalar", "1 where x and Value are both non-zero."),
                         ("LogicalOrScalar", "logical_or_scalar", "1 where x or Value is non-zero."),
                         ("LogicalXorScalar", "logical_xor_scalar", "1 where exactly one of x and Value is non-zero.")):
    _to, _from = _bool_val_hooks(_fn)
    function_layer(_type, "Logical", _fn, _doc, [_VAL], nnc_properties={"Value": "val"}, caption_always=True,
                   build=_comparison_build(_fn, as_bool=True), to_nntxt=_to, from_nntxt=_from, nnabla_function="",
                   examples=(({}, ((3, 4),)), ({"val": 1.0}, ((3, 4),))))
