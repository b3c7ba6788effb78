"""Import a Neural Network Console desktop project (``.sdcproj``, an INI file) as a project.

Layout of the file, as NNC writes it::

    [Global]               NumNetwork, Network_0=Main, Network_1=MainValidation, ...
    [Main_Network_Global]  NumLayer, NumLink
    [Main_Layer_3]         ID, Type, Position_0..3, NumProperty, Property_k_Name / Property_k_Value
    [Main_Link_2]          SourceLayerID, SourcePinIndex, DestLayerID, DestPinIndex
    [Dataset]              Num, MainIndex;  [Dataset_0] Name, URI, Shuffle, EnableCache, ImageNormalization
    [Config]               MaxEpoch, SaveBest, BatchSize, TypeConfig, MonitorInterval, NumOptimizer, ...
    [Optimizer_0]          Optimizer_NetworkName, Optimizer_DatasetName, SolverName, SolverParameter*,
                           WeightDecay, LearningRateScheduler, LearningRateMultiplier, LearningRateUpdateInterval(+Unit),
                           LearningRateWarmupScheduler, LearningRateWarmupLength(+Unit), UpdateInterval, ...

Property values such as ``*Name`` or ``*KernelShape`` mean "the value of that property". Loss layers
read their target from the dataset variable named by ``T.Dataset`` (a link in nnconsole: an Input
layer is added). Layer positions are kept for the EDIT canvas; ``W.Initializer``,
``W.InitializerMultiplier`` and ``W.LRateMultiplier`` (and the same for b, beta, gamma) become the
layer's initializers and learning-rate multipliers. Only the network the optimizer trains is imported.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from nnconsole.engine.layers import find_spec
from nnconsole.engine.project.model import (Datasets, Initializer, Network, Optimizer, Project, Schedule, TrainingConfig)

from nnconsole.engine.layers.nnc_values import as_bool, as_float, as_int, convert_value, ints, resolve

from . import mapping
from .archive import read_bounded
from .common import add_loss_targets, csv_rows, iterations_per_epoch, resolve_dataset
from .netgraph import (Node, WeightInfo, expand_repeats, finalize_names, parameter_renames, remove_pass_through,
                       to_layers)
from .report import ImportResult, InteropError
from .settings_map import read_nnc_config

EPOCH_UNIT = 0  # NNC's LearningRate*Unit: 0 = epochs, 1 = iterations (a missing unit means iterations)


# ------------------------------------------------------------------------------------------ INI parsing
@dataclass
class Section:
    name: str
    line: int
    values: Dict[str, str] = field(default_factory=dict)
    lines: Dict[str, int] = field(default_factory=dict)

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:
        return self.values.get(key, default)


def parse_ini(text: str) -> Dict[str, Section]:
    """Sections of an NNC INI file (keys are case-sensitive; a repeated section continues the first)."""
    sections: Dict[str, Section] = {}
    current = Section("", 0)
    sections[""] = current
    for n, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        line = raw.strip()
        if not line or line.startswith(";"):
            continue
        m = re.match(r"^\[(.+)\]$", line)
        if m:
            name = m.group(1)
            current = sections.setdefault(name, Section(name, n))
            continue
        if "=" in line:
            key, value = line.split("=", 1)
        else:
            key, value = line, ""
        current.values[key.strip()] = value
        current.lines[key.strip()] = n
    return sections


class _Reader:
    """Typed access to the sections with error messages naming file, section, key and line."""

    def __init__(self, path: str, sections: Dict[str, Section]):
        self.path = path
        self.sections = sections

    def section(self, name: str, required: bool = True) -> Optional[Section]:
        s = self.sections.get(name)
        if s is None and required:
            raise InteropError(f"{self.path}: section [{name}] is missing; the file is not a complete NNC project "
                               "(save it again from Neural Network Console)")
        return s

    def where(self, s: Section, key: str) -> str:
        line = s.lines.get(key, s.line)
        return f"{self.path}:{line} [{s.name}] {key}"

    def int(self, s: Section, key: str, default: Optional[int] = None) -> int:
        raw = s.get(key)
        if raw is None or raw.strip() == "":
            if default is None:
                raise InteropError(f"{self.path}:{s.line} [{s.name}]: {key} is missing; add '{key}=<number>'")
            return default
        try:
            return int(float(raw))
        except ValueError:
            raise InteropError(f"{self.where(s, key)}: expected a number, got '{raw}'") from None


# ------------------------------------------------------------------------------------------ properties
def _layer_properties(s: Section) -> Dict[str, str]:
    """Property name -> raw value of one [<Net>_Layer_i] section, in property order."""
    props: Dict[str, str] = {}
    count = s.get("NumProperty")
    indices = range(int(count)) if count and count.strip().isdigit() else sorted(
        {int(m.group(1)) for k in s.values for m in [re.match(r"Property_(\d+)_Name$", k)] if m})
    for k in indices:
        name = s.get(f"Property_{k}_Name")
        if name is not None:
            props[name] = s.get(f"Property_{k}_Value", "") or ""
    return props


_resolve = resolve
_ints = ints
_convert_value = convert_value


def _neutral(value: Optional[str]) -> bool:
    """An option left off (False/None/0/0,0): a property nnconsole lacks but that changes nothing."""
    if value is None:
        return True
    text = value.strip()
    if text in ("", "False", "false", "None"):
        return True
    try:
        return all(v == 0 for v in _ints(text))
    except ValueError:
        return False


def _layer_params(rtype: str, name: str, props: Dict[str, str], unsupported: List[str]) -> Dict[str, Any]:
    """Registry parameters from NNC properties (unknown or unconvertible ones are listed).

    The type's registration says how: its ``from_sdcproj`` hook first (properties it handled are
    done), then its ``nnc_properties`` table, converted by each parameter's kind."""
    from nnconsole.engine.layers import get_spec

    spec = get_spec(rtype)
    names = spec.nnc_properties
    params: Dict[str, Any] = {}
    handled = set(spec.from_sdcproj(name, props, params, unsupported)) if spec.from_sdcproj else set()
    for prop, pname in names.items():
        if prop not in props or prop in handled:
            continue
        value = _resolve(props, prop)
        if value is None or value.startswith("*"):
            unsupported.append(f"layer '{name}' ({rtype}): property {prop}={props[prop]} is computed by NNC and "
                               "cannot be read; nnconsole's default is used")
            continue
        try:
            params[pname] = _convert_value(spec.param(pname).kind, value)
        except (ValueError, KeyError) as exc:
            unsupported.append(f"layer '{name}' ({rtype}): property {prop}={value} not usable ({exc}); "
                               "nnconsole's default is used")
    weight_props = {f"{k}.{suffix}" for k in spec.weight_order
                    for suffix in ("File", "Initializer", "InitializerMultiplier", "LRateMultiplier")}
    for prop, value in props.items():
        if prop in names or prop in weight_props or prop in handled or prop in mapping.IGNORED_PROPERTIES:
            continue
        if prop.startswith(mapping.IGNORED_PROPERTY_PREFIXES) or _neutral(_resolve(props, prop)):
            continue
        unsupported.append(f"layer '{name}' ({rtype}): property {prop}={value} has no nnconsole equivalent")
    return params


