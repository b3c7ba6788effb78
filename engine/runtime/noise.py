"""The run's VATNoise noise buffers (``engine.network.noise_buffers``): one nnabla variable per buffer name,
shared by every graph built with the same ``NoiseBuffers``, as NNC shares ``Buf`` between the networks of a
VAT project (the power-iteration network writes the direction, the VAT network reads it).

A buffer needs ``need_grad``: nnabla calls a function's backward only when an input needs a gradient, and
VATNoise's backward is what writes the buffer. A VATNoise with ``Buf.Generator`` refills its buffer before
its network's forward pass (``fill``), as nnabla's optimizer fills its ``generator_variable``s: Normal
(standard deviation = multiplier), Uniform ([-multiplier, multiplier]) or Constant (= multiplier).
"""
from __future__ import annotations

import zlib
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

import numpy as np

Fill = Tuple[str, str, float]  # (buffer name, generator, multiplier)


class NoiseBuffers:
    """The noise buffers of one process's graphs (a trainer's, or one ``build_graph`` call's)."""

    def __init__(self, names: Iterable[str] = (), seed: Optional[int] = None, rank: int = 0):
        self.names: Set[str] = set(names)
        self._vars: Dict[str, Any] = {}
        base = int(seed) if seed is not None and int(seed) >= 0 else 0
        self._rng = np.random.RandomState(zlib.crc32(f"vat-noise/{base}/{int(rank)}".encode()) % (2 ** 32))

    def variable(self, name: str, shape: Tuple[int, ...]) -> Any:
        """The buffer ``name`` (batch axis first), created zero-filled on first use."""
        import nnabla as nn  # deferred: nnabla stays out of the GUI

        self.names.add(name)
        var = self._vars.get(name)
        if var is None:
            var = self._vars[name] = nn.Variable.from_numpy_array(np.zeros(shape, np.float32), need_grad=True)
        elif tuple(var.shape) != tuple(shape):
            raise ValueError(f"noise buffer '{name}' is used with shape {tuple(shape)[1:]} here but "
                             f"{tuple(var.shape)[1:]} elsewhere (batch axis left out); give its VATNoise inputs "
                             "and the Inputs reading it one shape")
        return var

    def fill(self, fills: List[Fill]) -> None:
        """Refill the generated buffers of a graph before its forward pass."""
        for name, kind, multiplier in fills:
            var = self._vars[name]
            shape, m = tuple(var.shape), float(multiplier)
            if kind == "Normal":
                var.d = self._rng.standard_normal(shape) * m
            elif kind == "Uniform":
                var.d = self._rng.uniform(-m, m, shape)
            elif kind == "Constant":
                var.d = np.full(shape, m, np.float32)
            else:
                raise ValueError(f"noise buffer '{name}': generator must be Normal, Uniform or Constant, got {kind!r}")
