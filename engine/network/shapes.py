"""Shape, parameter and cost inference for a project network, in pure Python (no nnabla).

The GUI calls ``infer_network`` on every edit, so it never raises for a bad network: every
problem becomes an entry in ``NetworkInfo.errors`` (layer name, message) and on that layer's
``LayerInfo.error``. Layers downstream of a broken one get ``out_shape`` None and no error of
their own, so one mistake gives one message. ``derive_network`` gives the validation and runtime
(inference) variants of the training network.

Costs: ``n_params`` counts learned parameters; ``macs`` counts multiply-adds per sample for
Affine, Convolution and Deconvolution (one per weight use) and one per output element for the
normalisation layers; all other layers count 0.
"""
from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from nnconsole.engine.layers import get_spec, resolve_params
from nnconsole.engine.layers.initializers import check_initializer
from nnconsole.engine.layers.types.inputs import input_generator, input_variable
from nnconsole.engine.layers.registry import LayerSpec, ShapeError, UnknownLayerType, prod
from nnconsole.engine.project.model import Layer, Network
from nnconsole.engine.network.expansion_size import cost_problem
from nnconsole.engine.network.units import (default_argument_problems, expand_units, fold_unit_problems,
                                           with_default_arguments)
from nnconsole.engine.network.layer_order import topological_order
from nnconsole.engine.network.noise_buffers import VAT_NOISE
from nnconsole.engine.network.recurrent_unroll import has_recurrent, infer_recurrent, unroll_recurrent
from nnconsole.engine.network.repeat_blocks import check_blocks
from nnconsole.engine.network.shared_params import is_unit_inner, share_parameters

Shape = Tuple[int, ...]
MODES = ("train", "validation", "runtime")


@dataclass(frozen=True)
class GeneratedInput:
    """A variable an Input fills from a generator (NNC's Generator property) instead of a dataset column."""

    generator: str  # "Normal", "Uniform", "Constant" or "Range" (nnconsole.engine.data.generated)
    multiplier: float
    shape: Shape


@dataclass
class LayerInfo:
    """What inference found for one layer (shapes exclude the batch axis)."""

    name: str
    type: str
    out_shape: Optional[Shape] = None
    in_shapes: List[Shape] = field(default_factory=list)
    weight_shapes: Dict[str, Shape] = field(default_factory=dict)
    n_params: int = 0  # learned parameters only (BatchNormalization's running stats excluded)
    # every parameter value nnabla stores for the layer (what its loader counts in a file): the learned ones plus
    # those kept but not learned (BatchNormalization's running statistics, binary layers' Wb and alpha)
    n_stored: int = 0
    macs: int = 0  # multiply-adds per sample
    output_size: int = 0  # elements per sample
    error: Optional[str] = None
    params: Dict[str, Any] = field(default_factory=dict)  # checked parameters, defaults filled in


@dataclass
class NetworkInfo:
    """The whole network: per-layer info in topological order plus totals and problems."""

    layers: Dict[str, LayerInfo] = field(default_factory=dict)
    order: List[str] = field(default_factory=list)
    total_params: int = 0
    total_stored: int = 0  # see LayerInfo.n_stored
    total_macs: int = 0
    errors: List[Tuple[str, str]] = field(default_factory=list)
    warnings: List[Tuple[str, str]] = field(default_factory=list)
    input_variables: Dict[str, Shape] = field(default_factory=dict)  # dataset variables the Inputs read
    generated_variables: Dict[str, GeneratedInput] = field(default_factory=dict)  # variables generators fill
    loss_layers: List[str] = field(default_factory=list)
    noise_buffers: Dict[str, Shape] = field(default_factory=dict)  # VATNoise buffer -> its shape (no batch axis)

    @property
    def ok(self) -> bool:
        return not self.errors

    def error_text(self) -> str:
        """All errors as lines 'layer: message'."""
        return "\n".join(f"{name}: {msg}" if name else msg for name, msg in self.errors)


def _spec_or_none(type_name: str) -> Optional[LayerSpec]:
    try:
        return get_spec(type_name)
    except KeyError:
        return None


