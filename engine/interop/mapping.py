"""Name tables shared by the importers and the exporter, derived from the layer registry.

Everything about one layer type (its NNC/nnabla name, NNC property names, weight scope and order,
protobuf conversion) lives in its registration (nnconsole.engine.layers); this module only indexes
the registry the way the importers look things up, and holds what belongs to no layer type: the
properties every NNC layer carries, the no-op and loop-control types, and initializer names.
Solver and scheduler names are in ``solver_table``.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from nnconsole.engine.layers import all_specs
from nnconsole.engine.layers.activation import SELU_ALPHA, SELU_SCALE  # noqa: F401  (re-exported)
from nnconsole.engine.project.model import INITIALIZERS

from .solver_table import (LR_FIELD, SCHEDULER_TYPES, SOLVER_PARAM_FIELDS, SOLVER_PARAMETER_ALIASES,  # noqa: F401
                           SOLVER_TYPES, unsupported_solver_message)

# ---------------------------------------------------------------------------------------- layers
# NNC / nnabla function type -> nnconsole registry type. Types not listed here have no equivalent;
# types nnabla has no function for (exported as another, e.g. Flatten -> Reshape) are not read back.
LAYER_TYPES: Dict[str, str] = {s.nnc_name: s.type for s in all_specs() if not s.export_as}

# Registry types nnabla has no function for, and the function the exporter writes instead.
EXPORT_AS: Dict[str, str] = {s.type: s.export_as for s in all_specs() if s.export_as}

# No-op types an importer may drop (their consumers read the layer's input instead).
PASS_THROUGH = ("Identity",)

# Loop-control types the importers expand into copies of the layers between them.
REPEAT_TYPES = ("RepeatStart", "RepeatEnd")

# Parameter scope nnabla's parametric functions use, and the order the weights follow the data
# input among a function's inputs (the same order nnabla's functions take them).
WEIGHT_SCOPES: Dict[str, str] = {s.type: s.weight_scope for s in all_specs() if s.weight_scope}
WEIGHT_ORDER: Dict[str, Tuple[str, ...]] = {s.type: s.weight_order for s in all_specs() if s.weight_order}
# Running statistics: stored, never learned (learning-rate multiplier 0 in NNC files).
NON_TRAINABLE: Dict[str, Tuple[str, ...]] = {s.type: s.non_trainable for s in all_specs() if s.non_trainable}
RUNNING_STAT_INIT = {"mean": 0.0, "var": 1.0}

# NNC property name (the desktop editor's property sheet, .sdcproj) -> registry parameter name, per type.
PROPERTY_NAMES: Dict[str, Dict[str, str]] = {s.type: dict(s.nnc_properties) for s in all_specs()
                                             if not s.export_as}
# NNC properties that are informative only (computed by the editor, or editor-only settings).
IGNORED_PROPERTIES = {
    "Name", "Input", "Output", "BaseAxis", "ParameterScope", "BorderMode", "InPlace", "IsLossFunction",
    "SkipAtTest", "SkipAtInspection", "BatchStat", "Seed", "IsParam", "Comment",
    "T.Dataset", "T.Generator", "T.GeneratorMultiplier", "Generator", "GeneratorMultiplier",
    "Times", "ID",
}
IGNORED_PROPERTY_PREFIXES = ("Cost",)


def camel_to_snake(name: str) -> str:
    """'KernelShape' -> 'kernel_shape', 'WithBias' -> 'with_bias' (fallback for unlisted properties)."""
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper() or (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(ch.lower())
    return "".join(out).replace(".", "_")


def registry_type(nnc_type: str) -> Optional[str]:
    """The registry type for an NNC/nnabla function type, or None when nnconsole has no equivalent."""
    return LAYER_TYPES.get(nnc_type)


# ----------------------------------------------------------------------------------- initializers
# NNC / nnabla initializer names -> nnconsole's (INITIALIZERS); NNC spells He as HeForward.
INITIALIZER_ALIASES: Dict[str, str] = {name: name for name in INITIALIZERS}
INITIALIZER_ALIASES.update({
    "NormalAffineHeForward": "NormalAffineHe", "NormalConvolutionHeForward": "NormalConvolutionHe",
})


def initializer_type(nnc_name: str) -> Optional[str]:
    """nnconsole's initializer type for an NNC name, or None (e.g. HeBackward, CLConv, Range)."""
    return INITIALIZER_ALIASES.get(nnc_name)
