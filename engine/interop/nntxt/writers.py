"""Writing one network, its solver and an optimizer's variables into nnabla's protobuf: the pieces the .nntxt
export (``exporter``: Main, MainValidation, MainRuntime) and the other optimizers' export (``optimizers``) share."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from nnconsole.engine.layers import get_spec
from nnconsole.engine.layers.nntxt_codec import set_shape, write_fields
from nnconsole.engine.project.model import Initializer, Layer, Project
from nnconsole.engine.network.shared_params import parameter_name
from nnconsole.engine.network.noise_buffers import VAT_NOISE, project_buffers

from nnconsole.engine.interop import mapping, solver_table
from nnconsole.engine.interop.solver_table import LR_FIELD, SOLVER_PARAM_FIELDS
from nnconsole.engine.runtime.solvers import SOLVER_PARAMS
from nnconsole.engine.layers.types.inputs import input_generator, input_variable

OUTPUT_DATA_NAME = "y'"


def _fill_params(f: Any, layer: Layer, p: Dict[str, Any], in_shapes: List[Tuple[int, ...]],
                 out_shape: Tuple[int, ...], mode: str) -> None:
    """Set the function's *_param message from the layer's checked parameters (the type's registration
    says how: its ``to_nntxt`` hook, else its ``nntxt_fields``)."""

    spec = get_spec(layer.type)
    if spec.to_nntxt is not None:
        spec.to_nntxt(f, p, in_shapes, out_shape, mode)
    else:
        write_fields(f, spec.nntxt_fields, p)


def _initializer_message(msg: Any, init: Any) -> None:
    msg.type = init.type
    msg.multiplier = float(init.value) if init.type == "Constant" else float(init.multiplier)


class NetworkWriter:
    """Adds one network (variables + functions) of the project to the protobuf."""

    def __init__(self, proto: Any, project: Project, info: Any):
        self.proto = proto
        self.project = project
        self.info = info
        self.layers = {layer.name: layer for layer in project.network.layers}
        self.param_owner: Dict[str, Tuple[Layer, str]] = {}  # parameter name -> (first layer using it, weight key)

    def write(self, name: str, layer_names: Sequence[str], mode: str, batch: int,
              post: Optional[Tuple[str, str, str]] = None) -> Dict[str, Any]:
        """Write network ``name`` with the given layers; ``post`` = (function type, name, input) appends a
        Softmax/Sigmoid. Returns {'inputs': [var names], 'params': [param names], 'output': var name}."""

        net = self.proto.network.add()
        net.name = name
        net.batch_size = batch
        params: List[str] = []
        inputs: List[str] = []
        last = None
        wanted = set(layer_names)
        buffers = project_buffers(self.project)
        renamed: Dict[str, str] = {}  # an Input reading a VATNoise buffer -> the buffer's variable
        for lname in [n for n in self.info.order if n in wanted]:
            layer = self.layers[lname]
            li = self.info.layers[lname]
            spec = get_spec(layer.type)
            if spec.is_input and input_variable(layer, layer.params) in buffers:
                renamed[lname] = buffer_variable(net, input_variable(layer, layer.params), li.out_shape)
                continue
            if spec.is_input:
                v = net.variable.add()
                v.name, v.type = lname, "Buffer"
                set_shape(v.shape, [-1] + list(li.out_shape))
                inputs.append(lname)
                continue
            f = net.function.add()
            f.name = lname
            f.type = spec.export_as or spec.nnc_name
            f.input.extend(renamed.get(src, src) for src in layer.inputs)
            for key in spec.weight_order:
                if key not in li.weight_shapes:
                    continue
                pname = parameter_name(layer, key)  # layers sharing a parameter scope read one variable
                f.input.append(pname)
                if pname in params:
                    continue
                pv = net.variable.add()
                pv.name, pv.type = pname, "Parameter"
                set_shape(pv.shape, li.weight_shapes[key])
                init = (layer.initializers or {}).get(key) or spec.weights.get(key)
                if init is None and key in mapping.RUNNING_STAT_INIT:
                    init = Initializer("Constant", 1.0, mapping.RUNNING_STAT_INIT[key])
                if init is not None:
                    _initializer_message(pv.initializer, init)
                params.append(pname)
                self.param_owner.setdefault(pname, (layer, key))
            f.output.append(lname)
            _fill_params(f, layer, li.params, li.in_shapes, li.out_shape, mode)
            if layer.type == VAT_NOISE:  # its second input, the noise buffer, shared between networks
                buffer_variable(net, f.input[-1], li.in_shapes[0])
            elif spec.nntxt_expand is not None:  # one layer, several nnabla functions
                spec.nntxt_expand(net, li.in_shapes, li.out_shape)
            ov = net.variable.add()
            ov.name, ov.type = lname, "Buffer"
            set_shape(ov.shape, [-1] + list(li.out_shape))
            last = lname
        output = last
        if post is not None:
            ftype, fname, src = post
            f = net.function.add()
            f.name, f.type = fname, ftype
            f.input.append(src)
            f.output.append(fname)
            if ftype == "Softmax":
                f.softmax_param.axis = 1
            ov = net.variable.add()
            ov.name, ov.type = fname, "Buffer"
            set_shape(ov.shape, [-1] + list(self.info.layers[src].out_shape))
            output = fname
        return {"inputs": inputs, "params": params, "output": output}


def buffer_variable(net: Any, name: str, shape: Sequence[int]) -> str:
    """Declare VATNoise's noise buffer ``name`` in ``net`` once: a Buffer variable with a Constant 0
    initializer, which nnabla's loader shares by name between the networks of a file (an initialised input
    variable), as NNC shares the buffer; no dataset column feeds it."""
    if not any(v.name == name for v in net.variable):
        v = net.variable.add()
        v.name, v.type = name, "Buffer"
        set_shape(v.shape, [-1] + list(shape))
        v.initializer.type, v.initializer.multiplier = "Constant", 0.0
    return name


def write_solver(proto_solver: Any, project: Project, ipe: Optional[int], unsupported: List[str],
            notes: List[str]) -> None:

    opt = project.optimizer
    s = proto_solver
    s.type = opt.solver
    field_name = SOLVER_PARAM_FIELDS[opt.solver]
    p = getattr(s, field_name)
    setattr(p, LR_FIELD[opt.solver], float(opt.learning_rate))
    for key, value in dict(SOLVER_PARAMS[opt.solver], **opt.solver_params).items():
        setattr(p, key, solver_table.proto_value(opt.solver, key, value))
    if opt.solver in solver_table.NOT_IN_NNC:
        notes.append(f"solver {opt.solver} is written as nnabla's {field_name}; Neural Network Console has no such "
                     "solver and nnabla 1.39's own loader (nnabla_cli train) does not build it")
    if solver_table.decays_inside(opt.solver, dict(SOLVER_PARAMS[opt.solver], **opt.solver_params)):
        p.wd = float(opt.weight_decay)
    else:
        s.weight_decay = float(opt.weight_decay)
    sched = opt.schedule
    total = ipe * project.config.max_epoch if ipe else None
    if sched.type in ("exponential", "constant"):
        s.lr_scheduler_type = "Exponential"
        gamma = float(opt.lr_multiplier) if sched.type == "exponential" else 1.0
        interval = _in_iterations(int(opt.lr_update_interval), opt.lr_update_interval_unit, ipe,
                                  "optimizer.lr_update_interval", unsupported, notes) if sched.type == "exponential" else 0
        if interval <= 0 and gamma != 1.0:
            notes.append(f"lr_multiplier {gamma:g} with lr_update_interval 0 never changes the rate; written as a "
                         "constant rate")
            gamma = 1.0
        s.exponential_scheduler_param.gamma = gamma
        s.exponential_scheduler_param.iter_interval = interval
    elif sched.type == "step":
        s.lr_scheduler_type = "Step"
        s.step_scheduler_param.gamma = float(sched.gamma)
        s.step_scheduler_param.iter_steps.extend(int(v) for v in sched.steps)
    else:
        max_iter = int(sched.max_iter) or (total or 0)
        if not max_iter:
            unsupported.append(f"{sched.type} schedule over the whole run: the run length is unknown (training "
                               "CSV not found), so max_iter is 1; set optimizer.schedule.max_iter")
            max_iter = 1
        if sched.type == "cosine":
            s.lr_scheduler_type = "Cosine"
            s.cosine_scheduler_param.max_iter = float(max_iter)
        else:
            s.lr_scheduler_type = "Polynomial"
            s.polynomial_scheduler_param.max_iter = float(max_iter)
            s.polynomial_scheduler_param.power = float(sched.power)
    if opt.warmup_iterations:
        s.lr_warmup_scheduler_type = "Linear"
        s.linear_warmup_scheduler_param.warmup_iter = _in_iterations(
            int(opt.warmup_iterations), opt.warmup_unit, ipe, "optimizer.warmup_iterations", unsupported, notes)
        notes.append("nnabla's linear warm-up reaches the full rate one iteration earlier than nnconsole's")


def _in_iterations(length: int, unit: str, ipe: Optional[int], what: str, unsupported: List[str],
                   notes: List[str]) -> int:
    """A length in ``unit`` as the single-worker iterations nnabla's files count (they have no epoch unit).

    Epochs become ``length x ipe``, the training CSV's iterations per epoch at the project's batch size, and
    the export report says so: the file no longer follows the epoch if the dataset changes size. Without the
    CSV the number is written as iterations, reported as unsupported.
    """
    if unit != "epochs" or length <= 0:
        return length
    if not ipe:
        unsupported.append(f"{what} {length} epochs: .nntxt counts iterations and the training CSV could not be "
                           f"read to convert epochs, so {length} iterations are written")
        return length
    notes.append(f"{what} {length} epochs is written as {length * ipe} iterations ({ipe} iterations per epoch at "
                 "this batch size; .nntxt has no epoch unit, so the file does not follow a dataset that changes "
                 "size; nnconsole's importer restores the epochs from the header comment)")
    return length * ipe


def write_input_variables(message: Any, network: Any, inputs: List[str]) -> None:
    """An optimizer's, monitor's or executor's Inputs (layer names): a ``data_variable`` naming the dataset
    variable each reads, or for an Input with a generator (NNC's Generator) a ``generator_variable`` with its
    type and multiplier, which nnabla's loader turns into the same generator (``load._get_generator``)."""
    for v in inputs:
        layer = network.layer(v)
        kind = input_generator(layer.params)
        if kind:
            gv = message.generator_variable.add()
            gv.variable_name, gv.type = v, kind
            gv.multiplier = float(layer.params.get("generator_multiplier", 1.0))
        else:
            dv = message.data_variable.add()
            dv.variable_name, dv.data_name = v, input_variable(layer, layer.params)


def write_optimizer_variables(o: Any, network: Any, info: Any, written: Dict[str, Any],
                              param_owner: Dict[str, Tuple[Layer, str]]) -> None:
    """An optimizer's data (its network's Inputs), loss and parameter variables with their learning-rate
    multipliers (0 for running statistics)."""

    write_input_variables(o, network, written["inputs"])
    for layer in network.layers:  # VATNoise's Buf.Generator: the optimizer fills the buffer, as NNC writes it
        gen = (layer.params or {}).get("buffer_generator", "None") if layer.type == VAT_NOISE else "None"
        if gen and gen != "None":
            g = o.generator_variable.add()
            g.variable_name, g.type = str(layer.params.get("buffer") or "buf"), gen
            g.multiplier = float(layer.params.get("buffer_multiplier", 1.0))
    for lname in info.loss_layers:
        o.loss_variable.add().variable_name = lname
    for pname in written["params"]:
        layer, key = param_owner[pname]
        pv = o.parameter_variable.add()
        pv.variable_name = pname
        if key in mapping.non_trainable(layer.type):
            pv.learning_rate_multiplier = 0.0
        else:
            pv.learning_rate_multiplier = float((layer.lr_multipliers or {}).get(key, 1.0))