def _known_list(names: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "") if names else "none"


def infer_network(network: Network, networks: Optional[Mapping[str, Network]] = None, name: str = "") -> NetworkInfo:
    """Infer every layer's output shape, weights and cost; collect errors instead of raising.

    ``networks`` (the project's, by name) and ``name`` (this network's) are needed only by Unit layers, which
    are expanded into their networks' layers first (``network.units``; the Unit reports its output's shape)."""
    unit_inputs = {x.name: list(x.inputs) for x in network.layers if x.type == "Unit" and isinstance(x.inputs, list)}
    own_layers = list(network.layers)
    network, origin, unit_problems = expand_units(network, networks, name)
    argument_problems = default_argument_problems(network, name)  # a *Name or a number naming no Argument
    network = with_default_arguments(network)  # Arguments seen on their own take their own values
    if has_recurrent(network):  # unrolled over time first; reported in the network's own layer names
        info = infer_recurrent(network, infer_plain)
    else:
        info = infer_plain(network)
    named = {n for n, _ in argument_problems}  # the cause, where a unit's expansion failed on the same reference
    unit_problems = [p for p in unit_problems if p[0] not in named] + argument_problems
    too_costly = cost_problem(info, origin, own_layers)  # parameters and multiply-adds of every repetition
    if too_costly and too_costly[0] not in {n for n, _ in unit_problems}:  # one message per block or unit
        unit_problems = unit_problems + [too_costly]
    return fold_unit_problems(info, origin, unit_problems, unit_inputs)


def unrolled_network(network: Network) -> Network:
    """The network to build: its recurrent blocks unrolled (unchanged without loop control, or when the
    blocks cannot be unrolled: checking it then reports why)."""
    if not has_recurrent(network):
        return network

    result = unroll_recurrent(network, infer_plain)
    return result.network if result.network is not None else network


def infer_plain(network: Network) -> NetworkInfo:
    """``infer_network`` for a network without loop control (recurrent blocks already unrolled)."""
    info = NetworkInfo()
    names_seen: Dict[str, int] = {}
    unique: List[Layer] = []
    for i, layer in enumerate(network.layers):
        if not layer.name:
            info.errors.append(("", f"layer {i} ({layer.type}) has no name; give every layer a unique name"))
            continue
        if layer.name in names_seen:
            info.errors.append((layer.name, f"layer name '{layer.name}' is used by more than one layer "
                                            f"(positions {names_seen[layer.name]} and {i}); rename one"))
            continue
        names_seen[layer.name] = i
        unique.append(layer)
    net = Network(layers=unique)
    by_name = {layer.name: layer for layer in unique}
    all_names = list(by_name)

    order, cycles = topological_order(net)
    in_cycle: Dict[str, str] = {}
    for cyc in cycles:
        text = " -> ".join(cyc + [cyc[0]])
        msg = f"layers form a cycle: {text}; remove one of these connections"
        info.errors.append((cyc[0], msg))
        for n in cyc:
            in_cycle[n] = msg
    placed = set(order)
    full_order = order + [n for n in all_names if n not in placed]
    info.order = full_order

    var_owner: Dict[str, str] = {}
    for name in full_order:
        layer = by_name[name]
        li = LayerInfo(name=name, type=layer.type)
        info.layers[name] = li
        try:
            _infer_layer(info, layer, li, by_name, all_names, in_cycle, var_owner)
        except Exception as exc:  # malformed data from a hand-edited file must not crash the GUI
            li.out_shape = None
            li.error = f"could not check this layer ({type(exc).__name__}: {exc}); check its fields"
            info.errors.append((name, li.error))
    if not any(_is_input(by_name[n]) for n in all_names):
        info.warnings.append(("", "the network has no Input layer"))

    share_parameters(info, by_name)  # layers naming one parameter scope share (and count once) their weights
    check_blocks(net, info)  # repeat blocks: pairing, shape kept, counts once per repetition
    return info



