"""NNC's Trigonometric category: element-wise sin/cos/tan, their inverses and hyperbolic variants, and
ATan2 of two inputs (NNC's ``x`` pin is the second)."""
from __future__ import annotations

from nnconsole.engine.layers.factory import function_layer
from nnconsole.engine.layers.function_hooks import same_shapes, side_input_properties

for _type, _fn, _doc in (
        ("Sin", "sin", "Sine."), ("Cos", "cos", "Cosine."), ("Tan", "tan", "Tangent."),
        ("Sinh", "sinh", "Hyperbolic sine."), ("Cosh", "cosh", "Hyperbolic cosine."),
        ("ASin", "asin", "Inverse sine (inputs in [-1, 1])."), ("ACos", "acos", "Inverse cosine (inputs in [-1, 1])."),
        ("ATan", "atan", "Inverse tangent."), ("ASinh", "asinh", "Inverse hyperbolic sine."),
        ("ACosh", "acosh", "Inverse hyperbolic cosine (inputs >= 1)."),
        ("ATanh", "atanh", "Inverse hyperbolic tangent (inputs in (-1, 1))."),
):
    function_layer(_type, "Trigonometric", _fn, _doc)

function_layer("ATan2", "Trigonometric", "atan2", "Angle of the point (x, y): atan(y / x) with the quadrant, "
               "y the first input and x the second.", n_inputs=(2, 2), input_names=("y", "x"),
               output_shape=same_shapes("ATan2"), from_sdcproj=side_input_properties("x"))