def _weights(rtype: str, name: str, props: Dict[str, str], params: Dict[str, Any], scope_name: str,
             unsupported: List[str]) -> Dict[str, WeightInfo]:
    spec = find_spec(rtype)
    keys = list(spec.weight_order if spec else ())
    if not params.get("with_bias", True):  # the bias a with_bias parameter turns off
        keys = [k for k in keys if k != "b"]
    pf_scope = spec.weight_scope if spec else ""
    out: Dict[str, WeightInfo] = {}
    for key in keys:
        info = WeightInfo(source_name=f"{scope_name}/{pf_scope}/{key}")
        kind_raw = _resolve(props, f"{key}.Initializer")
        mult_raw = _resolve(props, f"{key}.InitializerMultiplier")
        if kind_raw:
            kind = mapping.initializer_type(kind_raw.strip())
            if kind is None:
                unsupported.append(f"layer '{name}': {key}.Initializer={kind_raw} has no nnconsole equivalent; "
                                   "the layer's default initializer is used")
            else:
                m = as_float(mult_raw, 1.0 if kind != "Constant" else 0.0) if mult_raw is not None else None
                if kind == "Constant":
                    info.initializer = Initializer("Constant", 1.0, m if m is not None else 0.0)
                else:
                    info.initializer = Initializer(kind, m if m is not None else 1.0, 0.0)
        lr_raw = _resolve(props, f"{key}.LRateMultiplier")
        if lr_raw is not None and lr_raw.strip() != "":
            info.lr_multiplier = as_float(lr_raw, 1.0)
        file_raw = _resolve(props, f"{key}.File")
        if file_raw and file_raw.strip():
            unsupported.append(f"layer '{name}': {key}.File={file_raw} (weights loaded from a file) is not supported; "
                               "the weights start from the initializer")
        out[key] = info
    return out


