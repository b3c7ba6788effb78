"""Open an nnabla / Neural Network Console ``.nntxt`` (protobuf text), ``.protobuf`` or ``.nnp`` as a project.

The training network (the one the first optimizer trains, NNC's ``Main``) becomes the layers; the
validation and runtime networks are derived by nnconsole and not imported. RepeatStart/RepeatEnd
blocks are expanded. The optimizer's solver and learning-rate schedule become the CONFIG's optimizer,
``training_config`` the CONFIG, the datasets the dataset paths, and the parameters a ``.nnp`` carries
the initial weights (written to an ``.h5`` under the project's parameter names).
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from typing import Any, Dict, List, Optional, Tuple

from nnconsole.engine.layers.nntxt_codec import Unsupported, dims, f7, read_fields
from nnconsole.engine.project.model import (FORMAT_VERSION, Datasets, Initializer, MultiGPU, Network, Optimizer, Project,
                                  Schedule, TrainingConfig)

from . import mapping
from .archive import MAX_MEMBER_BYTES, read_bounded, read_zip_members
from .common import resolve_dataset
from .netgraph import (Node, WeightInfo, expand_repeats, finalize_names, parameter_renames, remove_pass_through,
                       to_layers, unique_name)
from .report import ImportResult, InteropError
from .settings_map import read_training_config

EXTRAS_PREFIX = "# nnconsole-project:"


# ------------------------------------------------------------------------------------- reading files
def read_proto(path: str) -> Tuple[Any, Dict[str, Tuple[Any, bool]], str]:
    """The NNablaProtoBuf of an .nntxt/.prototxt/.protobuf/.nnp, its parameters and its raw text.

    Parameters are ``name -> (numpy array, need_grad)`` from ``parameter`` entries and, in an .nnp,
    its ``.h5``/``.protobuf`` parameter file. Raises InteropError naming the file and the line.
    """
    from google.protobuf import text_format
    from nnabla.utils import nnabla_pb2

    proto = nnabla_pb2.NNablaProtoBuf()
    params: Dict[str, Tuple[Any, bool]] = {}
    text_all = ""
    ext = os.path.splitext(path)[1].lower()
    if not os.path.isfile(path):
        raise InteropError(f"{path}: file not found; check the path")

    def merge_text(text: str, where: str) -> None:
        try:
            text_format.Merge(text, proto, allow_unknown_field=True)
        except text_format.ParseError as exc:
            line, col = exc.GetLine(), exc.GetColumn()
            place = f"{where}:{line}:{col}" if line else where
            message = str(exc).split(" : ", 1)[-1]
            raise InteropError(f"{place}: not a valid nnabla protobuf text file ({message}); fix the syntax at "
                               f"line {line} or export the file again") from None

    def merge_binary(data: bytes, where: str) -> None:
        try:
            proto.MergeFromString(data)
        except Exception as exc:
            raise InteropError(f"{where}: not a valid nnabla protobuf file ({exc})") from None

    if ext == ".nnp":
        members = read_zip_members(path, (".nntxt", ".prototxt", ".protobuf", ".h5"),
                                   text_suffixes=(".nntxt", ".prototxt"))
        for name, data in members.items():
            e = os.path.splitext(name)[1].lower()
            where = f"{path}:{name}"
            if e in (".nntxt", ".prototxt"):
                text = data.decode("utf-8", errors="replace")
                text_all += text + "\n"
                merge_text(text, where)
            elif e == ".protobuf":
                merge_binary(data, where)
            elif e == ".h5":
                params.update(_read_h5(data, where))
    elif ext in (".nntxt", ".prototxt", ".txt"):
        raw = read_bounded(path)
        try:
            text_all = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise InteropError(f"{path}:{line}: the file is not UTF-8 text; save it as UTF-8") from None
        merge_text(text_all, path)
    elif ext in (".protobuf", ".pb"):
        merge_binary(read_bounded(path, MAX_MEMBER_BYTES), path)
    else:
        raise InteropError(f"{path}: unknown file type '{ext}'; nnconsole imports .nntxt, .prototxt, .protobuf, "
                           ".nnp and .sdcproj files")
    for p in proto.parameter:
        import numpy as np
        params[p.variable_name] = (np.array(p.data, dtype=np.float32).reshape(tuple(p.shape.dim)), bool(p.need_grad))
    return proto, params, text_all


def _read_h5(data: bytes, where: str) -> Dict[str, Tuple[Any, bool]]:
    import io

    import h5py
    import numpy as np

    out: Dict[str, Tuple[Any, bool]] = {}
    try:
        with h5py.File(io.BytesIO(data), "r") as hd:
            def visit(name: str, obj: Any) -> None:
                if isinstance(obj, h5py.Dataset):
                    out[name] = (np.array(obj[...], dtype=np.float32), bool(obj.attrs.get("need_grad", True)))
            hd.visititems(visit)
    except OSError as exc:
        raise InteropError(f"{where}: the parameter file cannot be read ({exc})") from None
    return out


def read_extras(text: str) -> Dict[str, Any]:
    """The nnconsole settings an exported .nntxt keeps in its first comment line (empty when absent)."""
    for line in text.splitlines()[:5]:
        if line.startswith(EXTRAS_PREFIX):
            try:
                data = json.loads(line[len(EXTRAS_PREFIX):])
                return data if isinstance(data, dict) else {}
            except ValueError:
                return {}
    return {}


# ------------------------------------------------------------------------------------- the network
_dims = dims
_f = f7


def _function_params(f: Any, in_shapes: List[Optional[List[int]]], weights: Dict[str, List[int]]) -> Dict[str, Any]:
    """Registry parameters of one nnabla function (its type's ``from_nntxt`` hook, else its
    ``nntxt_fields``); raises Unsupported for settings nnconsole lacks."""
    from nnconsole.engine.layers import get_spec

    spec = get_spec(mapping.registry_type(f.type) or f.type)
    if spec.from_nntxt is not None:
        return spec.from_nntxt(f, in_shapes, weights)
    return read_fields(f, spec.nntxt_fields)


def _initializer(var: Any, unsupported: List[str], label: str) -> Optional[Initializer]:
    if not var.HasField("initializer") or not var.initializer.type:
        return None
    name = var.initializer.type
    kind = mapping.initializer_type(name)
    m = _f(var.initializer.multiplier)
    if kind is None:
        unsupported.append(f"{label}: initializer {name} has no nnconsole equivalent; the layer's default is used")
        return None
    if kind == "Constant":
        return Initializer("Constant", 1.0, m)
    return Initializer(kind, m, 0.0)


def _training_network(proto: Any, notes: List[str]) -> Any:
    names = [n.name for n in proto.network]
    if not names:
        raise InteropError("the file has no network section; export the project again from NNC")
    wanted = proto.optimizer[0].network_name if len(proto.optimizer) else ""
    for n in proto.network:
        if n.name == wanted:
            return n
    for n in proto.network:
        if n.name == "Main":
            return n
    others = [n for n in proto.network if not re.search(r"(Validation|Runtime)$", n.name)]
    chosen = others[0] if others else proto.network[0]
    if not len(proto.optimizer):
        notes.append(f"the file has no optimizer; network '{chosen.name}' was imported (add a loss layer and "
                     "check the CONFIG before training)")
    return chosen


def _data_names(proto: Any) -> Dict[str, str]:
    """Network variable -> dataset variable, from the optimizers, monitors and executors."""
    out: Dict[str, str] = {}
    for group in (proto.executor, proto.monitor, proto.optimizer):
        for item in group:
            for dv in item.data_variable:
                out[dv.variable_name] = dv.data_name
    return out


def _lr_multipliers(proto: Any, network_name: str) -> Tuple[Dict[str, float], bool]:
    for o in proto.optimizer:
        if o.network_name == network_name:
            values = {p.variable_name: _f(p.learning_rate_multiplier) for p in o.parameter_variable}
            return values, bool(values)
    return {}, False


def _layer_name(f: Any, variables: Dict[str, Any]) -> str:
    """A layer name for a function: its own name, or for nnabla's generated names (``@runtime/Affine_2``)
    the parameter scope of its weights (``fc1``) or the part after the last '/'; never containing '/'."""
    name = f.name
    if name.startswith("@") or "/" in name:
        params = [i for i in f.input if i in variables and variables[i].type == "Parameter" and "/" in i]
        name = params[0].split("/", 1)[0] if params else name.rsplit("/", 1)[-1]
    return name.replace("/", "_").lstrip("@") or f.type


def network_nodes(proto: Any, net: Any, unsupported: List[str], notes: List[str], where: str) -> List[Node]:
    """Nodes of one network (repeats not yet expanded)."""
    variables = {v.name: v for v in net.variable}
    data_names = _data_names(proto)
    lr_values, has_lr_list = _lr_multipliers(proto, net.name)
    taken: set = set()
    producer: Dict[str, str] = {}
    alias: Dict[str, str] = {}
    node_names: List[Optional[str]] = []
    for f in net.function:  # pass 1: who produces each variable (a RepeatStart reads a later output)
        if f.type in mapping.PASS_THROUGH and f.input and f.output:
            alias[f.output[0]] = f.input[0]
            node_names.append(None)
            notes.append(f"{f.type} '{f.name}' removed (a no-op)")
            continue
        name = unique_name(_layer_name(f, variables), taken)
        node_names.append(name)
        for out in f.output:
            producer[out] = name
    nodes: List[Node] = []
    inputs_made: Dict[str, str] = {}
    generators = {g.variable_name for group in (proto.optimizer, proto.monitor, proto.executor)
                  for item in group for g in item.generator_variable}
    frozen: List[str] = []

    def source(var_name: str) -> str:
        seen = set()
        while var_name in alias and var_name not in seen:
            seen.add(var_name)
            var_name = alias[var_name]
        if var_name in producer:
            return producer[var_name]
        if var_name in inputs_made:
            return inputs_made[var_name]
        v = variables.get(var_name)
        shape = _dims(v.shape)[1:] if v is not None else [1]
        if var_name in generators:
            unsupported.append(f"generator variable '{var_name}': nnconsole feeds inputs only from the dataset; "
                               "it became an Input layer reading a dataset column of that name")
        name = unique_name(var_name, taken)
        nodes.append(Node(name=name, type="Input", params={"shape": shape or [1],
                                                          "variable": data_names.get(var_name, var_name)}))
        inputs_made[var_name] = name
        return name

    for f, name in zip(net.function, node_names):
        if name is None:
            continue
        data_inputs = [i for i in f.input if i not in variables or variables[i].type != "Parameter"]
        param_inputs = [i for i in f.input if i in variables and variables[i].type == "Parameter"]
        srcs = [source(i) for i in data_inputs]
        node = Node(name=name, type=f.type, inputs=srcs, repeat_ids=list(f.repeat_id))
        if f.type in mapping.REPEAT_TYPES:
            node.repeat_id = f.repeat_param.repeat_id
            node.params = {"times": int(f.repeat_param.times)}
        elif f.type in ("RecurrentInput", "RecurrentOutput", "Delay"):
            unsupported.append(f"layer '{f.name}' ({f.type}): recurrent loop control cannot be expanded into "
                               "nnconsole layers")
        else:
            spec = mapping.layer_spec(f.type)
            rtype = spec.type if spec else ""
            order = spec.weight_order if spec else ()
            weights: Dict[str, List[int]] = {}
            for k, pname in enumerate(param_inputs):
                key = order[k] if k < len(order) else f"param{k}"
                v = variables[pname]
                weights[key] = _dims(v.shape)
                lr = lr_values.get(pname)
                if has_lr_list and lr is None:
                    lr = 0.0
                    if key not in mapping.non_trainable(rtype):
                        frozen.append(pname)
                node.weights[key] = WeightInfo(source_name=pname,
                                               initializer=_initializer(v, unsupported, f"parameter '{pname}'"),
                                               lr_multiplier=lr)
            in_shapes = [(_dims(variables[i].shape)[1:] if i in variables else None) for i in data_inputs]
            if rtype:
                try:
                    node.params = _function_params(f, in_shapes, weights)
                except Unsupported as exc:
                    unsupported.append(f"layer '{f.name}' ({f.type}): {exc}; nnconsole's defaults are used")
        nodes.append(node)
    if frozen:
        notes.append(f"parameters not listed in the optimizer are not trained (learning-rate multiplier 0): "
                     f"{', '.join(frozen)}")
    return nodes


# ------------------------------------------------------------------------------------- optimizer & config
def _solver(proto: Any, unsupported: List[str], notes: List[str]) -> Optimizer:
    from nnconsole.engine.solvers import SOLVER_PARAMS

    opt = Optimizer()
    p: Any = None
    if not len(proto.optimizer):
        return opt
    if len(proto.optimizer) > 1:
        unsupported.append("optimizers " + ", ".join(f"'{o.name}'" for o in proto.optimizer[1:]) +
                           ": nnconsole trains one network with one optimizer; only "
                           f"'{proto.optimizer[0].name}' was imported")
    o = proto.optimizer[0]
    s = o.solver
    name = mapping.SOLVER_TYPES.get(s.type)
    if name is None:
        unsupported.append(mapping.unsupported_solver_message(s.type or "(none)"))
        field_name = {"Adadelta": "adadelta_param", "AdaBelief": "adabelief_param", "Adamax": "adamax_param",
                      "AMSGRAD": "amsgrad_param", "AMSBound": "amsbound_param", "RMSpropGraves": "rmsprop_graves_param",
                      "SgdW": "sgdw_param", "Lamb": "lamb_param", "Lion": "lion_param"}.get(s.type)
        lr = 0.001
        if field_name and s.HasField(field_name):
            p = getattr(s, field_name)
            lr = _f(getattr(p, "alpha", 0) or getattr(p, "lr", 0) or getattr(p, "eta", 0) or 0.001)
        opt.solver, opt.learning_rate = "Adam", lr
    else:
        opt.solver = name
        field_name = mapping.SOLVER_PARAM_FIELDS[name]
        p = getattr(s, field_name)
        opt.learning_rate = _f(getattr(p, mapping.LR_FIELD[name]))
        known = SOLVER_PARAMS[name]
        opt.solver_params = {k: _f(getattr(p, k)) for k in known if hasattr(p, k)}
        if not s.HasField(field_name):
            opt.solver_params = dict(known)
            unsupported.append(f"solver {name}: the file gives no {field_name}; learning rate "
                               f"{opt.learning_rate:g} and nnabla's defaults are used")
            if opt.learning_rate == 0:
                opt.learning_rate = 0.001
        if name == "AdamW":
            opt.weight_decay = _f(p.wd)
    opt.weight_decay = opt.weight_decay or _f(s.weight_decay)
    if name == "AdamW" and p is not None and s.weight_decay and p.wd:
        unsupported.append(f"solver AdamW: both weight_decay {s.weight_decay:g} and wd {p.wd:g} are set; "
                           f"nnconsole applies one decay, {p.wd:g}")
    opt.update_interval = max(1, int(o.update_interval or 1))
    kind = s.lr_scheduler_type
    if kind == "Exponential":
        g = s.exponential_scheduler_param
        opt.schedule = Schedule(type="exponential")
        opt.lr_multiplier = _f(g.gamma) if g.gamma > 0 else 1.0
        opt.lr_update_interval = int(g.iter_interval)
        if opt.lr_multiplier != 1.0 and opt.lr_update_interval <= 0:
            opt.lr_update_interval = 1  # nnabla multiplies every iteration then; nnconsole's 0 would mean never
            notes.append("exponential scheduler without iter_interval: nnabla decays every iteration, so "
                         "lr_update_interval is 1")
    elif kind == "Step":
        g = s.step_scheduler_param
        opt.schedule = Schedule(type="step", steps=[int(v) for v in g.iter_steps], gamma=_f(g.gamma))
    elif kind == "Cosine":
        opt.schedule = Schedule(type="cosine", max_iter=int(s.cosine_scheduler_param.max_iter))
    elif kind == "Polynomial":
        g = s.polynomial_scheduler_param
        opt.schedule = Schedule(type="polynomial", max_iter=int(g.max_iter), power=_f(g.power))
    elif kind == "":
        opt.schedule = Schedule(type="exponential")
        if s.lr_decay and s.lr_decay != 1.0:
            opt.lr_multiplier = _f(s.lr_decay)
            opt.lr_update_interval = int(s.lr_decay_interval or 1)
    else:
        unsupported.append(f"learning-rate scheduler {kind}: not supported by nnconsole; the rate stays constant")
        opt.schedule = Schedule(type="constant")
    if s.lr_warmup_scheduler_type == "Linear":
        opt.warmup_iterations = int(s.linear_warmup_scheduler_param.warmup_iter)
    elif s.lr_warmup_scheduler_type:
        unsupported.append(f"warm-up scheduler {s.lr_warmup_scheduler_type}: only Linear is supported")
    if o.start_iter or o.end_iter:
        unsupported.append(f"optimizer '{o.name}' start_iter/end_iter {o.start_iter}/{o.end_iter}: nnconsole "
                           "updates on every iteration")
    return opt


def _datasets(proto: Any, base_dir: str, notes: List[str], unsupported: List[str]) -> Tuple[Datasets, int]:
    ds = Datasets()
    by_name = {d.name: d for d in proto.dataset}
    train_name = ""
    if len(proto.optimizer) and proto.optimizer[0].dataset_name:
        train_name = proto.optimizer[0].dataset_name[0]
    valid_name = ""
    for m in proto.monitor:
        if m.dataset_name and m.dataset_name[0] != train_name and ("valid" in m.name.lower() or not valid_name):
            valid_name = m.dataset_name[0]
    names = list(by_name)
    if not names:
        notes.append("the file names no datasets; set datasets.training and datasets.validation")
    if not train_name:
        train_name = "Training" if "Training" in by_name else (names[0] if names else "")
    if not valid_name:
        valid_name = "Validation" if "Validation" in by_name else next((n for n in names if n != train_name), "")
    batch = 0
    if train_name in by_name:
        d = by_name[train_name]
        ds.training = resolve_dataset(d.uri, base_dir, notes, "Training")
        ds.shuffle = bool(d.shuffle)
        ds.normalize = not d.no_image_normalization
        batch = int(d.batch_size)
    if valid_name in by_name:
        ds.validation = resolve_dataset(by_name[valid_name].uri, base_dir, notes, "Validation")
    elif ds.training:
        notes.append("the file names no validation dataset; the training dataset is used for validation")
        ds.validation = ds.training
    extra = [n for n in names if n not in (train_name, valid_name)]
    if extra:
        unsupported.append(f"datasets {', '.join(extra)}: nnconsole uses one training and one validation dataset")
    return ds, batch


def _config(proto: Any, net: Any, batch: int, notes: List[str]) -> TrainingConfig:
    t = proto.training_config
    cfg = TrainingConfig()
    # max_epoch, monitor_interval (nnabla_cli validates when epoch % monitor_interval == 0), save_best.
    read_training_config(cfg, t, proto.HasField("training_config"), notes)
    cfg.batch_size = int(net.batch_size or batch or cfg.batch_size)
    backends = list(proto.global_config.default_context.backends)
    if any(b.endswith(":half") for b in backends):
        cfg.precision = "half"
    if backends:
        notes.append(f"the file's context ({', '.join(backends)}) is not kept: nnconsole picks the device itself "
                     "(config.device: auto)")
    return cfg


# ------------------------------------------------------------------------------------- parameters
def write_initial_parameters(params: Dict[str, Tuple[Any, bool]], renames: Dict[str, List[str]], out_path: str,
                             notes: List[str], unsupported: List[str]) -> Optional[str]:
    """Write the file's parameters under the project's names to ``out_path`` (.h5); None when none match."""
    if not params:
        return None
    import nnabla as nn

    out: Dict[str, Any] = {}
    missing = []
    for source_name, targets in renames.items():
        if source_name not in params:
            missing.append(source_name)
            continue
        data, need_grad = params[source_name]
        for target in targets:
            var = nn.Variable(data.shape, need_grad=need_grad)
            var.d = data
            out[target] = var
    used = set(renames)
    unused = [k for k in params if k not in used]
    if missing:
        notes.append(f"parameters missing from the file start from their initializers: {', '.join(missing)}")
    if unused:
        unsupported.append(f"parameters in the file that no layer uses: {', '.join(sorted(unused))}")
    if not out:
        return None
    os.makedirs(os.path.dirname(os.path.abspath(out_path)) or ".", exist_ok=True)
    nn.save_parameters(out_path, params=out, extension=".h5")
    return out_path


# ------------------------------------------------------------------------------------- the whole import
def proto_to_project(proto: Any, base_dir: str, name: str, unsupported: List[str], notes: List[str],
                     where: str, extras: Optional[Dict[str, Any]] = None) -> Tuple[Project, List[Node]]:
    """A Project from a parsed NNablaProtoBuf (dataset URIs resolved against ``base_dir``)."""
    net = _training_network(proto, notes)
    others = [n.name for n in proto.network if n.name != net.name]
    if others:
        notes.append(f"networks {', '.join(others)} were not imported: nnconsole derives the validation and "
                     "runtime networks from the training network")
    nodes = network_nodes(proto, net, unsupported, notes, where)
    nodes, _ = remove_pass_through(nodes, mapping.PASS_THROUGH)
    times = {r.id: int(r.times) for r in net.repeat_info}
    for n in nodes:  # a RepeatEnd carries the count too
        if n.type == "RepeatEnd" and n.params.get("times"):
            times.setdefault(n.repeat_id, int(n.params["times"]))
    try:
        nodes = expand_repeats(nodes, times, notes, unsupported, where)
    except ValueError as exc:
        raise InteropError(str(exc)) from None
    finalize_names(nodes)
    layers = to_layers(nodes, unsupported, layout=True)
    datasets, batch = _datasets(proto, base_dir, notes, unsupported)
    config = _config(proto, net, batch, notes)
    optimizer = _solver(proto, unsupported, notes)
    project = Project(name=name, network=Network(layers=layers), datasets=datasets, config=config,
                      optimizer=optimizer, multi_gpu=MultiGPU())
    if extras:
        apply_extras(project, extras, notes)
    return project, nodes


def apply_extras(project: Project, extras: Dict[str, Any], notes: List[str]) -> None:
    """Restore the nnconsole settings an nnconsole-written .nntxt keeps in its header comment."""
    from nnconsole.engine.project.codec import project_from_dict
    from nnconsole.engine.project.model import MultiGPU as _MultiGPU

    project.name = str(extras.get("name", project.name))
    project.description = str(extras.get("description", project.description))
    cfg = extras.get("config", {})
    for key in ("seed", "device", "log_interval"):
        if key in cfg and (key != "log_interval" or (type(cfg[key]) is int and cfg[key] >= 1)):
            setattr(project.config, key, cfg[key])
    if isinstance(extras.get("multi_gpu"), dict):
        problems: list = []
        wrapper = project_from_dict({"format_version": FORMAT_VERSION, "multi_gpu": extras["multi_gpu"]}, problems)
        if not problems:
            project.multi_gpu = wrapper.multi_gpu if isinstance(wrapper.multi_gpu, _MultiGPU) else project.multi_gpu
    if "cache" in extras.get("datasets", {}):
        project.datasets.cache = bool(extras["datasets"]["cache"])
    layers = {layer.name: layer for layer in project.network.layers}
    for lname, info in (extras.get("layers") or {}).items():
        layer = layers.get(lname)
        if layer is None or not isinstance(info, dict):
            continue
        if "position" in info and isinstance(info["position"], list) and len(info["position"]) == 2:
            layer.position = (float(info["position"][0]), float(info["position"][1]))
        else:
            layer.position = None
        if info.get("type") == "Flatten" and layer.type == "Reshape" and len(layer.params.get("shape", [])) == 1:
            layer.type, layer.params = "Flatten", {}
    sched = extras.get("schedule")
    opt = project.optimizer
    if isinstance(sched, dict):
        if sched.get("type") == "constant" and opt.schedule.type == "exponential" and opt.lr_multiplier == 1.0:
            opt.schedule = Schedule(type="constant")
        elif sched.get("type") in ("cosine", "polynomial") and sched.get("type") == opt.schedule.type \
                and "max_iter" in sched:
            opt.schedule.max_iter = int(sched["max_iter"])
    for key in ("lr_multiplier", "lr_update_interval"):
        if key in extras.get("optimizer", {}) and opt.schedule.type == "exponential" and opt.lr_multiplier == 1.0:
            setattr(opt, key, extras["optimizer"][key])


def import_nntxt(path: str, workdir: Optional[str] = None) -> ImportResult:
    """Import an .nntxt / .prototxt / .protobuf / .nnp file; see the module docstring."""
    path = os.path.abspath(path)
    proto, params, text = read_proto(path)
    unsupported: List[str] = []
    notes: List[str] = []
    extras = read_extras(text)
    name = os.path.splitext(os.path.basename(path))[0]
    project, nodes = proto_to_project(proto, os.path.dirname(path), name, unsupported, notes, path, extras)
    renames, shared = parameter_renames(nodes)
    scopes: Dict[str, List[str]] = {}
    for pname in shared:
        scopes.setdefault(pname.rsplit("/", 2)[0], [t.split("/")[0] for t in renames[pname]])
    for scope, users in scopes.items():
        unsupported.append(f"parameters '{scope}/...' are shared by layers {', '.join(users)}; nnconsole gives each "
                           "layer its own copy (initialized from the shared values)")
    init_path = None
    if params:
        folder = workdir or tempfile.mkdtemp(prefix="nnconsole-import-")
        init_path = write_initial_parameters(params, renames, os.path.join(folder, f"{name}_initial.h5"),
                                             notes, unsupported)
    return ImportResult(project=project, unsupported=unsupported, notes=notes,
                        initial_parameters_path=init_path, source=path)
