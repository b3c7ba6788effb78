"""The layer registry and the layer types (importing this package registers them all).

Pure Python: nothing here imports nnabla until a layer's ``build`` function runs.
"""
from __future__ import annotations

from .registry import (GROUPS, LayerSpec, ParamSpec, ShapeError, UnknownLayerType, all_specs, defaults,
                       find_spec, fmt_shape, get_spec, groups, prod, register, resolve_params)
from . import inputs, basic, pooling, activation, normalization, arithmetic, other, loss  # noqa: F401,E402
from . import validation  # noqa: F401,E402  (issue 16: TopNError, BinaryError)
from . import parameter  # noqa: F401,E402  (issue 16: Parameter, WorkingMemory)
from . import preprocess  # noqa: F401,E402  (issue 16: Others (Pre Process))
from . import math, trigonometric, logical  # noqa: F401,E402  (issue 16's element-wise palette)

__all__ = ["GROUPS", "LayerSpec", "ParamSpec", "ShapeError", "UnknownLayerType", "all_specs", "defaults",
           "find_spec", "fmt_shape", "get_spec", "groups", "prod", "register", "resolve_params"]
from . import others_shape, others_misc, quantize, spectral, depthwise, normalization_more, weight_norms  # noqa: F401,E402,E501  (issue 16)
from . import repeat  # noqa: F401,E402  (issue 17: RepeatStart, RepeatEnd)
from . import recurrent  # noqa: F401,E402  (issue 17: RecurrentInput, RecurrentOutput, Delay)
from . import others_more  # noqa: F401,E402  (issue 16: Identity, ClipGradByValue, BroadcastTo, NmsDetection2d)
from . import data_kernels  # noqa: F401,E402  (issue 16: AdaptiveSeparableConvolution)
from . import unit  # noqa: F401,E402  (issue 17: Unit, Argument)
from . import sequence_rnn  # noqa: F401,E402  (issue 17: LSTMSequence, GRUSequence, RNNSequence)