# ------------------------------------------------------------------------------------------ network
def _network_prefix(reader: _Reader, network: str) -> str:
    if network and reader.section(f"{network}_Network_Global", required=False) is not None:
        return f"{network}_"
    return ""


def _nodes(reader: _Reader, network: str, unsupported: List[str], notes: List[str]
           ) -> Tuple[List[Node], Dict[str, str], Dict[str, int]]:
    """Nodes of one network, loss targets (loss node -> dataset variable) and repeat counts."""
    prefix = _network_prefix(reader, network)
    glob = reader.section(f"{prefix}Network_Global")
    n_layers = reader.int(glob, "NumLayer")
    n_links = reader.int(glob, "NumLink", 0)
    by_id: Dict[int, Node] = {}
    order: List[Node] = []
    targets: Dict[str, str] = {}
    times: Dict[str, int] = {}
    taken: Set[str] = set()
    repeat_end_ids: Dict[str, str] = {}
    for i in range(n_layers):
        s = reader.section(f"{prefix}Layer_{i}")
        lid = reader.int(s, "ID", i)
        ltype = (s.get("Type") or "").strip()
        props = _layer_properties(s)
        name = (props.get("Name") or f"{ltype}_{i}").strip()
        if "/" in name:
            notes.append(f"layer name '{name}' contains '/', which nnabla reserves; renamed")
            name = name.replace("/", "_")
        if name in taken:
            raise InteropError(f"{reader.path}:{s.line} [{s.name}]: layer name '{name}' is used twice; rename one "
                               "in Neural Network Console")
        taken.add(name)
        position = (as_float(s.get("Position_0"), 0.0), as_float(s.get("Position_1"), 0.0))
        node = Node(name=name, type=ltype, position=position)
        rtype = mapping.registry_type(ltype)
        if ltype == "Comment":
            notes.append(f"comment '{name}' dropped")
            continue
        if ltype == "RepeatStart":
            node.repeat_id = name
            times[name] = as_int(_resolve(props, "Times"), 0)
        elif ltype == "RepeatEnd":
            rid = _resolve(props, "ID") or "RepeatStart"
            node.repeat_id = rid
            repeat_end_ids[name] = rid
        elif ltype == "Input":
            node.params = _layer_params("Input", name, props, unsupported)
            gen = _resolve(props, "Generator")
            if gen and gen.strip() not in ("", "None"):
                unsupported.append(f"layer '{name}' (Input): Generator={gen} (random input) is not supported; it "
                                   "reads the dataset variable instead")
        elif rtype is not None:
            node.params = _layer_params(rtype, name, props, unsupported)
            scope = (_resolve(props, "ParameterScope") or name).strip() or name
            node.weights = _weights(rtype, name, props, node.params, scope, unsupported)
            from nnconsole.engine.layers import get_spec
            if get_spec(rtype).is_loss:
                targets[name] = (_resolve(props, "T.Dataset") or "y").strip()
                gen = _resolve(props, "T.Generator")
                if gen and gen.strip() not in ("", "None"):
                    unsupported.append(f"loss '{name}': T.Generator={gen} is not supported; the target reads "
                                       f"dataset variable '{targets[name]}'")
        elif ltype in mapping.PASS_THROUGH:
            pass
        else:
            node.params = {mapping.camel_to_snake(k): v for k, v in props.items()
                           if k not in mapping.IGNORED_PROPERTIES and not k.startswith(mapping.IGNORED_PROPERTY_PREFIXES)}
        by_id[lid] = node
        order.append(node)
    links: List[Tuple[int, int, int, int, int]] = []
    for i in range(n_links):
        s = reader.section(f"{prefix}Link_{i}")
        src, dst = reader.int(s, "SourceLayerID"), reader.int(s, "DestLayerID")
        if src not in by_id or dst not in by_id:
            raise InteropError(f"{reader.path}:{s.line} [{s.name}]: link from layer ID {src} to {dst} names a layer "
                               "that does not exist; remove the link or the file is damaged")
        links.append((reader.int(s, "ID", i), src, reader.int(s, "SourcePinIndex", 0), dst,
                      reader.int(s, "DestPinIndex", 0)))
    for _, src, spin, dst, dpin in sorted(links):
        s_node, d_node = by_id[src], by_id[dst]
        if spin != 0 or dpin != 0:
            unsupported.append(f"link {s_node.name} -> {d_node.name} uses side pin {spin}/{dpin} (e.g. a "
                               "Parameter layer feeding a weight); only main data links are imported")
            continue
        d_node.inputs.append(s_node.name)
    _mark_repeats(order, repeat_end_ids, times, reader.path)
    return order, targets, times


