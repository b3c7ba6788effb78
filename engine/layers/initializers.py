"""NNC's 11 weight initializers mapped onto nnabla's, with NNC's multiplier semantics.

NNC names each initializer for the layer kind it was designed for (``NormalAffineGlorot`` vs
``NormalConvolutionGlorot``); both compute the same formula from the fan-in/fan-out that the
owning layer passes here (Affine: input and output sizes, kernel (1,); Convolution: channels,
output maps and kernel shape), so either name works on either layer. With K = prod(kernel):

- ``Normal*Glorot``: N(0, s), s = multiplier * sqrt(2 / (K (in + out)))     (calc_normal_std_glorot)
- ``Normal*He`` (NNC's ``HeForward``): s = multiplier * sqrt(2 / (K in))   (calc_normal_std_he_forward)
- ``Normal*HeBackward``: s = multiplier * sqrt(2 / (K out))                (calc_normal_std_he_backward)
- ``Uniform*Glorot``: U(-l, l), l = multiplier * sqrt(6 / (K (in + out)))    (calc_uniform_lim_glorot)
- ``Normal``: N(0, multiplier); ``Uniform``: U(-multiplier, multiplier); ``Constant``: ``value``
  (the multiplier is ignored, as in NNC).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import difflib
from nnconsole.engine.project.model import INITIALIZERS, Initializer

# NNC / nnabla initializer names -> nnconsole's (INITIALIZERS); NNC spells He as HeForward.
INITIALIZER_ALIASES: Dict[str, str] = {name: name for name in INITIALIZERS}
INITIALIZER_ALIASES.update({
    "NormalAffineHeForward": "NormalAffineHe", "NormalConvolutionHeForward": "NormalConvolutionHe",
})

# name -> (distribution, the nnabla.initializer function giving the std (normal) or limit (uniform)).
_FORMULAS: Dict[str, Tuple[str, str]] = {
    "NormalAffineGlorot": ("normal", "calc_normal_std_glorot"),
    "NormalConvolutionGlorot": ("normal", "calc_normal_std_glorot"),
    "NormalAffineHe": ("normal", "calc_normal_std_he_forward"),
    "NormalConvolutionHe": ("normal", "calc_normal_std_he_forward"),
    "NormalAffineHeBackward": ("normal", "calc_normal_std_he_backward"),
    "NormalConvolutionHeBackward": ("normal", "calc_normal_std_he_backward"),
    "UniformAffineGlorot": ("uniform", "calc_uniform_lim_glorot"),
    "UniformConvolutionGlorot": ("uniform", "calc_uniform_lim_glorot"),
}
# The same formulas in pure Python (no nnabla import), for the GUI and the plan: K, in, out -> std or limit.
_PURE: Dict[str, Callable[[int, int, int], float]] = {
    "calc_normal_std_glorot": lambda k, i, o: math.sqrt(2.0 / (k * (i + o))),
    "calc_normal_std_he_forward": lambda k, i, o: math.sqrt(2.0 / (k * i)),
    "calc_normal_std_he_backward": lambda k, i, o: math.sqrt(2.0 / (k * o)),
    "calc_uniform_lim_glorot": lambda k, i, o: math.sqrt(6.0 / (k * (i + o))),
}


def check_initializer(init: Initializer) -> None:
    """ValueError when the type is not one of NNC's initializers."""
    if init.type not in INITIALIZERS:
        close = difflib.get_close_matches(str(init.type), INITIALIZERS, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ValueError(f"unknown initializer type {init.type!r}; {hint}choose one of {', '.join(INITIALIZERS)}")


def make_initializer(init: Initializer, inmaps: int, outmaps: int, kernel: Sequence[int] = (1,),
                     rng: Optional[Any] = None) -> Any:
    """An ``nnabla.initializer`` object for ``init`` given the owning layer's fans."""
    import nnabla.initializer as I  # deferred: nnabla stays out of the GUI

    check_initializer(init)
    kind = init.type
    m = float(init.multiplier)
    kernel = tuple(int(k) for k in kernel) or (1,)
    if kind in _FORMULAS:
        distribution, function = _FORMULAS[kind]
        value = getattr(I, function)(inmaps, outmaps, kernel)
        if distribution == "uniform":
            lo, hi = value
            return I.UniformInitializer((m * lo, m * hi), rng=rng)
        return I.NormalInitializer(m * value, rng=rng)
    if kind == "Normal":
        return I.NormalInitializer(m, rng=rng)
    if kind == "Uniform":
        return I.UniformInitializer((-m, m), rng=rng)
    return I.ConstantInitializer(float(init.value))  # Constant


def expected_std(init: Initializer, inmaps: int, outmaps: int, kernel: Sequence[int] = (1,)) -> float:
    """The standard deviation the initializer aims for (pure Python; used by tests and the GUI)."""
    check_initializer(init)
    k = math.prod(int(v) for v in kernel) if kernel else 1
    m = float(init.multiplier)
    kind = init.type
    if kind in _FORMULAS:
        distribution, function = _FORMULAS[kind]
        value = m * _PURE[function](k, inmaps, outmaps)
        return value / math.sqrt(3.0) if distribution == "uniform" else value  # U(-l, l) has std l / sqrt(3)
    if kind == "Normal":
        return m
    if kind == "Uniform":
        return m / math.sqrt(3.0)
    return 0.0
