"""NNC's Others category, the rest of the palette that nnabla 1.39 runs: Identity, ClipGradByValue,
BroadcastTo and NmsDetection2d (issue 16).

ClipGradByValue and BroadcastTo take their other operands on NNC's side data pins (``min``/``Max``, ``y``),
linked like Sub2's ``R``. Shapes exclude the batch axis; nnabla sees both operands with it.
"""
from __future__ import annotations

from typing import Any, List, Mapping

from nnconsole.engine.layers.factory import function_layer
from nnconsole.engine.layers.function_hooks import no_gradient, same_shapes, side_input_properties
from nnconsole.engine.layers.nntxt_codec import Unsupported
from nnconsole.engine.layers.registry import ParamSpec, Shape, ShapeError, fmt_shape

_GROUP = "Other"

function_layer("Identity", _GROUP, "identity", "Passes its input on unchanged (a named point of the network, as "
               "in NNC).")

function_layer("ClipGradByValue", _GROUP, "clip_grad_by_value",
               "Identity forward; backward, clips each element's gradient to [min, Max], the values of its second "
               "and third inputs (NNC's min and Max pins) at that element.",
               n_inputs=(3, 3), input_names=("x", "min", "Max"), nnc_pins=(1, 2),
               output_shape=same_shapes("ClipGradByValue"), from_sdcproj=side_input_properties("min", "Max"))


# ------------------------------------------------------------------------------------- BroadcastTo
def _broadcast_to_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    """nnabla broadcasts y onto x's shape, batch axis included (y's dimensions must equal x's from ``axis``,
    -1 aligning them at the end). Per-sample inputs both carry the batch axis, so y fits only with x's shape
    and axis -1; any other pairing would tie an axis of x to the batch size."""
    x, y, axis = tuple(ins[0]), tuple(ins[1]), int(p["axis"])
    if axis != -1:
        raise ShapeError(f"BroadcastTo axis {axis}: y carries the batch axis, which would have to match axis "
                         f"{axis} of x {fmt_shape(x)} (a size that changes with the batch); use axis -1")
    if y != x:
        raise ShapeError(f"BroadcastTo y {fmt_shape(y)} must have x's shape {fmt_shape(x)}: nnabla aligns y, batch "
                         "axis included, with the end of x; for a smaller y use Broadcast or Tile")
    return x


def _broadcast_to_build(ctx: Any, inputs: list, layer: Any) -> Any:
    """nnabla 1.39 has no BroadcastTo backward ('not implemented'): the output is a constant for backward, so
    training stops there instead of failing (layers before it learn only through other paths)."""
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    return no_gradient(F.broadcast_to(inputs[0], inputs[1], axis=-1))


def _broadcast_to_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> dict:
    if f.HasField("broadcast_to_param") and int(f.broadcast_to_param.axis) != -1:
        raise Unsupported(f"axis {f.broadcast_to_param.axis} (nnconsole's BroadcastTo aligns y with the end of x)")
    return {"axis": -1}


function_layer("BroadcastTo", _GROUP, "broadcast_to",
               "Broadcasts its second input y (NNC's y pin) onto the first input's shape. With per-sample inputs "
               "y must have x's shape (nnabla counts the batch axis in y): the output is y. No gradient flows "
               "back through it (nnabla has no BroadcastTo backward).",
               [ParamSpec("axis", "int", -1, "Axis of x where y's dimensions start; -1 aligns them at the end "
                          "(the only choice that fits per-sample inputs).")],
               n_inputs=(2, 2), input_names=("x", "y"), output_shape=_broadcast_to_shape,
               build=_broadcast_to_build, from_sdcproj=side_input_properties("y"), from_nntxt=_broadcast_to_from_nntxt,
               caption=lambda p: "")


# ---------------------------------------------------------------------------------- NmsDetection2d
def _nms_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x = tuple(ins[0])
    if len(x) != 2 or x[1] < 6:
        raise ShapeError(f"NmsDetection2d expects (boxes, 5 + classes) per sample: x, y, w, h, objectness and at "
                         f"least one class probability for each box, got {fmt_shape(x)}")
    return x


function_layer("NmsDetection2d", _GROUP, "nms_detection2d",
               "Non-maximum suppression of 2-D detections (boxes, 5 + classes): class probabilities become "
               "probability x objectness, and those of boxes overlapping a higher-scoring box by more than NMS "
               "(IoU), or scoring below Thresh, become 0. No gradient flows back through it.",
               [ParamSpec("thresh", "float", 0.5, "Detection score below which a box is suppressed.", min=0.0,
                          max=1.0),
                ParamSpec("nms", "float", 0.45, "IoU above which the lower-scoring box is suppressed.", min=0.0,
                          max=1.0),
                ParamSpec("nms_per_class", "bool", True, "Suppress per class (score = objectness x class "
                          "probability), else by objectness over all classes.")],
               output_shape=_nms_shape, nnc_properties={"Thresh": "thresh", "NMS": "nms",
                                                        "NMSPerClass": "nms_per_class"},
               examples=(({}, ((4, 7),)), ({"thresh": 0.3, "nms": 0.6, "nms_per_class": False}, ((3, 6),))))
