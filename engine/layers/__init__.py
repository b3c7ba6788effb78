"""The layer registry (``registry``: one ``LayerSpec`` per type, with its parameters, shape rule, cost and
conversions) and the layer types themselves (``types/``, registered on import of this package).

Pure Python: nothing here imports nnabla until a layer's ``build`` function runs.
"""
from __future__ import annotations

from nnconsole.engine.layers.registry import (GROUPS, LayerSpec, ParamSpec, ShapeError, UnknownLayerType, all_specs,
                                              defaults, find_spec, fmt_shape, get_spec, groups, prod, register,
                                              resolve_params)
from nnconsole.engine.layers import types  # noqa: F401,E402 - registers every layer type

__all__ = ["GROUPS", "LayerSpec", "ParamSpec", "ShapeError", "UnknownLayerType", "all_specs", "defaults",
           "find_spec", "fmt_shape", "get_spec", "groups", "prod", "register", "resolve_params"]
