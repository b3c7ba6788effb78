"""The layer types, one module per palette group (or family), each registering its types on import.

Importing this package registers every type into ``nnconsole.engine.layers.registry``; nothing here
imports nnabla until a type's ``build`` function runs.
"""
from __future__ import annotations

# Registration order is the palette order within each group: keep it.
from nnconsole.engine.layers.types import (  # noqa: F401 - imported for their registrations
    inputs, basic, pooling, activation, normalization, arithmetic, structural, loss, validation, parameter,
    preprocess, math, trigonometric, logical, rearrange, value_filters, quantize, spectral, depthwise,
    instance_group_norms, weight_norms, repeat, recurrent, identity_broadcast_nms, data_kernels, unit, sequence_rnn,
    vat_noise)
