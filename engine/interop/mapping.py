"""Name tables shared by the importers and the exporter, derived from the layer registry.

Everything about one layer type (its NNC/nnabla name, NNC property names, weight scope and order,
protobuf conversion) lives in its registration (nnconsole.engine.layers); this module only looks
the registry up by NNC/nnabla name (at call time, so later registrations count too), and holds
what belongs to no layer type: the
properties every NNC layer carries, the no-op and loop-control types, and initializer names.
Solver and scheduler names are in ``solver_table``.
"""
from __future__ import annotations

from typing import Optional, Tuple

from nnconsole.engine.layers import LayerSpec, all_specs, find_spec
from nnconsole.engine.layers.types.activation import SELU_ALPHA, SELU_SCALE  # noqa: F401  (re-exported)
from nnconsole.engine.layers import initializers


# ---------------------------------------------------------------------------------------- layers
# No-op types an importer may drop (their consumers read the layer's input instead). None today: NNC's
# Identity is a registered layer (engine/layers/types/identity_broadcast_nms.py), kept where the user put it.
PASS_THROUGH: Tuple[str, ...] = ()

# Loop-control types the importers expand into copies of the layers between them.
REPEAT_TYPES = ("RepeatStart", "RepeatEnd")

# Initial values of running statistics (BatchNormalization mean/var) when a file gives none.
RUNNING_STAT_INIT = {"mean": 0.0, "var": 1.0}

# NNC properties that are informative only (computed by the editor, or editor-only settings).
IGNORED_PROPERTIES = {
    "Name", "Input", "Inputs", "Output", "ParameterScope", "BorderMode", "InPlace", "IsLossFunction",
    "SkipAtInspection", "BatchStat", "IsParam", "Comment",
    "T.Dataset", "T.Generator", "T.GeneratorMultiplier", "Generator", "GeneratorMultiplier",
    "q.Dataset", "q.Generator", "q.GeneratorMultiplier",
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


def layer_spec(nnc_type: str) -> Optional[LayerSpec]:
    """The registration of an NNC/nnabla function type, or None when nnconsole has no equivalent.

    A type nnabla has no function for (NNC's Flatten, written to nnabla files as a Reshape) is found
    by its NNC name, as .sdcproj files spell it."""
    for spec in all_specs():
        if spec.nnc_name == nnc_type:
            return spec
    return None


def registry_type(nnc_type: str) -> Optional[str]:
    """The registry type for an NNC/nnabla function type, or None when nnconsole has no equivalent."""
    spec = layer_spec(nnc_type)
    return spec.type if spec else None


def non_trainable(type_name: Optional[str]) -> Tuple[str, ...]:
    """Weights of a registry type that are stored but never learned (running statistics)."""
    spec = find_spec(type_name or "")
    return spec.non_trainable if spec else ()


# ----------------------------------------------------------------------------------- initializers
# NNC / nnabla initializer names -> nnconsole's: one table, in layers.initializers (unit arguments use it too).
INITIALIZER_ALIASES = initializers.INITIALIZER_ALIASES


def initializer_type(nnc_name: str) -> Optional[str]:
    """nnconsole's initializer type for an NNC name, or None (e.g. HeBackward, CLConv, Range)."""
    return INITIALIZER_ALIASES.get(nnc_name)
