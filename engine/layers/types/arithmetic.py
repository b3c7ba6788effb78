"""NNC's Arithmetic categories: two inputs of one shape (Add2, Sub2, Mul2, Div2, Pow2, Maximum2,
Minimum2), N inputs (AddN, MulN) and one input with a scalar (AddScalar ... RPowScalar, NNC's
``Value`` property, nnabla's ``val``). NNC gives Sub2/Div2/Pow2 their second operand on the ``R`` pin.
"""
from __future__ import annotations

from nnconsole.engine.layers.factory import equal_shapes, function_layer
from nnconsole.engine.layers.function_hooks import same_shapes, side_input_properties
from nnconsole.engine.layers.registry import ParamSpec

function_layer("Add2", "Arithmetic", "add2", "Element-wise sum of two inputs of the same shape (e.g. a residual).",
               n_inputs=(2, 2), output_shape=equal_shapes("Add2"))
function_layer("Mul2", "Arithmetic", "mul2", "Element-wise product of two inputs of the same shape.",
               n_inputs=(2, 2), output_shape=equal_shapes("Mul2"))
for _type, _fn, _doc in (("Sub2", "sub2", "First input minus the second (R)."),
                         ("Div2", "div2", "First input divided by the second (R)."),
                         ("Pow2", "pow2", "First input to the power of the second (R).")):
    function_layer(_type, "Arithmetic", _fn, _doc, n_inputs=(2, 2), input_names=("x", "R"),
                   output_shape=equal_shapes(_type), from_sdcproj=side_input_properties("R"))
for _type, _fn, _doc in (("Maximum2", "maximum2", "Element-wise maximum of two inputs."),
                         ("Minimum2", "minimum2", "Element-wise minimum of two inputs.")):
    function_layer(_type, "Arithmetic", _fn, _doc, n_inputs=(2, 2), output_shape=equal_shapes(_type))


def _n_build(fn: str):
    def build(ctx, inputs, layer):
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI
        return getattr(F, fn)(*inputs)
    return build


function_layer("AddN", "Arithmetic", "add_n", "Element-wise sum of two or more inputs of one shape.",
               n_inputs=(2, None), output_shape=same_shapes("AddN"), build=_n_build("add_n"),
               examples=(({}, ((3, 4),) * 3),))
function_layer("MulN", "Arithmetic", "mul_n", "Element-wise product of two or more inputs of one shape.",
               n_inputs=(2, None), output_shape=same_shapes("MulN"), build=_n_build("mul_n"),
               examples=(({}, ((3, 4),) * 3),))

def _formula_caption(formula: str, default: float):
    """A node caption such as 'x + 2.5' (the value as stored when it is not a number)."""
    def caption(params) -> str:
        value = params.get("val", default)
        try:
            return formula.format(v=f"{float(value):g}")
        except (TypeError, ValueError):
            return formula.format(v=value)
    return caption


# NNC's defaults; where nnabla's default val differs (AddScalar: 1), the literal-default check is left out.
for _type, _fn, _default, _formula in (
        ("AddScalar", "add_scalar", 0.0, "x + {v}"),
        ("MulScalar", "mul_scalar", 1.0, "x × {v}"),
        ("RSubScalar", "r_sub_scalar", 0.0, "{v} − x"),
        ("RDivScalar", "r_div_scalar", 1.0, "{v} / x"),
        ("PowScalar", "pow_scalar", 2.0, "x ^ {v}"),
        ("RPowScalar", "r_pow_scalar", 1.0, "{v} ^ x"),
        ("MaximumScalar", "maximum_scalar", 0.0, "max(x, {v})"),
        ("MinimumScalar", "minimum_scalar", 1.0, "min(x, {v})"),
):
    function_layer(_type, "Arithmetic", _fn, _formula.format(v="Value") + ".",
                   [ParamSpec("val", "float", _default, "The scalar Value.")], nnc_properties={"Value": "val"},
                   caption=_formula_caption(_formula, _default),
                   nnabla_function=_fn if _default in (1.0,) else "",
                   examples=(({}, ((3, 4),)), ({"val": 2.5}, ((3, 4),))))