def _mark_repeats(nodes: List[Node], end_ids: Dict[str, str], times: Dict[str, int], path: str) -> None:
    """Fill repeat_ids (the RepeatStart blocks around each layer) and give each RepeatStart its loop-back input."""
    by_name = {n.name: n for n in nodes}
    consumers: Dict[str, List[str]] = {n.name: [] for n in nodes}
    for n in nodes:
        for src in n.inputs:
            consumers.setdefault(src, []).append(n.name)

    def reach(start: str, step) -> Set[str]:
        seen: Set[str] = set()
        stack = [start]
        while stack:
            for nxt in step(stack.pop()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    for start in [n for n in nodes if n.type == "RepeatStart"]:
        ends = [by_name[e] for e, rid in end_ids.items() if rid == start.name]
        if len(ends) != 1:
            raise InteropError(f"{path}: RepeatStart '{start.name}' needs exactly one RepeatEnd whose ID is "
                               f"'{start.name}', found {len(ends)}")
        end = ends[0]
        down = reach(start.name, lambda x: consumers.get(x, []))
        up = reach(end.name, lambda x: by_name[x].inputs if x in by_name else [])
        body = (down & up) - {start.name, end.name}
        for name in body:
            by_name[name].repeat_ids.append(start.name)
        start.repeat_ids.append(start.name)
        if end.inputs:
            start.inputs = start.inputs[:1] + [end.inputs[0]]
    depth = {n.name: len(n.repeat_ids) for n in nodes if n.type == "RepeatStart"}
    for n in nodes:
        n.repeat_ids.sort(key=lambda r: depth.get(r, 0))
        if n.repeat_ids:  # NNC names weights inside a repeat 'Conv{RepeatStart}/conv/W': one set per iteration
            marks = "".join("{" + r + "}" for r in n.repeat_ids if r != n.name)
            for w in n.weights.values():
                scope, rest = w.source_name.split("/", 1)
                w.source_name = f"{scope}{marks}/{rest}"


# ------------------------------------------------------------------------------------------ settings
def _datasets(reader: _Reader, train_name: str, notes: List[str], unsupported: List[str]) -> Datasets:
    base = os.path.dirname(reader.path)
    head = reader.section("Dataset", required=False)
    count = reader.int(head, "Num", 0) if head else 0
    entries = [reader.section(f"Dataset_{i}") for i in range(count)]
    if not entries:
        entries = [s for name, s in sorted(reader.sections.items()) if re.match(r"Dataset_\d+$", name)]
    ds = Datasets()
    if not entries:
        notes.append("the project names no datasets; set datasets.training and datasets.validation")
        return ds
    by_name = {(e.get("Name") or "").strip(): e for e in entries}
    train = by_name.get(train_name)
    if train is None:
        main = reader.int(head, "MainIndex", 0) if head else 0
        train = entries[main] if 0 <= main < len(entries) else entries[0]
    valid = next((e for e in entries if e is not train and "valid" in (e.get("Name") or "").lower()), None)
    valid = valid or next((e for e in entries if e is not train), None)
    ds.training = resolve_dataset(train.get("URI") or "", base, notes, "Training")
    ds.shuffle = as_bool(train.get("Shuffle"), True)
    ds.cache = as_bool(train.get("EnableCache"), True)
    ds.normalize = as_bool(train.get("ImageNormalization"), True)
    if valid is not None:
        ds.validation = resolve_dataset(valid.get("URI") or "", base, notes, "Validation")
    else:
        notes.append("the project has one dataset; it is used for validation too")
        ds.validation = ds.training
    extra = [e.get("Name") for e in entries if e is not train and e is not valid]
    if extra:
        unsupported.append(f"datasets {', '.join(map(str, extra))}: nnconsole uses one training and one "
                           "validation dataset")
    return ds


def _config(reader: _Reader, unsupported: List[str]) -> TrainingConfig:
    cfg = TrainingConfig()
    s = reader.section("Config", required=False)
    if s is None:
        return cfg
    # MaxEpoch, BatchSize, MonitorInterval (epochs between validations), SaveBest: the schema's NNC names.
    read_nnc_config(cfg, lambda key, default: reader.int(s, key, default),
                    lambda key, default: as_bool(s.get(key), default), unsupported)
    precision = (s.get("TypeConfig") or "Float").strip().lower()
    if precision in ("half", "float16", "mixed"):
        cfg.precision = "half"
    elif precision not in ("float", ""):
        unsupported.append(f"TypeConfig={s.get('TypeConfig')}: nnconsole computes in float or half; float is used")
    return cfg


def _iterations(value: int, unit: Optional[str], ipe: Optional[int], what: str, unsupported: List[str]) -> int:
    if unit is not None and as_int(unit, 1) == EPOCH_UNIT:
        if ipe is None:
            unsupported.append(f"{what} is {value} epochs but the training CSV could not be read to convert it to "
                               f"iterations; {value} iterations are used")
            return value
        return value * ipe
    return value


def _optimizer(reader: _Reader, s: Optional[Section], ipe: Optional[int], unsupported: List[str],
               notes: List[str]) -> Optimizer:
    from nnconsole.engine.solvers import SOLVER_PARAMS

    opt = Optimizer()
    if s is None:
        notes.append("the project has no optimizer section; Adam with nnconsole's defaults is used")
        return opt
    solver = (s.get("SolverName") or "Adam").strip()
    name = mapping.SOLVER_TYPES.get(solver)
    if name is None:
        unsupported.append(mapping.unsupported_solver_message(solver))
        name = "Adam"
    opt.solver = name
    opt.solver_params = dict(SOLVER_PARAMS[name])
    count = reader.int(s, "SolverParameterNum", 0)
    for k in range(count):
        pname = (s.get(f"SolverParameterName_{k}") or "").strip()
        raw = s.get(f"SolverParameter_{k}")
        key = mapping.SOLVER_PARAMETER_ALIASES.get(pname.lower().replace(" ", "").replace("_", ""))
        if key is None or raw is None:
            unsupported.append(f"solver parameter {pname}={raw}: not a parameter of nnconsole's {name}")
            continue
        value = as_float(raw, float("nan"))
        if value != value:
            raise InteropError(f"{reader.where(s, f'SolverParameter_{k}')}: {pname} must be a number, got '{raw}'")
        if key == "learning_rate":
            opt.learning_rate = value
        elif key == "weight_decay":
            opt.weight_decay = value
        elif key in SOLVER_PARAMS[name]:
            opt.solver_params[key] = value
        else:
            unsupported.append(f"solver parameter {pname}={raw}: not a parameter of nnconsole's {name}")
    if s.get("WeightDecay") is not None and as_float(s.get("WeightDecay"), 0.0):
        opt.weight_decay = as_float(s.get("WeightDecay"), 0.0)
    opt.update_interval = max(1, as_int(s.get("UpdateInterval"), 1))
    kind = (s.get("LearningRateScheduler") or "Exponential").strip()
    interval = as_int(s.get("LearningRateUpdateInterval"), 0)
    unit = s.get("LearningRateUpdateIntervalUnit")
    if kind == "Exponential":
        opt.schedule = Schedule(type="exponential")
        opt.lr_multiplier = as_float(s.get("LearningRateMultiplier"), 1.0) or 1.0
        opt.lr_update_interval = _iterations(interval, unit, ipe, "LearningRateUpdateInterval", unsupported)
    elif kind == "Step":
        steps = _ints(s.get("LearningRateSteps") or "")
        steps = [_iterations(v, unit, ipe, "LearningRateSteps", unsupported) for v in steps]
        opt.schedule = Schedule(type="step", steps=steps, gamma=as_float(s.get("LearningRateMultiplier"), 0.1))
    elif kind == "Cosine":
        opt.schedule = Schedule(type="cosine")
    elif kind == "Polynomial":
        opt.schedule = Schedule(type="polynomial", power=as_float(s.get("LearningRatePower"), 1.0))
    else:
        unsupported.append(f"LearningRateScheduler={kind}: not supported; the rate stays constant")
        opt.schedule = Schedule(type="constant")
    warm = (s.get("LearningRateWarmupScheduler") or "None").strip()
    if warm == "Linear":
        length = as_int(s.get("LearningRateWarmupLength"), 0)
        opt.warmup_iterations = _iterations(length, s.get("LearningRateWarmupLengthUnit"), ipe,
                                            "LearningRateWarmupLength", unsupported)
    elif warm not in ("None", ""):
        unsupported.append(f"LearningRateWarmupScheduler={warm}: only Linear is supported")
    for key in ("RangeFrom", "RangeTo"):
        if s.get(key) not in (None, "", "-1"):
            unsupported.append(f"optimizer {key}={s.get(key)}: nnconsole updates on every iteration")
    return opt


# ------------------------------------------------------------------------------------------ the import
def import_sdcproj(path: str) -> ImportResult:
    """Import an NNC desktop project file; see the module docstring."""
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise InteropError(f"{path}: file not found; check the path")
    raw = read_bounded(path)
    for enc in ("utf-8-sig", "cp932", "latin-1"):
        try:
            text = raw.decode(enc)
            break
        except UnicodeDecodeError:
            continue
    sections = parse_ini(text)
    reader = _Reader(path, sections)
    unsupported: List[str] = []
    notes: List[str] = []

    glob = reader.section("Global", required=False)
    networks = []
    if glob is not None:
        networks = [(glob.get(f"Network_{i}") or "").strip() for i in range(reader.int(glob, "NumNetwork", 0))]
    networks = networks or ["Main"]
    config_s = reader.section("Config", required=False)
    n_opt = reader.int(config_s, "NumOptimizer", 1) if config_s else 1
    opt_s = reader.section("Optimizer_0", required=False)
    if n_opt > 1:
        unsupported.append(f"{n_opt - 1} more optimizer(s): nnconsole trains one network; Optimizer_0 was imported")
    wanted = (opt_s.get("Optimizer_NetworkName") or "").strip() if opt_s else ""
    network = wanted if wanted in networks else ("Main" if "Main" in networks else networks[0])
    others = [n for n in networks if n != network]
    if others:
        notes.append(f"networks {', '.join(others)} were not imported: nnconsole derives the validation and "
                     "runtime networks from the training network")

    nodes, targets, times = _nodes(reader, network, unsupported, notes)
    nodes, removed = remove_pass_through(nodes, mapping.PASS_THROUGH)
    if removed:
        notes.append(f"Identity layers removed (no-ops): {', '.join(removed)}")
    try:
        nodes = expand_repeats(nodes, times, notes, unsupported, path)
    except ValueError as exc:
        raise InteropError(str(exc)) from None
    finalize_names(nodes)
    expanded_targets = {}
    for n in nodes:
        base = n.base_name
        if base in targets:
            expanded_targets[n.name] = targets[base]
    nodes = add_loss_targets(nodes, expanded_targets, unsupported)
    layers = to_layers(nodes, unsupported, layout=True)
    renames, shared = parameter_renames(nodes)
    scopes: Dict[str, List[str]] = {}
    for pname in shared:
        scopes.setdefault(pname.split("/")[0], [t.split("/")[0] for t in renames[pname]])
    for scope, users in scopes.items():
        unsupported.append(f"parameter scope '{scope}' is shared by layers {', '.join(users)}; nnconsole gives each "
                           "layer its own weights")

    train_name = (opt_s.get("Optimizer_DatasetName") or "").strip() if opt_s else ""
    datasets = _datasets(reader, train_name, notes, unsupported)
    config = _config(reader, unsupported)
    ipe = iterations_per_epoch(csv_rows(datasets.training), config.batch_size)
    optimizer = _optimizer(reader, opt_s, ipe, unsupported, notes)
    desc = reader.section("Description", required=False)
    description = (desc.get("Text") or "").replace("\\n", "\n") if desc else ""
    project = Project(name=os.path.splitext(os.path.basename(path))[0], description=description,
                      network=Network(layers=layers), datasets=datasets, config=config, optimizer=optimizer)
    return ImportResult(project=project, unsupported=unsupported, notes=notes, initial_parameters_path=None,
                        source=path)
