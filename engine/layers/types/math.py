"""NNC's Math category: element-wise functions (Exp, Log, Round, Sign, ...), cumulative sums and
products, reductions (Sum, Mean, Max, Min, Prod, Norm) and batched matrix functions (BatchMatmul,
BatchInv, BatchDet, BatchLogdet). Axes exclude the batch axis, as in NNC's property sheet.
"""
from __future__ import annotations

from typing import Any, List, Mapping

from nnconsole.engine.layers.factory import function_layer
from nnconsole.engine.layers.function_hooks import axis_build, axis_checked_shape, reduced_shape
from nnconsole.engine.layers.registry import ParamSpec, Shape, ShapeError, fmt_shape, prod

for _type, _fn, _doc in (
        ("Exp", "exp", "Exponential e^x."),
        ("Log", "log", "Natural logarithm (inputs must be positive)."),
        ("Ceil", "ceil", "Rounds up to an integer (the gradient passes straight through)."),
        ("Floor", "floor", "Rounds down to an integer (the gradient passes straight through)."),
        ("Round", "round", "Rounds to the nearest integer (the gradient passes straight through)."),
):
    function_layer(_type, "Math", _fn, _doc)

# NNC's Sign maps 0 to Alpha (default 0); nnabla's default is 1, so the literal-default check is left out.
function_layer("Sign", "Math", "sign", "Sign of x (-1 or 1; Alpha at 0); the gradient passes straight through.",
               [ParamSpec("alpha", "float", 0.0, "The value at x = 0.")], nnabla_function="",
               examples=(({}, ((3, 4),)), ({"alpha": 0.5}, ((3, 4),))))

_CUM_EXAMPLES = (({}, ((3, 4),)), ({"axis": 1, "exclusive": True, "reverse": True}, ((3, 4),)))
_CUM_PARAMS = [ParamSpec("axis", "int", 0, "Axis (without the batch axis) to accumulate along."),
               ParamSpec("exclusive", "bool", False, "Leave out the element itself (start from 0 / 1)."),
               ParamSpec("reverse", "bool", False, "Accumulate from the end of the axis.")]
function_layer("CumSum", "Math", "cumsum", "Cumulative sum along an axis.", _CUM_PARAMS,
               output_shape=axis_checked_shape, build=axis_build("cumsum"), examples=_CUM_EXAMPLES)
function_layer("CumProd", "Math", "cumprod", "Cumulative product along an axis.", _CUM_PARAMS,
               output_shape=axis_checked_shape, build=axis_build("cumprod"), examples=_CUM_EXAMPLES)

# -- reductions: NNC's Axes/KeepDims are nnabla's axes/keep_dims (Python: axis/keepdims) ---------
_AXES = ParamSpec("axes", "ints", (0,), "Axes to reduce (without the batch axis); 0 is the first.", min=-32)
_KEEP = ParamSpec("keep_dims", "bool", False, "Keep each reduced axis with size 1.")
_INDEX = [ParamSpec("with_index", "bool", False, "Also return the index (only with OnlyIndex: one output)."),
          ParamSpec("only_index", "bool", False, "Output the index of the extreme value instead (no gradient).")]
_RENAME = {"axes": "axis", "keep_dims": "keepdims"}
for _type, _fn, _doc in (("Sum", "sum", "Sum over axes."), ("Mean", "mean", "Mean over axes."),
                         ("Prod", "prod", "Product over axes.")):
    function_layer(_type, "Math", _fn, _doc, [_AXES, _KEEP], output_shape=reduced_shape,
                   build=axis_build(_fn, _RENAME),
                   examples=(({}, ((3, 4),)), ({"axes": [0, 2], "keep_dims": True}, ((2, 3, 4),))))


def _extreme_build(fn: str):
    plain, indices = axis_build(fn, _RENAME), axis_build(fn, _RENAME, constant=True)

    def build(ctx: Any, inputs: list, layer: Any) -> Any:
        return (indices if ctx.params(layer)["only_index"] else plain)(ctx, inputs, layer)
    return build


for _type, _fn, _doc in (("Max", "max", "Maximum over axes (or its index, with OnlyIndex)."),
                         ("Min", "min", "Minimum over axes (or its index, with OnlyIndex).")):
    function_layer(_type, "Math", _fn, _doc, [_AXES, _KEEP] + _INDEX, output_shape=reduced_shape,
                   build=_extreme_build(_fn),
                   examples=(({}, ((3, 4),)), ({"axes": [1], "only_index": True}, ((3, 4),)),
                             ({"axes": [-1], "keep_dims": True}, ((2, 3, 4),))))
function_layer("Norm", "Math", "norm", "p-norm over axes: (sum |x|^p)^(1/p).",
               [ParamSpec("p", "float", 2.0, "The norm's order p.", min=1e-6), _AXES, _KEEP],
               output_shape=reduced_shape, build=axis_build("norm", _RENAME),
               examples=(({}, ((3, 4),)), ({"p": 1.0, "axes": [1]}, ((3, 4),))))


# -- batched matrices: each sample is a matrix (or a stack of them) -----------------------------
def _square(type_name: str):
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        x = tuple(ins[0])
        if len(x) != 2 or x[0] != x[1]:
            raise ShapeError(f"{type_name} expects each sample to be a square matrix (N, N), got {fmt_shape(x)}")
        return x
    return rule


def _det_shape(type_name: str):
    square = _square(type_name)

    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        square(ins, p)
        return ()
    return rule


def _cubed(ins: List[Shape], out: Shape, p: Mapping[str, Any]) -> int:
    """NNC's CostMultiplyAdd for BatchInv/BatchDet/BatchLogdet: N^3 for an (N, N) matrix."""
    return int(ins[0][0]) ** 3


function_layer("BatchInv", "Math", "batch_inv", "Inverse of each sample's square matrix.",
               output_shape=_square("BatchInv"), macs=_cubed, examples=(({}, ((3, 3),)),))
function_layer("BatchDet", "Math", "batch_det", "Determinant of each sample's square matrix (one value).",
               output_shape=_det_shape("BatchDet"), macs=_cubed, examples=(({}, ((3, 3),)),))
function_layer("BatchLogdet", "Math", "batch_logdet",
               "Log-determinant of each sample's square matrix (one value; the determinant must be positive).",
               output_shape=_det_shape("BatchLogdet"), macs=_cubed, examples=(({}, ((1, 1),)),))


def _matmul_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    a, b = tuple(ins[0]), tuple(ins[1])
    if len(a) < 2 or len(a) != len(b) or a[:-2] != b[:-2] or a[-1] != b[-2]:
        raise ShapeError(f"BatchMatmul multiplies (..., M, K) by (..., K, N) with the same leading axes, got "
                         f"{fmt_shape(a)} and {fmt_shape(b)}")
    return a[:-1] + b[-1:]


function_layer("BatchMatmul", "Math", "batch_matmul", "Matrix product of each sample's (M, K) and (K, N) matrices.",
               n_inputs=(2, 2), input_names=("a", "R"), output_shape=_matmul_shape,
               macs=lambda ins, out, p: prod(out) * int(ins[0][-1]),  # NNC: MatmulMultiplyAddSize
               examples=(({}, ((3, 4), (4, 2))), ({}, ((2, 3, 4), (2, 4, 5)))))
