"""The element-wise palette's cases (NNC's Activation, Math, Trigonometric, Arithmetic and Logical types):
per type its parameters, input shapes, input range and a numpy reference of what NNC/nnabla compute.
Used by the value tests (tests/engine/layers/test_elementwise.py) and the file and CLI tests
(tests/engine/layers/test_elementwise_interop.py)."""
from __future__ import annotations

import numpy as np


def _elu(x, alpha):
    return np.where(x > 0, x, alpha * (np.exp(x) - 1))


def _log_softmax(x, axis):
    m = x - x.max(axis=axis, keepdims=True)
    return m - np.log(np.exp(m).sum(axis=axis, keepdims=True))


def _cum(op, x, axis, exclusive, reverse):
    if reverse:
        x = np.flip(x, axis)
    y = op(x, axis=axis)
    if exclusive:
        y = y - x if op is np.cumsum else y / x
    return np.flip(y, axis) if reverse else y


S = (3, 4)
ANY, POS, UNIT, FROM1, BITS = (-1.0, 1.0), (0.2, 0.9), (-0.9, 0.9), (1.1, 2.0), "bits"
# type -> (params, input shapes, input range, numpy reference on the batched inputs); axes in params exclude
# the batch axis, the references count it.
CASES = {
    "Abs": ({}, [S], ANY, np.abs),
    "ReLU6": ({}, [S], (-2.0, 8.0), lambda x: np.clip(x, 0, 6)),
    "HardSigmoid": ({}, [S], (-4.0, 4.0), lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    "HardTanh": ({}, [S], (-2.0, 2.0), lambda x: np.clip(x, -1, 1)),
    "LogSigmoid": ({}, [S], ANY, lambda x: -np.log1p(np.exp(-x))),
    "Mish": ({}, [S], ANY, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "Sinc": ({}, [S], (0.1, 3.0), lambda x: np.sin(x) / x),
    "SoftSign": ({}, [S], ANY, lambda x: x / (1 + np.abs(x))),
    "TanhShrink": ({}, [S], ANY, lambda x: x - np.tanh(x)),
    "SoftPlus": ({}, [S], ANY, lambda x: np.log1p(np.exp(x))),
    "CELU": ({"alpha": 0.5, "axis": 1}, [S], ANY, lambda x: np.concatenate([_elu(x, .5), _elu(-x, .5)], 2)),
    "CReLU": ({}, [S], ANY, lambda x: np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], 1)),
    "LogSoftmax": ({}, [S], ANY, lambda x: _log_softmax(x, 1)),
    "PReLU": ({}, [S], ANY, lambda x: np.where(x > 0, x, 0.25 * x)),  # NNC's slope: Constant 0.25
    "Exp": ({}, [S], ANY, np.exp), "Log": ({}, [S], POS, np.log),
    "Ceil": ({}, [S], (-3.0, 3.0), np.ceil), "Floor": ({}, [S], (-3.0, 3.0), np.floor),
    "Round": ({}, [S], (-3.0, 3.0), np.round),
    "Sign": ({}, [S], ANY, np.sign),
    "CumSum": ({"axis": 1, "exclusive": True, "reverse": True}, [S], ANY,
               lambda x: _cum(np.cumsum, x, 2, True, True)),
    "CumProd": ({"axis": 0}, [S], POS, lambda x: np.cumprod(x, axis=1)),
    "Sum": ({"axes": [0, 2], "keep_dims": True}, [(2, 3, 4)], ANY, lambda x: x.sum(axis=(1, 3), keepdims=True)),
    "Mean": ({}, [S], ANY, lambda x: x.mean(axis=1)),
    "Prod": ({"axes": [1]}, [S], POS, lambda x: x.prod(axis=2)),
    "Max": ({"axes": [1], "only_index": True}, [S], ANY, lambda x: x.argmax(axis=2)),
    "Min": ({"axes": [-1], "keep_dims": True}, [(2, 3, 4)], ANY, lambda x: x.min(axis=3, keepdims=True)),
    "Norm": ({"p": 1.0, "axes": [1]}, [S], ANY, lambda x: np.abs(x).sum(axis=2)),
    "BatchInv": ({}, [(3, 3)], POS, np.linalg.inv),
    "BatchDet": ({}, [(3, 3)], POS, np.linalg.det),
    "BatchLogdet": ({}, [(1, 1)], POS, lambda x: np.log(np.linalg.det(x))),
    "BatchMatmul": ({}, [(3, 4), (4, 2)], ANY, np.matmul),
    "ATan2": ({}, [S, S], ANY, np.arctan2),
    "Sub2": ({}, [S, S], ANY, np.subtract), "Div2": ({}, [S, S], POS, np.divide),
    "Pow2": ({}, [S, S], POS, np.power), "Maximum2": ({}, [S, S], ANY, np.maximum),
    "Minimum2": ({}, [S, S], ANY, np.minimum),
    "AddN": ({}, [S, S, S], ANY, lambda a, b, c: a + b + c), "MulN": ({}, [S, S, S], ANY, lambda a, b, c: a * b * c),
    "AddScalar": ({}, [S], ANY, lambda x: x),  # NNC's default Value 0
    "MulScalar": ({"val": 2.5}, [S], ANY, lambda x: 2.5 * x),
    "RSubScalar": ({"val": 2.5}, [S], ANY, lambda x: 2.5 - x),
    "RDivScalar": ({"val": 2.5}, [S], POS, lambda x: 2.5 / x),
    "PowScalar": ({}, [S], ANY, lambda x: x ** 2),  # NNC's default Value 2
    "RPowScalar": ({"val": 2.5}, [S], ANY, lambda x: 2.5 ** x),
    "MaximumScalar": ({}, [S], ANY, lambda x: np.maximum(x, 0)),  # NNC's default Value 0
    "MinimumScalar": ({"val": 0.75}, [S], ANY, lambda x: np.minimum(x, 0.75)),
    "Equal": ({}, [S, S], BITS, lambda a, b: a == b), "NotEqual": ({}, [S, S], BITS, lambda a, b: a != b),
    "Greater": ({}, [S, S], ANY, np.greater), "GreaterEqual": ({}, [S, S], BITS, np.greater_equal),
    "Less": ({}, [S, S], ANY, np.less), "LessEqual": ({}, [S, S], BITS, np.less_equal),
    "LogicalAnd": ({}, [S, S], BITS, np.logical_and), "LogicalOr": ({}, [S, S], BITS, np.logical_or),
    "LogicalXor": ({}, [S, S], BITS, np.logical_xor), "LogicalNot": ({}, [S], BITS, np.logical_not),
    "EqualScalar": ({"val": 1.0}, [S], BITS, lambda x: x == 1), "NotEqualScalar": ({}, [S], BITS, lambda x: x != 0),
    "GreaterScalar": ({}, [S], ANY, lambda x: x > 0), "GreaterEqualScalar": ({"val": 1.0}, [S], BITS, lambda x: x >= 1),
    "LessScalar": ({"val": 0.5}, [S], ANY, lambda x: x < 0.5), "LessEqualScalar": ({}, [S], BITS, lambda x: x <= 0),
    "LogicalAndScalar": ({"val": 1.0}, [S], BITS, lambda x: x != 0),
    "LogicalOrScalar": ({}, [S], BITS, lambda x: x != 0),  # NNC's default Value 0 (false)
    "LogicalXorScalar": ({"val": 2.0}, [S], BITS, lambda x: x == 0),  # any non-zero Value is true
    "IsNaN": ({}, [S], "special", np.isnan), "IsInf": ({}, [S], "special", np.isinf),
}
for _name, _fn in (("Sin", np.sin), ("Cos", np.cos), ("Tan", np.tan), ("Sinh", np.sinh), ("Cosh", np.cosh),
                   ("ATan", np.arctan), ("ASinh", np.arcsinh), ("ASin", np.arcsin), ("ACos", np.arccos),
                   ("ATanh", np.arctanh)):
    CASES[_name] = ({}, [S], UNIT, _fn)
CASES["ACosh"] = ({}, [S], FROM1, np.arccosh)
