"""The layer registry: what each layer type is called, which parameters it takes, and its rules.

A ``LayerSpec`` bundles everything the rest of nnconsole needs to know about one layer type:
parameter specs (``params``), the number of inputs, default weight initializers, a shape rule,
weight shapes, a multiply-add count, an nnabla ``build`` function, its loss role (runtime head,
class-index target), its names and conversions in NNC (.sdcproj) and nnabla (.nntxt/.nnp) files,
its weight scope, its node caption and its palette group (``groups``). Importers, the exporter and
the GUI read these fields; no other module keeps a table of layer types, so adding a type is one
registration (``factory.function_layer`` for a type that is one nnabla function). Shape rules and
parameter checks are pure Python so that the GUI can call them on every edit without importing
nnabla; only ``build`` functions import nnabla, lazily.

Shapes here always EXCLUDE the batch dimension, NNC style (an 8x8 grey image is ``(1, 8, 8)``).
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from nnconsole.engine.project.model import Initializer

from nnconsole.engine.layers import captions
from nnconsole.engine.layers.groups import GROUPS
from nnconsole.engine.layers.params import PARAM_KINDS, ParamSpec  # noqa: F401  (re-exported: layer modules import them from here)

Shape = Tuple[int, ...]


class ShapeError(ValueError):
    """A layer's shape rule failed; the message says what was expected and what was found."""