def _refuse(info: NetworkInfo, li: LayerInfo, message: str) -> None:
    """Mark a layer whose shape was inferred but whose variable conflicts with another layer: it gets no output
    shape (its consumers are not checked against it) and ``message`` is its error."""
    li.error = message
    li.out_shape = None
    info.errors.append((li.name, message))

def _infer_layer(info: NetworkInfo, layer: Layer, li: LayerInfo, by_name: Dict[str, Layer],
                 all_names: List[str], in_cycle: Dict[str, str], var_owner: Dict[str, str]) -> None:
    """Fill ``li`` for one layer whose inputs were already inferred (appends to info.errors)."""
    name = layer.name
    problems: List[str] = []
    if name in in_cycle:
        li.error = in_cycle[name]  # already listed once in info.errors
    if "/" in name and not is_unit_inner(layer):  # a unit's expansion names its layers '<unit>/<layer>'
        problems.append(f"layer name '{name}' must not contain '/' (nnabla uses it to separate "
                        "parameter scopes); rename it")
    spec = _spec_or_none(layer.type)
    params: Optional[Dict[str, Any]] = None
    if spec is None:
        try:
            get_spec(layer.type)
        except UnknownLayerType as exc:
            problems.append(str(exc))
    else:
        try:
            params = resolve_params(layer.type, layer.params)
            li.params = params
        except ValueError as exc:
            problems.append(str(exc))
        msg = spec.inputs_message(len(layer.inputs))
        if msg:
            problems.append(msg)
        for key, init in (layer.initializers or {}).items():
            if key not in spec.weights:
                info.warnings.append((name, f"initializer for '{key}' is ignored: {spec.type} has "
                                            f"{'weights ' + ', '.join(spec.weights) if spec.weights else 'no weights'}"))
                continue
            try:
                check_initializer(init)
            except ValueError as exc:
                problems.append(f"initializer for '{key}': {exc}")
        for key in (layer.lr_multipliers or {}):
            if key not in spec.weights:
                info.warnings.append((name, f"lr_multiplier for '{key}' is ignored: {spec.type} has "
                                            f"{'weights ' + ', '.join(spec.weights) if spec.weights else 'no weights'}"))
    for src in layer.inputs:
        if src not in by_name:
            close = difflib.get_close_matches(str(src), all_names, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            problems.append(f"input '{src}' does not exist; {hint}known layers: {_known_list(all_names)}")
    if spec is not None and spec.is_loss and not spec.is_metric:  # validation layers are not learned from
        info.loss_layers.append(name)
    if problems:
        message = "; ".join(problems)
        info.errors.append((name, message))
        li.error = f"{li.error}; {message}" if li.error else message
        return
    if li.error or spec is None or params is None:
        return
    in_infos = [info.layers.get(src) for src in layer.inputs]
    if any(i is None or i.out_shape is None for i in in_infos):
        return  # upstream problem, already reported
    li.in_shapes = [i.out_shape for i in in_infos]  # type: ignore[misc]
    try:
        out = tuple(int(s) for s in spec.output_shape(li.in_shapes, params))
        if any(s < 1 for s in out):
            raise ShapeError(f"{spec.type} would output shape {out}, which has an empty dimension")
        li.weight_shapes = {k: tuple(v) for k, v in spec.weight_shapes(li.in_shapes, params).items()}
        li.macs = int(spec.macs(li.in_shapes, out, params))
    except ShapeError as exc:
        li.error = str(exc)
        info.errors.append((name, li.error))
        return
    li.out_shape = out
    li.output_size = prod(out)
    li.n_params = sum(prod(s) for k, s in li.weight_shapes.items() if k not in spec.non_trainable)
    li.n_stored = sum(prod(s) for s in li.weight_shapes.values())
    info.total_params += li.n_params
    info.total_stored += li.n_stored
    info.total_macs += li.macs
    buffer = str(params.get("buffer") or "buf") if layer.type == VAT_NOISE else None
    if buffer is not None or spec.is_input:  # one shape per noise buffer: VATNoise's input, Inputs reading it
        key = buffer or input_variable(layer, params)
        known = info.noise_buffers.get(key) or (info.input_variables.get(key) if buffer else None)
        if (buffer or key in info.noise_buffers) and known is not None and known != out:
            return _refuse(info, li, f"noise buffer '{key}' has shape {known} at another VATNoise or Input of this network, but "
                           f"{out} here; give the VATNoise inputs and the Inputs reading it one shape")
        if buffer:
            info.noise_buffers.setdefault(buffer, out)
    if spec.is_input:
        var = input_variable(layer, params)
        kind = input_generator(params)
        generated = info.generated_variables.get(var)
        if kind:
            made = GeneratedInput(kind, float(params.get("generator_multiplier", 1.0)), tuple(out))
            other = ("reads it from the dataset" if var in info.input_variables else
                     f"generates it as {generated.generator} x {generated.multiplier:g} of shape "
                     f"{generated.shape}" if generated is not None and generated != made else "")
            if other:
                return _refuse(info, li, f"variable '{var}' is generated here ({kind} x {made.multiplier:g}) but Input "
                               f"'{var_owner[var]}' {other}; give one of them another variable name")
            info.generated_variables.setdefault(var, made)
            var_owner.setdefault(var, name)
            return
        if generated is not None:
            return _refuse(info, li, f"variable '{var}' is read from the dataset here but Input '{var_owner[var]}' generates it "
                           f"({generated.generator}); give one of them another variable name")
        if var in info.input_variables and info.input_variables[var] != out:
            return _refuse(info, li, f"variable '{var}' is also read by Input '{var_owner[var]}' with shape "
                           f"{info.input_variables[var]}, but this layer says {out}; use one shape")
        info.input_variables.setdefault(var, out)
        var_owner.setdefault(var, name)


def _is_input(layer: Layer) -> bool:
    spec = _spec_or_none(layer.type)
    return bool(spec and spec.is_input)


def _is_loss(layer: Layer) -> bool:
    spec = _spec_or_none(layer.type)
    return bool(spec and spec.is_loss)


def runtime_layer_names(network: Network) -> List[str]:
    """Names of the layers an inference (runtime) network keeps, in file order.

    Kept: every ancestor (and self) of each loss layer's prediction input, and of each non-loss,
    non-Input layer that feeds nothing (an extra output). Dropped: loss layers, the target Inputs
    that feed only them, and layers that only prepare targets. Without losses, all non-orphan
    layers are kept.
    """
    by_name: Dict[str, Layer] = {}
    for layer in network.layers:
        by_name.setdefault(layer.name, layer)
    consumed: Set[str] = {src for layer in by_name.values() for src in layer.inputs}
    seeds: List[str] = []
    for layer in by_name.values():
        if _is_loss(layer):
            if layer.inputs:
                seeds.append(layer.inputs[0])
        elif layer.name not in consumed and not _is_input(layer):
            seeds.append(layer.name)
    keep: Set[str] = set()
    stack = [s for s in seeds if s in by_name]
    while stack:
        n = stack.pop()
        if n in keep:
            continue
        keep.add(n)
        stack.extend(src for src in by_name[n].inputs if src in by_name and src not in keep)
    keep = {n for n in keep if not _is_loss(by_name[n])}
    return [layer.name for layer in network.layers if layer.name in keep]


def derive_network(network: Network, mode: str) -> Network:
    """The network used in ``mode``: 'train' and 'validation' keep every layer (Dropout and
    BatchNormalization change behaviour at build time); 'runtime' keeps only what inference needs
    (see runtime_layer_names). Returns a deep copy; the input network is not modified.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode != "runtime":
        return copy.deepcopy(network)
    keep = set(runtime_layer_names(network))
    return Network(layers=[copy.deepcopy(layer) for layer in network.layers if layer.name in keep])


def first_loss(network: Network, info: Optional[NetworkInfo] = None) -> Optional[str]:
    """The first loss layer in data-flow order (it defines the prediction and the task), or None."""
    info = info or infer_network(network)
    return info.loss_layers[0] if info.loss_layers else None
