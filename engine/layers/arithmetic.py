"""Element-wise arithmetic on two inputs of equal shape: Add2 and Mul2."""
from __future__ import annotations

from .factory import equal_shapes, function_layer

function_layer("Add2", "Arithmetic", "add2", "Element-wise sum of two inputs of the same shape (e.g. a residual).",
               n_inputs=(2, 2), output_shape=equal_shapes("Add2"))
function_layer("Mul2", "Arithmetic", "mul2", "Element-wise product of two inputs of the same shape.",
               n_inputs=(2, 2), output_shape=equal_shapes("Mul2"))