class UnknownLayerType(KeyError):
    """No layer type of that name; ``str()`` gives the readable message (not KeyError's repr)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown layer type"


def fmt_shape(shape: Sequence[int]) -> str:
    """(16, 4, 4) -> '(16, 4, 4)', (10,) -> '(10,)'."""
    return str(tuple(int(s) for s in shape))


def prod(values: Sequence[int]) -> int:
    return int(math.prod(values)) if values else 1


def per_dim(values: Sequence[int], kernel: Sequence[int], name: str, owner: str = "") -> Tuple[int, ...]:
    """pad/stride/dilation with one entry per kernel dimension.

    A list whose entries are all equal (such as the default [1, 1] or a single [1]) is repeated to
    the kernel's length, so changing a 2-D kernel to 1-D or 3-D does not break the defaults. Any other
    length mismatch raises ShapeError; ``owner`` (a layer type) prefixes the message when given.
    """
    values = tuple(values)
    n = len(kernel)
    if len(values) == n:
        return values
    if values and len(set(values)) == 1:
        return (values[0],) * n
    prefix = f"{owner} " if owner else ""
    raise ShapeError(f"{prefix}{name} {list(values)} has {len(values)} entries but kernel {list(kernel)} has {n}; "
                     f"give one {name} per kernel dimension")


def _no_weights(in_shapes: List[Shape], params: Mapping[str, Any]) -> Dict[str, Shape]:
    return {}


def _no_macs(in_shapes: List[Shape], out_shape: Shape, params: Mapping[str, Any]) -> int:
    return 0


def _no_build(ctx: Any, inputs: list, layer: Any) -> Any:  # pragma: no cover - Input layers
    raise NotImplementedError("this layer has no build function (Input layers are created by build_graph)")


@dataclass
class LayerSpec:
    """Everything nnconsole knows about one layer type.

    ``output_shape``, ``weight_shapes`` and ``macs`` receive input shapes without the batch axis
    and the parameters as returned by ``resolve_params`` (checked, defaults filled in).
    ``weight_shapes`` returns the exact nnabla parameter shapes keyed by weight name (W, b, beta,
    gamma, mean, var); names listed in ``non_trainable`` (BatchNormalization's running mean/var)
    are stored but not learned, and are not counted in n_params.
    ``build(ctx, inputs, layer)`` runs under ``nn.parameter_scope(layer.name)`` and returns the
    output nn.Variable (with the batch axis); see nnconsole.engine.runtime.graph.BuildContext for ``ctx``.
    """

    type: str
    group: str
    doc: str
    params: List[ParamSpec]
    n_inputs: Tuple[int, Optional[int]]
    output_shape: Callable[[List[Shape], Mapping[str, Any]], Shape]
    build: Callable[[Any, list, Any], Any] = _no_build
    weight_shapes: Callable[[List[Shape], Mapping[str, Any]], Dict[str, Shape]] = _no_weights
    macs: Callable[[List[Shape], Shape, Mapping[str, Any]], int] = _no_macs
    weights: Dict[str, Initializer] = field(default_factory=dict)
    non_trainable: Tuple[str, ...] = ()
    input_names: Tuple[str, ...] = ()
    # NNC's DestPinIndex of each input after the first when a type has several side data pins (NNC numbers a
    # layer's [InputSideConnector] entries from 1, parameter pins included); () = one side pin at 1, or none.
    nnc_pins: Tuple[int, ...] = ()
    is_input: bool = False
    is_loss: bool = False
    inference_differs: bool = False
    # Losses only: 'classification' or 'regression', and how build_graph computes the error:
    # error(prediction, target, params, loss_output) -> nn.Variable with the batch axis first
    # (per-element errors; build_graph averages them over the non-batch axes).
    task: Optional[str] = None
    error: Optional[Callable[[Any, Any, Mapping[str, Any], Any], Any]] = None
    # Losses only: the function the runtime network ends in ('Softmax', 'Sigmoid' or '' for none),
    # and whether the target is an integer class index along ``axis`` (SoftmaxCrossEntropy).
    runtime_head: str = ""
    class_index_target: bool = False
    # Validation layers (TopNError, BinaryError): loss-like (prediction and target inputs, left out of runtime
    # networks) but not learned from; when present the first one computes the error curve.
    is_metric: bool = False
    # -- interchange with Neural Network Console (.sdcproj) and nnabla (.nntxt/.nnp) -----------
    # NNC / nnabla function type ('' = the same as ``type``); the nnabla function an exported file
    # uses when nnabla has none of that name (Flatten -> Reshape).
    nnc_type: str = ""
    export_as: str = ""
    # '' for NNC's palette types; else why NNC has no such layer (nnabla's fused F.lstm): .sdcproj export says so.
    outside_nnc: str = ""
    # The nnabla function ``build`` calls with the parameters as keywords (set by factory.function_layer;
    # tests check the parameter names and defaults against nnabla's function metadata).
    nnabla_function: str = ""
    # NNC property name (.sdcproj, NNC's property sheet) -> parameter name; values are converted by
    # the parameter's kind; axes in NNC's sheet exclude the batch axis, as here.
    nnc_properties: Dict[str, str] = field(default_factory=dict)
    # nnabla's parameter scope (``<layer>/<scope>/W``) and the order its weights follow the data input.
    weight_scope: str = ""
    weight_order: Tuple[str, ...] = ()
    # Parameter -> nnabla protobuf field ('leaky_relu_param.alpha', NNC's ArgumentName); axes ('int'
    # parameters named axis/axes) gain the batch axis on export. Used when no hook is given.
    nntxt_fields: Dict[str, str] = field(default_factory=dict)
    # Hooks for what a field table cannot say (see nnconsole.engine.layers.nntxt_codec):
    # to_nntxt(function_msg, params, in_shapes, out_shape, mode) fills the *_param message;
    # from_nntxt(function_msg, in_shapes, weight_shapes) -> params, raising Unsupported.
    to_nntxt: Optional[Callable[..., None]] = None
    # nntxt_expand(network_msg, in_shapes, out_shape): replaces the function just written for the layer (the
    # network's last) by several functions, for a layer nnabla computes in steps (LSTMSequence's transposes).
    nntxt_expand: Optional[Callable[..., None]] = None
    from_nntxt: Optional[Callable[..., Dict[str, Any]]] = None
    # from_sdcproj(name, props, params, unsupported) -> NNC properties it handled itself, after the
    # nnc_properties table filled ``params`` (props are resolved property texts).
    from_sdcproj: Optional[Callable[..., Any]] = None
    # to_sdcproj(params) -> {NNC property: text} for what the nnc_properties table cannot say (the export
    # direction of from_sdcproj); those properties replace the table's.
    to_sdcproj: Optional[Callable[[Mapping[str, Any]], Dict[str, str]]] = None
    # The short text a node shows under its name (EDIT tab); None: the parameters that differ from
    # the defaults (every parameter when ``caption_always``).
    caption: Optional[Callable[[Mapping[str, Any]], str]] = None
    caption_always: bool = False
    # (params, input shapes) the test suites build this type with (shapes against nnabla's graph,
    # file round trips); none given: the defaults on (3, 4) inputs, see ``example_cases``.
    examples: Tuple[Tuple[Dict[str, Any], Tuple[Shape, ...]], ...] = ()
    # Loop control (RecurrentInput/Output, Delay) and recurrent units (NNC's LSTM): blocks the network unrolls
    # before it is checked or built (nnconsole.engine.network.recurrent_unroll), so single-layer test cases skip them.
    loop_control: bool = False

    def example_cases(self) -> List[Tuple[Dict[str, Any], Tuple[Shape, ...]]]:
        """The ``examples``, or the defaults on ``n_inputs`` inputs of shape (3, 4)."""
        if self.examples:
            return [(dict(p), tuple(shapes)) for p, shapes in self.examples]
        return [({}, ((3, 4),) * max(self.n_inputs[0], 1))]

    @property
    def nnc_name(self) -> str:
        """The type's name in NNC and nnabla files."""
        return self.nnc_type or self.type

    @property
    def uses_batch_stat(self) -> bool:
        """The layer normalises with batch statistics while training (running ones otherwise)."""
        return "mean" in self.non_trainable

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(f"LayerSpec {self.type}: group must be one of {GROUPS}, got {self.group!r}")

    def param(self, name: str) -> ParamSpec:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def defaults(self) -> Dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def inputs_message(self, got: int) -> Optional[str]:
        """None when ``got`` inputs are acceptable, else a message such as 'Affine expects 1 input, got 2'."""
        lo, hi = self.n_inputs
        if got >= lo and (hi is None or got <= hi):
            return None
        names = f" ({', '.join(self.input_names)})" if self.input_names else ""
        if hi is None:
            want = f"at least {lo} input{'s' if lo != 1 else ''}"
        elif lo == hi == 0:
            want = "no inputs"
        elif lo == hi:
            want = f"{lo} input{'s' if lo != 1 else ''}{names}"
        else:
            want = f"{lo} to {hi} inputs"
        return f"{self.type} expects {want}, got {got}"


_REGISTRY: Dict[str, LayerSpec] = {}


def register(spec: LayerSpec) -> LayerSpec:
    """Add a spec to the registry (layer modules call this at import time)."""
    if spec.type in _REGISTRY:
        raise ValueError(f"layer type {spec.type} registered twice")
    for p in spec.params:  # a spec whose defaults fail its own checks is a programming error
        p.check(p.default)
    _REGISTRY[spec.type] = spec
    return spec


def get_spec(type_name: str) -> LayerSpec:
    """The spec for a layer type; UnknownLayerType (a KeyError) suggests close names."""
    spec = _REGISTRY.get(type_name)
    if spec is not None:
        return spec
    names = list(_REGISTRY)
    lowered = {n.lower(): n for n in names}
    guesses: List[str] = []
    if isinstance(type_name, str):
        if type_name.lower() in lowered:
            guesses.append(lowered[type_name.lower()])
        else:
            guesses = [lowered[g] for g in difflib.get_close_matches(type_name.lower(), list(lowered), n=3,
                                                                     cutoff=0.6)]
    hint = f"; did you mean {' or '.join(repr(g) for g in guesses)}?" if guesses else \
        f"; known types: {', '.join(sorted(names))}"
    raise UnknownLayerType(f"unknown layer type {type_name!r}{hint}")


def find_spec(type_name: str) -> Optional[LayerSpec]:
    """The spec for a layer type, or None when no such type is registered."""
    return _REGISTRY.get(type_name) if isinstance(type_name, str) else None


def all_specs() -> List[LayerSpec]:
    """Every registered spec, in palette order (group order, then registration order)."""
    order = {g: i for i, g in enumerate(GROUPS)}
    return sorted(_REGISTRY.values(), key=lambda s: order[s.group])


def groups() -> Dict[str, List[LayerSpec]]:
    """Palette: group name -> specs, groups in GROUPS order (empty groups omitted)."""
    out: Dict[str, List[LayerSpec]] = {}
    for spec in all_specs():
        out.setdefault(spec.group, []).append(spec)
    return out


def defaults(type_name: str) -> Dict[str, Any]:
    """Default parameter values of a layer type (as a fresh dict, safe to store in a Layer)."""
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in get_spec(type_name).defaults().items()}


