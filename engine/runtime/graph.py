"""Building nnabla computation graphs from a project network.

``build_graph`` checks the network with ``nnconsole.engine.network.shapes.infer_network`` first and raises
``GraphError`` listing every problem, then creates one nnabla function per layer in data-flow
order. Each layer's weights are created with nnabla's parametric functions under
``nn.parameter_scope(<layer's parameter_scope, else its name>)``, so parameter names are
``<layer>/<pf scope>/<weight>`` (layers naming one parameter_scope share their weights), e.g.
``conv1/conv/W``, ``fc1/affine/b``, ``bn1/bn/gamma``, ``emb/embed/W`` (the names NNC uses too).
Names are relative to the parameter scope that is current when build_graph is called, and
existing parameters there are reused: a train graph and a validation graph built one after the
other share their weights.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from nnconsole.engine.layers import get_spec, resolve_params
from nnconsole.engine.layers.initializers import make_initializer
from nnconsole.engine.layers.types.inputs import input_variable
from nnconsole.engine.layers.registry import fmt_shape
from nnconsole.engine.project.model import Layer, Network
from nnconsole.engine.network.shapes import unrolled_network
from nnconsole.engine.network.repeat_blocks import has_repeats, unroll
from nnconsole.engine.network.shapes import MODES, GeneratedInput, NetworkInfo, derive_network, infer_network
from nnconsole.engine.network.shared_params import weight_scope_of
from nnconsole.engine.network.units import expand_units, without_arguments
from nnconsole.engine.network.noise_buffers import network_buffers
from nnconsole.engine.runtime.noise import Fill, NoiseBuffers


class GraphError(ValueError):
    """The network cannot be built; the message lists each problem by layer."""


@dataclass
class BuiltGraph:
    """An nnabla graph for one mode. Variables carry the batch axis first.

    ``sample_loss`` (batch,) is the sum over loss layers of each loss averaged over its non-batch
    axes; ``loss`` is its mean. ``sample_error`` (batch,) is the first validation layer's (TopNError,
    BinaryError: registry ``is_metric``) output averaged per sample when the network has one, else it
    describes the first loss layer: for classification losses the fraction of wrong predictions per
    sample, for regression losses its per-sample loss. All three are None in runtime mode. ``task`` comes from the first loss layer
    of the training network ('regression' when there is none).
    """

    mode: str
    batch_size: int
    inputs: Dict[str, Any]  # dataset variable name -> nn.Variable (batch, *shape)
    outputs: Dict[str, Any]  # layer name -> nn.Variable
    prediction: Any
    prediction_layer: str
    sample_loss: Optional[Any]
    loss: Optional[Any]
    sample_error: Optional[Any]
    task: str
    param_owner: Dict[str, Tuple[str, str]]  # full parameter name -> (layer name, weight key)
    parameters: Dict[str, Any] = field(default_factory=dict)  # full parameter name -> nn.Variable
    loss_layers: List[str] = field(default_factory=list)
    info: Optional[NetworkInfo] = None  # inference for the network actually built
    network: Optional[Network] = None  # the (derived) network actually built
    noise: Optional[NoiseBuffers] = None  # the VATNoise buffers it reads and writes (shared between graphs)
    noise_fills: List[Fill] = field(default_factory=list)  # generated buffers, refilled before each forward

    def fill_noise(self) -> None:
        """Refill the generated noise buffers (VATNoise's Buf.Generator): call before each forward pass."""
        if self.noise_fills:
            self.noise.fill(self.noise_fills)
    # variables generators fill (NNC's Generator; not in ``inputs``) -> (nn.Variable, GeneratedInput)
    generated: Dict[str, Tuple[Any, GeneratedInput]] = field(default_factory=dict)


class BuildContext:
    """What a layer's ``build`` function may use: the mode, checked params and initializers."""

    def __init__(self, mode: str, batch_size: int, rng: Any = None, seed: Optional[int] = None, rank: int = 0,
                 noise: Optional[NoiseBuffers] = None):
        self.mode = mode
        self.batch_size = batch_size
        self.rng = rng
        self.seed = seed
        self.rank = int(rank)
        self.noise = noise if noise is not None else NoiseBuffers(seed=seed, rank=rank)
        self.noise_fills: List[Fill] = []
        self._params: Dict[str, Dict[str, Any]] = {}

    def noise_buffer(self, name: str, shape: Tuple[int, ...], generator: str = "None",
                     multiplier: float = 1.0) -> Any:
        """The shared noise buffer ``name`` (VATNoise's Buf); a generator other than 'None' refills it before
        each forward pass of this graph (``BuiltGraph.fill_noise``)."""
        var = self.noise.variable(name, tuple(shape))
        if generator and generator != "None" and all(f[0] != name for f in self.noise_fills):
            self.noise_fills.append((name, generator, float(multiplier)))
        return var

    def random_seed(self, layer: Layer, own: int = -1) -> int:
        """The seed of a random layer (Dropout, the pre-process layers): its own seed (>= 0) or the run's, mixed
        with the worker's rank and the layer's name so that every worker and every layer draws different
        numbers, reproducibly; -1 (nnabla's global generator) when neither the layer nor the run gives one."""
        base = int(own) if own is not None and int(own) >= 0 else self.seed
        if base is None or int(base) < 0:
            return -1
        mixed = zlib.crc32(f"{int(base)}/{self.rank}/{layer.name}".encode())
        return int(mixed % 2147483647)

    @property
    def training(self) -> bool:
        """Dropout is active only while training."""
        return self.mode == "train"

    @property
    def batch_stat(self) -> bool:
        """BatchNormalization uses batch statistics (and updates running ones) only while training."""
        return self.mode == "train"

    def params(self, layer: Layer) -> Dict[str, Any]:
        """The layer's checked parameters with defaults filled in."""
        if layer.name not in self._params:
            self._params[layer.name] = resolve_params(layer.type, layer.params)
        return self._params[layer.name]

    def initializer(self, layer: Layer, key: str, inmaps: int, outmaps: int, kernel=(1,)) -> Any:
        """The nnabla initializer for weight ``key``: the layer's own setting, else the type's default."""
        init = (layer.initializers or {}).get(key) or get_spec(layer.type).weights[key]
        return make_initializer(init, int(inmaps), int(outmaps), kernel, rng=self.rng)


def _format_errors(info: NetworkInfo, mode: str) -> str:
    lines = [f"  layer '{name}': {msg}" if name else f"  {msg}" for name, msg in info.errors]
    n = len(info.errors)
    return f"cannot build the {mode} network, {n} problem{'s' if n != 1 else ''}:\n" + "\n".join(lines)


def _mean_per_sample(F: Any, v: Any) -> Any:
    if len(v.shape) <= 1:
        return v
    return F.mean(v, axis=tuple(range(1, len(v.shape))))


def build_graph(network: Network, batch_size: int, mode: str = "train", rng: Any = None,
                seed: Optional[int] = None, rank: int = 0,
                networks: Optional[Mapping[str, Network]] = None,
                noise: Optional[NoiseBuffers] = None) -> BuiltGraph:
    """Build the nnabla graph of ``network`` for ``mode`` ('train', 'validation' or 'runtime').

    train: dropout on, BatchNormalization on batch statistics; validation: the same layers with
    dropout off and running statistics; runtime: the derived inference network (no losses, no
    target inputs). ``rng`` (numpy RandomState) feeds the weight initializers of new parameters;
    ``seed`` (the run's) and ``rank`` (the worker's) seed the random layers (see BuildContext.random_seed).
    ``networks`` (the project's, by name) expand Unit layers into their networks' layers (unit_expand).
    ``noise`` holds the VATNoise buffers shared with the other graphs of the run (a trainer passes one, named
    after every network's buffers); an Input reading a buffer gets the buffer, not a dataset column.
    """
    import nnabla as nn  # deferred: nnabla stays out of the launcher
    import nnabla.functions as F  # deferred: nnabla stays out of the launcher

    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    batch_size = int(batch_size)
    network, _, unit_problems = expand_units(network, networks)  # units become their networks' layers
    if unit_problems:
        raise GraphError(_format_errors(NetworkInfo(errors=list(unit_problems)), mode))
    network = without_arguments(network)  # Arguments seen on their own: their values substituted
    network = unrolled_network(network)  # recurrent blocks unrolled over time, as nnabla's loader does
    train_info = infer_network(network)
    first_loss = train_info.loss_layers[0] if train_info.loss_layers else None
    net = derive_network(network, mode)
    unrolled = has_repeats(net.layers)
    net = unroll(net)  # repeat blocks become one copy of their layers per repetition (repeat_blocks)
    info = infer_network(net) if mode == "runtime" or unrolled else train_info
    if info.errors:  # runtime only needs its own layers to be right
        raise GraphError(_format_errors(info, mode))
    if mode != "runtime" and first_loss is None:
        raise GraphError(f"cannot build the {mode} network: it has no loss layer; add e.g. "
                         "SoftmaxCrossEntropy fed by the output and the label Input")
    layers = {layer.name: layer for layer in net.layers}

    ctx = BuildContext(mode, batch_size, rng, seed, rank, noise)
    buffers = ctx.noise.names | network_buffers(net)
    inputs: Dict[str, Any] = {}
    generated: Dict[str, Tuple[Any, GeneratedInput]] = {}
    outputs: Dict[str, Any] = {}
    param_owner: Dict[str, Tuple[str, str]] = {}
    parameters: Dict[str, Any] = {}
    for name in info.order:
        layer = layers[name]
        spec = get_spec(layer.type)
        li = info.layers[name]
        if spec.is_input:
            var = input_variable(layer, ctx.params(layer))
            if var in buffers:  # VATNoise's noise buffer, shared with the run's other graphs
                outputs[name] = ctx.noise_buffer(var, (batch_size,) + tuple(li.out_shape))
                continue
            if var in info.generated_variables:
                if var not in generated:
                    generated[var] = (nn.Variable((batch_size,) + tuple(li.out_shape)), info.generated_variables[var])
                outputs[name] = generated[var][0]
                continue
            if var not in inputs:
                inputs[var] = nn.Variable((batch_size,) + tuple(li.out_shape))
            outputs[name] = inputs[var]
            continue
        xs = [outputs[src] for src in layer.inputs]
        scope = weight_scope_of(layer)  # layers naming one parameter_scope share these weights
        with nn.parameter_scope(scope):
            try:
                out = spec.build(ctx, xs, layer)
            except Exception as exc:  # nnabla raises several types; name the layer either way
                text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
                if len(text) > 400:
                    text = text[:400] + " ..."
                hint = ("; the current parameter scope holds weights of another shape for this layer "
                        "(start from fresh parameters or load weights that match the network)"
                        if "size of existing parameter" in str(exc) else "")
                raise GraphError(f"layer '{name}' ({layer.type}) could not be built: "
                                 f"{text.rstrip('.') or type(exc).__name__}{hint}") from exc
            for rel, var in nn.get_parameters(grad_only=False).items():
                full = f"{scope}/{rel}"
                param_owner.setdefault(full, (name, rel.rsplit("/", 1)[-1]))  # the first sharer owns it
                parameters[full] = var
        want = (batch_size,) + tuple(li.out_shape)
        if tuple(out.shape) != want:  # a bug in a shape rule, not a user error
            raise GraphError(f"internal error: layer '{name}' ({layer.type}) built shape {fmt_shape(out.shape)} "
                             f"but shape inference said {fmt_shape(want)}")
        outputs[name] = out

    task = get_spec(network.layer(first_loss).type).task if first_loss else "regression"
    sample_loss = loss = sample_error = None
    if mode == "runtime":
        loss_inputs = unroll(network).layer(first_loss).inputs if first_loss else []
        pred_name = loss_inputs[0] if loss_inputs else None
        if pred_name not in outputs:
            non_inputs = [n for n in info.order if not get_spec(layers[n].type).is_input]
            pred_name = non_inputs[-1] if non_inputs else info.order[-1]
    else:
        pred_name = layers[first_loss].inputs[0]
        for lname in info.loss_layers:
            per_sample = _mean_per_sample(F, outputs[lname])
            sample_loss = per_sample if sample_loss is None else sample_loss + per_sample
        loss = F.mean(sample_loss)
        metrics = [n for n in info.order if get_spec(layers[n].type).is_metric]
        error_layer = metrics[0] if metrics else first_loss  # a validation layer (TopNError...) is the error curve
        spec = get_spec(layers[error_layer].type)
        el = layers[error_layer]
        pred, target = outputs[el.inputs[0]], outputs[el.inputs[1]]
        sample_error = _mean_per_sample(F, spec.error(pred, target, ctx.params(el), outputs[error_layer]))
    return BuiltGraph(
        mode=mode, batch_size=batch_size, inputs=inputs, outputs=outputs,
        prediction=outputs[pred_name], prediction_layer=pred_name,
        sample_loss=sample_loss, loss=loss, sample_error=sample_error, task=task or "regression",
        param_owner=param_owner, parameters=parameters,
        loss_layers=list(info.loss_layers) if mode != "runtime" else [],
        info=info, network=net, noise=ctx.noise, noise_fills=list(ctx.noise_fills), generated=generated,
    )


def lr_multipliers(network: Network, built: BuiltGraph) -> Dict[str, float]:
    """Learning-rate multiplier of every learned parameter of ``built`` (layer.lr_multipliers, default 1.0).

    Running statistics (BatchNormalization mean/var) are not learned and are left out.
    """
    layers = {layer.name: layer for layer in (built.network or network).layers}  # repeat copies included
    out: Dict[str, float] = {}
    for full, (lname, key) in built.param_owner.items():
        var = built.parameters.get(full)
        if var is not None and not var.need_grad:
            continue
        layer = layers.get(lname)
        mult = (layer.lr_multipliers or {}).get(key, 1.0) if layer is not None else 1.0
        out[full] = float(mult)
    return out
