"""NNC's VATNoise (Others): the noise of virtual adversarial training (Miyato et al.), nnabla's ``F.vat_noise``.

Forward, each sample of the input x is scaled to L2 norm Epsilon: ``y = eps x / sqrt(sum x^2 + 1e-8)`` (the
sums over the axes from BaseAxis on). Backward, no gradient reaches x; instead the gradient arriving at y,
times Epsilon, is WRITTEN into the noise buffer (NNC's ``Buf`` pin, the variable named by ``Buf.Dataset``,
'buf' by default). The buffer is one variable of the whole run, shared by every network that names it, so
NNC's VAT loop is a chain of optimizers over networks:

1. the power-iteration network: an Input reading ``buf`` feeds VATNoise (Epsilon = xi) with
   ``Buf.Generator=Normal``, so the buffer is filled with normal noise before that network runs; its
   KLMultinomial between the clean and the perturbed prediction back-propagates the direction of greatest
   change into ``buf`` (its optimizer learns nothing: its layers' learning-rate multipliers are 0);
2. the VAT network: an Input reading ``buf`` (now that direction) feeds VATNoise (Epsilon = the adversarial
   radius) whose output perturbs the unlabelled input; its KLMultinomial is the VAT loss its optimizer
   minimises, beside the cross entropy on labelled data.

In nnabla's files the buffer is the function's second input, a Buffer variable that every network of the
file names alike (declared by ``interop.nntxt.writers.buffer_variable``); ``Buf.Generator`` is the
optimizer's ``generator_variable`` on it. ``engine.network.
noise_buffers`` finds the buffers of a project; ``engine.runtime.graph`` shares them between graphs.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, register

GENERATORS = ("None", "Normal", "Uniform", "Constant")  # NNC's Buf.Generator options, in its order
DEFAULT_BUFFER = "buf"


def _shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x = tuple(ins[0])
    if not 0 <= int(p["base_axis"]) < len(x):
        raise ShapeError(f"VATNoise BaseAxis {p['base_axis']} is out of range for input {fmt_shape(x)}; use "
                         f"0..{len(x) - 1} (0: each sample is normalised as a whole)")
    if not str(p["buffer"]).strip():
        raise ShapeError("VATNoise needs a noise buffer name (NNC's Buf.Dataset), e.g. 'buf'")
    return x


def _build(ctx: Any, inputs: list, layer: Any) -> Any:
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    p = ctx.params(layer)
    x = inputs[0]
    w = ctx.noise_buffer(p["buffer"], tuple(x.shape), p["buffer_generator"], float(p["buffer_multiplier"]))
    return F.vat_noise(x, w, base_axis=int(p["base_axis"]) + 1, eps=float(p["eps"]))


def _to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    f.input.append(str(p["buffer"]))  # nnabla's second input w: the shared buffer variable
    f.vat_noise_param.base_axis = int(p["base_axis"]) + 1  # nnabla counts the batch axis
    f.vat_noise_param.eps = float(p["eps"])


def _from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    if f.HasField("vat_noise_param"):
        out["base_axis"] = max(int(f.vat_noise_param.base_axis) - 1, 0)
        out["eps"] = float(f"{f.vat_noise_param.eps:.7g}")
    if len(f.input) > 1:
        out["buffer"] = f.input[1]
    return out


def _caption(p: Mapping[str, Any]) -> str:
    gen = "" if p.get("buffer_generator", "None") == "None" else f" · {p['buffer_generator']}"
    return f"ε {float(p.get('eps', 1e-4)):g} · {p.get('buffer', DEFAULT_BUFFER)}{gen}"


register(LayerSpec(
    type="VATNoise", group="Other",
    doc="Noise of virtual adversarial training: scales each sample of its input to L2 norm eps; backward writes "
        "eps x the incoming gradient into the noise buffer (shared by every network naming it) instead of "
        "passing it on. With a Normal generator the buffer is refilled with noise before its network runs.",
    params=[
        ParamSpec("base_axis", "int", 0, "First axis (without the batch axis) of the norm; the axes before it "
                  "are normalised separately.", min=0),
        ParamSpec("eps", "float", 0.0001, "L2 norm of each output sample, and the factor of the gradient "
                  "written into the buffer.", min=0.0),
        ParamSpec("buffer", "str", DEFAULT_BUFFER, "The noise buffer (NNC's Buf.Dataset): the variable the "
                  "backward pass writes the gradient into, read by Input layers of that name in any network."),
        ParamSpec("buffer_generator", "enum", "None", "Fill the buffer before this layer's network runs: None "
                  "(keep what the last backward wrote), Normal, Uniform or Constant (NNC's Buf.Generator).",
                  choices=GENERATORS),
        ParamSpec("buffer_multiplier", "float", 1.0, "The generator's parameter (NNC's Buf.GeneratorMultiplier): "
                  "the standard deviation (Normal), the bound (Uniform) or the value (Constant)."),
    ],
    n_inputs=(1, 1), output_shape=_shape, build=_build,
    nnc_properties={"BaseAxis": "base_axis", "Epsilon": "eps", "Buf.Dataset": "buffer",
                    "Buf.Generator": "buffer_generator", "Buf.GeneratorMultiplier": "buffer_multiplier"},
    to_nntxt=_to_nntxt, from_nntxt=_from_nntxt, caption=_caption,
    examples=(({}, ((5,),)), ({"base_axis": 1, "eps": 2.0, "buffer": "buf2", "buffer_generator": "Normal"}, ((2, 3),))),
))