def resolve_params(type_name: str, params: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """Checked parameters with defaults filled in; ValueError lists every bad or unknown one."""
    spec = get_spec(type_name)
    if params is not None and not isinstance(params, Mapping):
        raise ValueError(f"params must be a mapping of name: value, got {type(params).__name__}")
    params = dict(params or {})
    out: Dict[str, Any] = {}
    problems: List[str] = []
    for p in spec.params:
        value = params.pop(p.name, p.default)
        try:
            out[p.name] = p.check(value)
        except ValueError as exc:
            problems.append(str(exc))
    known = [p.name for p in spec.params]
    for name in params:
        close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'? " if close else ""
        problems.append(f"unknown parameter '{name}' for {spec.type}; {hint}"
                        f"known: {', '.join(known) if known else 'none'}")
    if problems:
        raise ValueError("; ".join(problems))
    return out


def norm_axis(axis: int, ndim: int, what: str = "axis") -> int:
    """A non-negative axis in shape-without-batch terms; negative counts from the end."""
    a = axis + ndim if axis < 0 else axis
    if not 0 <= a < ndim:
        raise ShapeError(f"{what} {axis} is out of range for an input with {ndim} dimension"
                         f"{'s' if ndim != 1 else ''}; use 0..{ndim - 1} or -1 for the last")
    return a


def caption(type_name: str, params: Mapping[str, Any]) -> str:
    """The caption of a layer of ``type_name`` with ``params``; '' for an unknown type."""
    try:
        spec = get_spec(type_name)
    except UnknownLayerType:
        return ""
    defaults = spec.defaults()
    named = {k: v for k, v in params.items() if k in defaults and isinstance(v, str) and v.strip().startswith("*")
             and spec.param(k).kind not in ("str", "enum")}  # NNC's macro of an Argument ('*ConvKernel'): as written
    if named:
        rest = captions.generic({k: v for k, v in params.items() if k not in named}, defaults, spec.caption_always)
        return " · ".join([f"{k} {v}" for k, v in named.items()][:3] + ([rest] if rest else []))
    if spec.caption is not None:
        return spec.caption(params)
    return captions.generic(params, defaults, spec.caption_always)
