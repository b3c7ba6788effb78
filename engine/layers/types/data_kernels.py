"""NNC's Basic layers whose kernels come from data inputs: AdaptiveSeparableConvolution (issue 16).

Its per-pixel vertical and horizontal kernels arrive on NNC's side data pins V and H (pins 1 and 2), linked
like Sub2's R, typically from layers that predict them. Shapes exclude the batch axis.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.layers.captions import fmt_dims
from nnconsole.engine.layers.function_hooks import side_input_properties
from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, prod, register


def _separable_geometry(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x, v, h = (tuple(s) for s in ins)
    kernel = tuple(p["kernel_shape"])
    if len(kernel) != 2:
        raise ShapeError(f"AdaptiveSeparableConvolution kernel_shape {list(kernel)} must be 2 numbers (vertical, "
                         "horizontal)")
    if len(x) != 3:
        raise ShapeError(f"AdaptiveSeparableConvolution expects an image (channels, H, W), got {fmt_shape(x)}")
    kv, kh = kernel
    out = (x[1] - kv + 1, x[2] - kh + 1)
    if min(out) < 1:
        raise ShapeError(f"AdaptiveSeparableConvolution kernel {kv}x{kh} is larger than the input {fmt_shape(x)}; "
                         "pad the input first (NNC's Pad) or use a smaller kernel_shape")
    for pin, got, size in (("V", v, kv), ("H", h, kh)):
        want = (size,) + out
        if got != want:
            raise ShapeError(f"AdaptiveSeparableConvolution's {pin} input must be {fmt_shape(want)} (kernel {size} "
                             f"taps at each of the {out[0]}x{out[1]} output pixels), got {fmt_shape(got)}")
    return (x[0],) + out


def _separable_build(ctx: Any, inputs: list, layer: Any) -> Any:
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    return F.adaptive_separable_convolution(*inputs)


def _separable_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    """The kernel size is the V and H inputs' first axis (nnabla's function has no parameters)."""
    return {"kernel_shape": [int(in_shapes[1][0]), int(in_shapes[2][0])]}


register(LayerSpec(
    type="AdaptiveSeparableConvolution", group="Basic",
    doc="Convolves each pixel of the image with its own separable kernel: the outer product of a vertical (V "
        "input) and a horizontal (H input) 1-D kernel given per output pixel, the same for every channel.",
    params=[ParamSpec("kernel_shape", "ints", (3, 3), "Vertical and horizontal kernel sizes (the V and H inputs' "
                      "first axis).", min=1, min_len=2, max_len=2)],
    n_inputs=(3, 3), input_names=("x", "V", "H"), nnc_pins=(1, 2),
    output_shape=_separable_geometry, build=_separable_build,
    macs=lambda ins, out, p: prod(out) * prod(p["kernel_shape"]),
    nnc_properties={"KernelShape": "kernel_shape"}, from_sdcproj=side_input_properties("V", "H"),
    from_nntxt=_separable_from_nntxt,
    caption=lambda p: fmt_dims(p.get("kernel_shape", ())),
    examples=(({}, ((2, 6, 7), (3, 4, 5), (3, 4, 5))), ({"kernel_shape": [2, 4]}, ((1, 5, 5), (2, 4, 2), (4, 4, 2)))),
))
