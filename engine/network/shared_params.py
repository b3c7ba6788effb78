"""Parameter scopes shared between layers: one set of weights for every layer that names the same scope.

A layer's weights live under ``<scope>/<weight scope>/<key>`` (``disc/affine/W``) where the scope is the
layer's ``parameter_scope`` or, when empty, its name, as in NNC (ParameterScope, default the layer's
name). ``weight_scope_of`` is the one place that rule is written; ``share_parameters`` checks that
layers sharing a scope agree on the weights' shapes and counts shared weights once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Tuple

from nnconsole.engine.layers.registry import fmt_shape, get_spec, prod
from nnconsole.engine.project.model import Layer


@dataclass
@dataclass
class UnitInnerLayer(Layer):
    """A layer that a Unit's expansion made: its name and parameter scope contain '/' by design
    (``u1/fc``); dataclasses.replace and copy keep the class, so checks can tell it from a user's layer.
    ``scope_given``: the user named its scope (layers naming one scope share weights, in every repetition of a
    repeat block too); otherwise its scope is its names', and each repetition gets its own (``u1/fc[0]``)."""

    scope_given: bool = False


def is_unit_inner(layer: Any) -> bool:
    """Whether a layer was made by expanding a Unit (its '/' names are by design)."""
    return isinstance(layer, UnitInnerLayer)


def weight_scope_of(layer: Any) -> str:
    """The parameter scope a layer's weights live under: its parameter_scope, else its name."""
    return (getattr(layer, "parameter_scope", "") or "").strip() or layer.name


def parameter_name(layer: Any, key: str) -> str:
    """The full nnabla name of one of a layer's weights (``conv1/conv/W``, ``disc/affine/b``)."""
    return f"{weight_scope_of(layer)}/{get_spec(layer.type).weight_scope}/{key}"


def share_parameters(info: Any, layers: Dict[str, Any]) -> None:
    """Count each shared weight once in ``info`` (a shapes.NetworkInfo) and report sharers whose weights
    differ in shape (nnabla could not give them one set)."""

    owner: Dict[str, Tuple[str, Tuple[int, ...]]] = {}
    for name in info.order:
        li = info.layers[name]
        layer = layers.get(name)
        if layer is not None and "/" in (getattr(layer, "parameter_scope", "") or "") and not is_unit_inner(layer):
            li.error = (f"parameter scope '{layer.parameter_scope}' must not contain '/' (nnabla uses it to "
                        "separate scopes); use a plain name such as 'disc'")
            info.errors.append((name, li.error))
            continue
        if layer is None or not li.weight_shapes or li.error:
            continue
        spec = get_spec(layer.type)
        for key, shape in li.weight_shapes.items():
            full = parameter_name(layer, key)
            if full not in owner:
                owner[full] = (name, tuple(shape))
                continue
            first, first_shape = owner[full]
            if first_shape != tuple(shape):
                li.error = (f"shares parameter scope '{weight_scope_of(layer)}' with layer '{first}', but its {key} "
                            f"has shape {fmt_shape(shape)} where '{first}' has {fmt_shape(first_shape)}; layers "
                            "sharing weights need inputs of the same size (or give this layer its own scope)")
                info.errors.append((name, li.error))
                break
            li.n_stored -= prod(shape)  # already counted with the first layer
            info.total_stored -= prod(shape)
            if key not in spec.non_trainable:
                li.n_params -= prod(shape)
                info.total_params -= prod(shape)
