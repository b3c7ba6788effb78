"""NNC's weight initializers mapped onto nnabla's, with NNC's multiplier semantics.

NNC names each initializer for the layer kind it was designed for (``NormalAffineGlorot`` vs
``NormalConvolutionGlorot``); both compute the same formula from the fan-in/fan-out that the
owning layer passes here (Affine: input and output sizes, kernel (1,); Convolution: channels,
output maps and kernel shape), so either name works on either layer.

- ``Normal*Glorot``: N(0, s) with s = multiplier * sqrt(2 / (K (in + out)))  (calc_normal_std_glorot)
- ``Normal*He``: N(0, s) with s = multiplier * sqrt(2 / (K in))            (calc_normal_std_he_forward)
- ``Uniform*Glorot``: U(-l, l) with l = multiplier * sqrt(6 / (K (in + out))) (calc_uniform_lim_glorot)
- ``Normal``: N(0, multiplier); ``Uniform``: U(-multiplier, multiplier); ``Constant``: ``value``
  (the multiplier is ignored, as in NNC).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from nnconsole.engine.project.model import INITIALIZERS, Initializer


def check_initializer(init: Initializer) -> None:
    """ValueError when the type is not one of NNC's initializers."""
    if init.type not in INITIALIZERS:
        import difflib
        close = difflib.get_close_matches(str(init.type), INITIALIZERS, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ValueError(f"unknown initializer type {init.type!r}; {hint}choose one of {', '.join(INITIALIZERS)}")


def make_initializer(init: Initializer, inmaps: int, outmaps: int, kernel: Sequence[int] = (1,),
                     rng: Optional[Any] = None) -> Any:
    """An ``nnabla.initializer`` object for ``init`` given the owning layer's fans."""
    import nnabla.initializer as I

    check_initializer(init)
    kind = init.type
    m = float(init.multiplier)
    kernel = tuple(int(k) for k in kernel) or (1,)
    if kind in ("NormalAffineGlorot", "NormalConvolutionGlorot"):
        return I.NormalInitializer(m * I.calc_normal_std_glorot(inmaps, outmaps, kernel), rng=rng)
    if kind in ("NormalAffineHe", "NormalConvolutionHe"):
        return I.NormalInitializer(m * I.calc_normal_std_he_forward(inmaps, outmaps, kernel), rng=rng)
    if kind in ("UniformAffineGlorot", "UniformConvolutionGlorot"):
        lo, hi = I.calc_uniform_lim_glorot(inmaps, outmaps, kernel)
        return I.UniformInitializer((m * lo, m * hi), rng=rng)
    if kind == "Normal":
        return I.NormalInitializer(m, rng=rng)
    if kind == "Uniform":
        return I.UniformInitializer((-m, m), rng=rng)
    # Constant
    return I.ConstantInitializer(float(init.value))


def expected_std(init: Initializer, inmaps: int, outmaps: int, kernel: Sequence[int] = (1,)) -> float:
    """The standard deviation the initializer aims for (pure Python; used by tests and the GUI)."""
    import math

    check_initializer(init)
    k = 1
    for v in kernel:
        k *= int(v)
    m = float(init.multiplier)
    kind = init.type
    if kind.endswith("Glorot") and kind.startswith("Normal"):
        return m * math.sqrt(2.0 / (k * (inmaps + outmaps)))
    if kind.endswith("He"):
        return m * math.sqrt(2.0 / (k * inmaps))
    if kind.endswith("Glorot"):  # uniform: std = lim / sqrt(3)
        return m * math.sqrt(6.0 / (k * (inmaps + outmaps))) / math.sqrt(3.0)
    if kind == "Normal":
        return m
    if kind == "Uniform":
        return m / math.sqrt(3.0)
    return 0.0
