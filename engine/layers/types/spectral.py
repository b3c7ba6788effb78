"""NNC's Spectral category: FFT and IFFT over the last signal_ndim axes of complex inputs, whose
last axis holds (real, imaginary) pairs, as nnabla's F.fft/F.ifft take them.

nnabla 1.39 computes FFT/IFFT on CUDA only ("FFT forward not implemented in CPU yet"), so the
training graph computes the same transform as one matrix product per axis (cos/sin tables: exact,
differentiable, any device); exported .nntxt files keep nnabla's FFT/IFFT functions.
"""
from __future__ import annotations

from typing import Any, List, Mapping

import numpy as np
from nnconsole.engine.layers.factory import function_layer
from nnconsole.engine.layers.registry import ParamSpec, Shape, ShapeError, fmt_shape


def _complex_shape(type_name: str):
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        x, n = tuple(ins[0]), p["signal_ndim"]
        if len(x) < n + 1 or x[-1] != 2:
            raise ShapeError(f"{type_name} with signal_ndim {n} needs an input (..., {', '.join(['N'] * n)}, 2) whose "
                             f"last axis holds real and imaginary parts, got {fmt_shape(x)}")
        return x
    return rule


def _along(v: Any, table: Any, axis: int) -> Any:
    """sum_n table[k, n] * v[..., n, ...] along ``axis`` (the table is symmetric)."""
    import nnabla as nn  # deferred: nnabla stays out of the GUI
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI

    order = [a for a in range(v.ndim) if a != axis] + [axis]
    moved = F.transpose(v, order) if axis != v.ndim - 1 else v
    shape = moved.shape
    flat = F.reshape(moved, (-1, shape[-1]), inplace=False)
    out = F.reshape(F.affine(flat, nn.Variable.from_numpy_array(table, need_grad=False)), shape, inplace=False)
    if axis == v.ndim - 1:
        return out
    back = sorted(range(v.ndim), key=lambda a: order[a])
    return F.transpose(out, back)


def _dft_build(inverse: bool):
    def build(ctx: Any, inputs: list, layer: Any) -> Any:
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI

        p, x = ctx.params(layer), inputs[0]
        re, im = F.split(x, axis=x.ndim - 1)
        sign = 1.0 if inverse else -1.0
        for axis in range(x.ndim - 1 - p["signal_ndim"], x.ndim - 1):
            n = x.shape[axis]
            theta = 2 * np.pi * np.outer(np.arange(n), np.arange(n)) / n
            scale = 1 / np.sqrt(n) if p["normalized"] else (1 / n if inverse else 1.0)
            cos, sin = (np.cos(theta) * scale).astype(np.float32), (np.sin(theta) * scale).astype(np.float32)
            # (re + i im)(cos + sign i sin)
            re, im = (_along(re, cos, axis) - sign * _along(im, sin, axis),
                      _along(im, cos, axis) + sign * _along(re, sin, axis))
        return F.stack(re, im, axis=x.ndim - 1)
    return build


for _type, _fn, _what in (("FFT", "fft", "Discrete Fourier transform"),
                          ("IFFT", "ifft", "Inverse discrete Fourier transform")):
    function_layer(_type, "Spectral", _fn, f"{_what} over the last signal_ndim axes before the (real, imag) axis.",
                   [ParamSpec("signal_ndim", "int", 2, "Number of transformed axes (1 to 3).", min=1, max=3),
                    ParamSpec("normalized", "bool", False, "Unitary scaling (1/sqrt of the signal size).")],
                   output_shape=_complex_shape(_type), build=_dft_build(_type == "IFFT"), caption_always=True,
                   nnc_properties={"SignalNDim": "signal_ndim", "Normalized": "normalized"},
                   examples=(({}, ((3, 4, 2),)), ({"signal_ndim": 1, "normalized": True}, ((4, 2),))))
