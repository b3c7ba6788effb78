"""Open an nnabla / Neural Network Console ``.nntxt`` (protobuf text), ``.protobuf`` or ``.nnp`` as a project.

The import runs the stages every importer shares (read -> graph -> mapping -> report -> project):
``nntxt_read`` reads the file, ``nntxt_network`` turns the training network into graph nodes with
registry parameters, ``pipeline`` runs the steps all formats share (no-ops, repeats, layers, shared
parameters), ``nntxt_settings`` maps the optimizer, datasets and config, and this module assembles
the project, its initial parameters and its report.

The training network (the one the first optimizer trains, NNC's ``Main``) becomes the layers; the
validation and runtime networks are derived by nnconsole and not imported. RepeatStart/RepeatEnd
blocks are kept as blocks (the engine unrolls them as nnabla does). The optimizer's solver and
learning-rate schedule become the CONFIG's optimizer,
``training_config`` the CONFIG, the datasets the dataset paths, and the parameters a ``.nnp`` carries
the initial weights (written to an ``.h5`` under the project's parameter names).
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, List, Optional, Tuple

from nnconsole.engine.project.model import (Comment, FORMAT_VERSION, MultiGPU, MultiGPU as _MultiGPU, Network,
                                            Project, Schedule)

from nnconsole.engine.interop.netgraph import Node
from nnconsole.engine.interop.nntxt.network import network_nodes, training_network
from nnconsole.engine.interop.nntxt.reader import EXTRAS_PREFIX, comment_settings, extras_line, read_extras, read_proto  # noqa: F401  (read_proto: the import API)
from nnconsole.engine.interop.nntxt.settings import read_config, read_datasets, read_optimizer
from nnconsole.engine.interop.pipeline import ImportedGraph, graph_to_layers, parameter_names
from nnconsole.engine.interop.report import ImportResult, InteropError

from nnconsole.engine.interop.nntxt.optimizers import derived_network, read_executors, read_extra_optimizers
from nnconsole.engine.project.codec import project_from_dict
from nnconsole.engine.project.errors import Problem
from nnconsole.engine.project.schema import BY_PATH, set_value_at, value_at
from nnconsole.engine.check.validate import check_setting
from nnconsole.engine.layers import find_spec, resolve_params

# ------------------------------------------------------------------------------------- parameters
def write_initial_parameters(params: Dict[str, Tuple[Any, bool]], renames: Dict[str, List[str]], out_path: str,
                             notes: List[str], unsupported: List[str]) -> Optional[str]:
    """Write the file's parameters under the project's names to ``out_path`` (.h5); None when none match."""
    if not params:
        return None
    import nnabla as nn  # deferred: nnabla stays out of the GUI

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
                     where: str, extras: Optional[Dict[str, Any]] = None,
                     extras_where: str = "") -> Tuple[Project, List[Node]]:
    """A Project from a parsed NNablaProtoBuf (dataset URIs resolved against ``base_dir``); ``extras_where``
    names the settings comment in messages (file:line; default ``where``)."""
    net = training_network(proto, notes)

    trained = {o.network_name for o in proto.optimizer}
    others = [n.name for n in proto.network if n.name != net.name and n.name not in trained and derived_network(n.name)]
    if others:
        notes.append(f"networks {', '.join(others)} were not imported: nnconsole derives the validation and "
                     "runtime networks from the training network")
    nodes = network_nodes(proto, net, unsupported, notes, where)
    times = {r.id: int(r.times) for r in net.repeat_info}
    for n in nodes:  # a RepeatEnd carries the count too
        if n.type == "RepeatEnd" and n.params.get("times"):
            times.setdefault(n.repeat_id, int(n.params["times"]))
    layers, nodes = graph_to_layers(ImportedGraph(nodes, times, marked_weights=True), unsupported, notes, where)
    datasets, batch = read_datasets(proto, base_dir, notes, unsupported)
    config = read_config(proto, net, batch, notes)
    optimizer = read_optimizer(proto, unsupported, notes)
    project = Project(name=name, network=Network(layers=layers), datasets=datasets, config=config,
                      optimizer=optimizer, multi_gpu=MultiGPU())

    nodes = nodes + read_extra_optimizers(proto, net, nodes, project, unsupported, notes, where)
    read_executors(proto, net, project, notes)
    if extras:
        apply_extras(project, extras, notes, extras_where or where)
    return project, nodes


def checked_extra(where: str, dotted: str, value: Any) -> Any:
    """Setting ``dotted`` as the settings comment gives it, checked as a project file's value is (its type, then
    its range); a hand-edited value that is not acceptable refuses the import with the file, the setting and the
    fix, rather than training with a value nobody meant."""
    setting = BY_PATH[dotted]
    nested: Any = value
    for part in reversed(dotted.split(".")):
        nested = {part: nested}
    problems: List[Problem] = []
    wrapper = project_from_dict({"format_version": FORMAT_VERSION, **nested}, problems)
    if not problems:
        checked = value_at(wrapper, dotted)
        problems = check_setting(setting, checked)
        if not problems:
            return checked
    fix = "write true or false" if setting.kind == "bool" else \
        f"write a number {setting.allowed()}".rstrip() + (f" ({setting.fix})" if setting.fix else "")
    raise InteropError(f"{where}: '{EXTRAS_PREFIX}' comment, {dotted} ({setting.label}): {problems[0].message}; "
                       f"fix: {fix}, or delete \"{setting.key}\" from the comment's \"{setting.section}\" "
                       f"for the default ({setting.default!r})")


def apply_extras(project: Project, extras: Dict[str, Any], notes: List[str], where: str = "") -> None:
    """Restore the nnconsole settings an nnconsole-written .nntxt keeps in its header comment (``where``: the
    file and line of that comment, for messages)."""

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
    datasets = extras.get("datasets") if isinstance(extras.get("datasets"), dict) else {}
    for setting in comment_settings("datasets"):  # one absent (older exports; nnabla's, NNC's files): the default
        if setting.key in datasets:
            set_value_at(project, setting.path, checked_extra(where, setting.path, datasets[setting.key]))
    layers = {layer.name: layer for layer in project.network.layers}
    for lname, info in (extras.get("layers") or {}).items():
        layer = layers.get(lname)
        if layer is None or not isinstance(info, dict):
            continue
        if "position" in info and isinstance(info["position"], list) and len(info["position"]) == 2:
            layer.position = (float(info["position"][0]), float(info["position"][1]))
        else:
            layer.position = None
        _restore_exported_type(layer, info)
    sched = extras.get("schedule")
    opt = project.optimizer
    if isinstance(sched, dict):
        if sched.get("type") == "constant" and opt.schedule.type == "exponential" and opt.lr_multiplier == 1.0:
            opt.schedule = Schedule(type="constant")
        elif sched.get("type") in ("cosine", "polynomial") and sched.get("type") == opt.schedule.type \
                and "max_iter" in sched:
            opt.schedule.max_iter = int(sched["max_iter"])
    _restore_epochs(opt, extras.get("epochs"), notes)
    project.network.comments = _comments(extras.get("comments"))
    for key in ("lr_multiplier", "lr_update_interval"):
        if key in extras.get("optimizer", {}) and opt.schedule.type == "exponential" and opt.lr_multiplier == 1.0:
            setattr(opt, key, extras["optimizer"][key])


def _comments(entries: Any) -> List[Comment]:
    """The canvas notes an nnconsole-written .nntxt keeps in its header comment (malformed entries are skipped)."""
    out: List[Comment] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            continue
        pos = entry.get("position")
        ok = isinstance(pos, list) and len(pos) == 2 and all(type(v) in (int, float) for v in pos)
        out.append(Comment(entry["text"], (float(pos[0]), float(pos[1])) if ok else None))
    return out


def _restore_epochs(opt: Any, epochs: Any, notes: List[str]) -> None:
    """Lengths the project gave in epochs, which the file holds as iterations: back to epochs while the file
    still holds the iterations the export wrote for them (a hand-edited count stays iterations)."""
    if not isinstance(epochs, dict):
        return
    for key, unit_key in (("lr_update_interval", "lr_update_interval_unit"), ("warmup_iterations", "warmup_unit")):
        entry = epochs.get(key)
        if not isinstance(entry, dict):
            continue
        count, written = entry.get("epochs"), entry.get("written")
        if not all(type(v) is int and v > 0 for v in (count, written)):
            continue
        if getattr(opt, key) == written:
            setattr(opt, key, count)
            setattr(opt, unit_key, "epochs")
        else:
            notes.append(f"optimizer.{key} was {count} epochs ({written} iterations) when exported; the file now "
                         f"says {getattr(opt, key)} iterations, which are kept")


def import_nntxt(path: str, workdir: Optional[str] = None) -> ImportResult:
    """Import an .nntxt / .prototxt / .protobuf / .nnp file; see the module docstring."""
    path = os.path.abspath(path)
    proto, params, text = read_proto(path)
    unsupported: List[str] = []
    notes: List[str] = []
    extras = read_extras(text)
    name = os.path.splitext(os.path.basename(path))[0]
    line = extras_line(text) if os.path.splitext(path)[1].lower() != ".nnp" else 0  # an .nnp's text is several files'
    project, nodes = proto_to_project(proto, os.path.dirname(path), name, unsupported, notes, path, extras,
                                      f"{path}:{line}" if line else path)
    renames = parameter_names(nodes, unsupported, copies_initialized=bool(params))
    init_path = None
    if params:
        folder = workdir or tempfile.mkdtemp(prefix="nnconsole-import-")
        init_path = write_initial_parameters(params, renames, os.path.join(folder, f"{name}_initial.h5"),
                                             notes, unsupported)
    return ImportResult(project=project, unsupported=unsupported, notes=notes,
                        initial_parameters_path=init_path, source=path)


def _restore_exported_type(layer: Any, info: Dict[str, Any]) -> None:
    """A type written as an equivalent nnabla function (Flatten as Reshape, Broadcast as Tile) is
    restored from the extras comment, with its parameters when they are valid ones."""

    spec = find_spec(info.get("type"))
    if spec is None or not spec.export_as or spec.export_as != layer.type:
        return
    params = info.get("params") if isinstance(info.get("params"), dict) else {}
    try:
        resolve_params(spec.type, params)
    except ValueError:
        return
    if spec.type == "Flatten" and len(layer.params.get("shape", [])) != 1:
        return
    layer.type, layer.params = spec.type, dict(params)
