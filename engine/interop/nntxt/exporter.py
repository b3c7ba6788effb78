"""Write a project as an nnabla ``.nntxt`` that ``nnabla_cli train`` accepts, the way NNC writes one.

The file holds ``global_config``, ``training_config`` (with ``iter_per_epoch`` from the training CSV),
three networks (``Main`` for training with its losses, ``MainValidation`` with dropout off and
batch-norm on running statistics, ``MainRuntime`` for inference, ending in a Softmax/Sigmoid where the
engine's runtime graph does), the two datasets pointing at the CSVs (absolute paths), the optimizer
with its solver, learning-rate schedule, per-parameter learning-rate multipliers and initializers,
the ``train_error``/``valid_error`` monitors and a runtime executor. It is built with nnabla's own
protobuf classes (``nnabla.utils.nnabla_pb2``) and written with ``google.protobuf.text_format``.
Function and variable names are the layer names, parameters are ``<layer>/<scope>/<weight>``: the
names NNC uses and the engine's parameter files use, so trained ``.h5`` files load as they are.

nnconsole settings nnabla has no field for (project name, seed, device, multi-GPU, the dataset cache and its
disk budget, canvas positions, Flatten layers, a constant schedule) go into one ``# nnconsole-project: {json}`` comment at the top,
which nnabla ignores and nnconsole's importer reads back.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple

import dataclasses
from google.protobuf import text_format
from nnconsole.engine.layers import find_spec, get_spec
from nnconsole.engine.project.model import Project
from nnconsole.engine.project.schema import value_at

from nnconsole.engine.interop.common import iterations_per_epoch, peek_dataset, preview_rows
from nnconsole.engine.interop.nntxt.optimizers import write_executor_settings, write_extra_optimizers
from nnconsole.engine.interop.nntxt.repeat import annotate_project, keeps_blocks
from nnconsole.engine.interop.nntxt.writers import (OUTPUT_DATA_NAME, NetworkWriter, write_input_variables,
                                                   write_optimizer_variables, write_solver)
from nnconsole.engine.interop.report import ExportResult, InteropError
from nnconsole.engine.interop.settings_map import write_training_config
from nnconsole.engine.network.data_flow import dataset_variables
from nnconsole.engine.network.shapes import infer_network, runtime_layer_names
from nnconsole.engine.project.paths import dataset_path
from nnconsole.engine.interop.nntxt.repeat import unrolled_project
from nnconsole.engine.network.units import expanded_project, UnitError
from nnconsole.engine.interop.nntxt.recurrent import annotate_recurrent, units_expanded
from nnconsole.engine.interop.nntxt.reader import EXTRAS_PREFIX, comment_settings
from nnconsole.engine.project.io import atomic_write

MAIN, VALIDATION, RUNTIME = "Main", "MainValidation", "MainRuntime"


def _unit_extras(opt: Any, ipe: Optional[int]) -> Dict[str, Any]:
    """The lengths given in epochs, with the iterations written for them: the importer restores the epochs
    when the file still holds those iterations (a hand-edited file keeps its own numbers)."""
    out: Dict[str, Any] = {}
    for key, unit_key in (("lr_update_interval", "lr_update_interval_unit"), ("warmup_iterations", "warmup_unit")):
        length = int(getattr(opt, key))
        written = key != "lr_update_interval" or opt.schedule.type == "exponential"
        if getattr(opt, unit_key) == "epochs" and length > 0 and ipe and written:
            out[key] = {"epochs": length, "written": length * ipe}
    return out


def extras_of(project: Project, iterations_per_epoch: Optional[int] = None) -> Dict[str, Any]:
    """nnconsole settings the nntxt format has no field for (see the module docstring); lengths in epochs
    need the ``iterations_per_epoch`` the file's iteration counts were written with."""

    layers: Dict[str, Any] = {}
    for layer in project.network.layers:
        entry: Dict[str, Any] = {}
        if layer.position is not None:
            entry["position"] = [float(layer.position[0]), float(layer.position[1])]
        if get_spec(layer.type).export_as:  # restored on import (nntxt_import._restore_exported_type)
            entry["type"] = layer.type
            entry["params"] = {k: list(v) if isinstance(v, tuple) else v for k, v in (layer.params or {}).items()}
        layers[layer.name] = entry
    opt = project.optimizer
    return {
        "name": project.name, "description": project.description,
        "config": {"seed": project.config.seed, "device": project.config.device,
                   "log_interval": project.config.log_interval},
        "multi_gpu": dataclasses.asdict(project.multi_gpu),
        "datasets": {s.key: value_at(project, s.path) for s in comment_settings("datasets")},
        "layers": layers,
        "schedule": {"type": opt.schedule.type, "max_iter": opt.schedule.max_iter},
        "optimizer": {"lr_multiplier": opt.lr_multiplier, "lr_update_interval": opt.lr_update_interval},
        "epochs": _unit_extras(opt, iterations_per_epoch),
        "comments": [{"text": c.text, "position": list(c.position) if c.position is not None else None}
                     for c in project.network.comments],
    }


def _numeric_multidim_inputs(shapes: Dict[str, Tuple[int, ...]], preview: Optional[Any]) -> List[str]:
    """Inputs with several dimensions fed from numeric columns (x__0, x__1, ...): the engine reshapes them,
    nnabla's CSV reader gives a vector and nnabla_cli cannot feed it (NNC keeps such samples in files).
    ``shapes``: the Inputs one dataset feeds (``network.data_flow``); ``preview``: that CSV's ``peek_dataset``
    result (None: unreadable, nothing to say)."""
    if preview is None:
        return []
    columns = preview.columns
    out = []
    for var, shape in shapes.items():
        numeric = [c for c in columns if c.split(":", 1)[0].startswith(var + "__")]
        if len(shape) > 1 and numeric:
            out.append(f"input '{var}' has shape {list(shape)} but the CSV gives it as {len(numeric)} numeric columns; "
                       "nnabla_cli reads those as a vector and cannot feed this input (store each sample as an "
                       "image or a CSV file, as NNC does)")
    return out


def project_to_proto(project: Project, dataset_dir: Optional[str] = None) -> Tuple[Any, List[str], List[str]]:
    """The NNablaProtoBuf for a project, plus (unsupported, notes). Raises InteropError for a broken network."""
    from nnabla.utils import nnabla_pb2  # deferred: nnabla stays out of the GUI



    unsupported: List[str] = []
    notes: List[str] = []
    try:
        project = expanded_project(project)  # Units are written as their networks' layers, as NNC exports them
    except UnitError as exc:
        raise InteropError(str(exc)) from exc
    info = infer_network(project.network)
    if info.errors:
        raise InteropError("the network has problems, fix them before exporting:\n" + info.error_text())
    for lname in info.order:
        t = project.network.layer(lname).type
        if find_spec(t) is None:
            raise InteropError(f"layer '{lname}' has type {t}, which nnabla files cannot hold")
    repeat_form = keeps_blocks(project)  # repeat blocks as NNC writes them (unrolled beside recurrent layers)
    project, info = (project, info) if repeat_form else unrolled_project(project, info, notes)

    project, info = units_expanded(project, info, notes)  # NNC's LSTM unit is written as its layers
    cfg = project.config
    batch = int(cfg.batch_size)
    proto = nnabla_pb2.NNablaProtoBuf()
    ctx = proto.global_config.default_context
    if cfg.device == "cuda":
        ctx.backends.extend([f"cudnn:{cfg.precision}", f"cuda:{cfg.precision}", "cpu:float"])
        ctx.array_class = "CudaCachedArray"
    else:
        ctx.backends.append("cpu:float")
        ctx.array_class = "CpuCachedArray"
        if cfg.precision == "half":
            unsupported.append("precision half: written as cpu:float (nnabla's CPU backend computes in float); "
                               "set config.device: cuda to write a half-precision GPU context")
    if cfg.device == "auto":
        notes.append("device auto is written as a CPU context; nnabla_cli train -c ... --context cudnn uses a GPU")

    def ds_path(rel: str) -> str:
        if not rel:
            return ""
        if dataset_dir is not None and not os.path.isabs(rel):
            return os.path.normpath(os.path.join(dataset_dir, rel))
        return dataset_path(project, rel)

    train_csv, valid_csv = ds_path(project.datasets.training), ds_path(project.datasets.validation)
    train_preview = peek_dataset(train_csv)  # read once: row count and columns
    ipe = iterations_per_epoch(preview_rows(train_preview), batch)
    t = proto.training_config
    write_training_config(t, cfg)  # max_epoch, monitor_interval (epochs between validations), save_best
    t.iter_per_epoch = int(ipe or 0)
    if not ipe:
        unsupported.append(f"iter_per_epoch: the training CSV '{train_csv or '(none)'}' could not be read, so it "
                           "is 0 (nnabla_cli would not train); set training_config.iter_per_epoch by hand")
    for split, preview in (("training", train_preview), ("validation", peek_dataset(valid_csv))):
        for problem in _numeric_multidim_inputs(dataset_variables(project, split), preview):  # every network's
            if problem not in unsupported:
                unsupported.append(problem)
    if cfg.seed:
        notes.append(f"seed {cfg.seed}: nnabla_cli has no seed setting (kept in the nnconsole comment)")

    writer = NetworkWriter(proto, project, info)
    all_names = list(info.order)
    main = writer.write(MAIN, all_names, "train", batch)
    writer.write(VALIDATION, all_names, "validation", batch)
    runtime_names = runtime_layer_names(project.network)
    loss = info.loss_layers[0] if info.loss_layers else None
    post = None
    if loss is not None:
        loss_layer = project.network.layer(loss)
        pred = loss_layer.inputs[0]
        taken = set(all_names)
        ftype = get_spec(loss_layer.type).runtime_head
        if ftype:
            fname = f"{pred}_{ftype}"
            while fname in taken:
                fname += "_"
            post = (ftype, fname, pred)
    runtime = writer.write(RUNTIME, runtime_names, "runtime", batch, post=post)
    if post is None and loss is not None:
        pred = project.network.layer(loss).inputs[0]
        if pred in runtime_names:
            runtime["output"] = pred

    for name, uri, shuffle in (("Training", train_csv, project.datasets.shuffle), ("Validation", valid_csv, False)):
        d = proto.dataset.add()
        d.name, d.type, d.uri = name, "Dataset", uri
        d.batch_size = batch
        d.shuffle = bool(shuffle)
        d.no_image_normalization = not project.datasets.normalize
        d.variable.extend(sorted(dataset_variables(project, name.lower())))  # the Inputs this dataset feeds

    o = proto.optimizer.add()
    o.name, o.network_name = "Optimizer", MAIN
    o.dataset_name.append("Training")
    o.update_interval = int(project.optimizer.update_interval)
    write_solver(o.solver, project, ipe, unsupported, notes)
    write_optimizer_variables(o, project.network, info, main, writer.param_owner)

    if loss is not None:
        for mname, dname in (("train_error", "Training"), ("valid_error", "Validation")):
            m = proto.monitor.add()
            m.name, m.network_name = mname, VALIDATION
            m.dataset_name.append(dname)
            write_input_variables(m, project.network, main["inputs"])
            mv = m.monitor_variable.add()
            mv.type, mv.variable_name = "Error", loss
    else:
        unsupported.append("monitors: the network has no loss layer, so nnabla_cli has nothing to train or monitor")

    e = proto.executor.add()
    e.network_name = RUNTIME

    write_executor_settings(e, project, unsupported)  # name, NumEvaluations, repeat type (issue 17)
    e.need_back_propagation = False
    write_input_variables(e, project.network, runtime["inputs"])
    ov = e.output_variable.add()
    ov.variable_name, ov.data_name = runtime["output"], OUTPUT_DATA_NAME
    for pname in runtime["params"]:
        e.parameter_variable.add().variable_name = pname

    write_extra_optimizers(proto, project, ipe, unsupported, notes, dict(main, owner=writer.param_owner))

    annotate_recurrent(proto, project.network, info, unsupported)  # recurrent blocks as NNC writes them
    annotate_project(proto, project, repeat_form, (MAIN, VALIDATION, RUNTIME))  # repeat blocks, every network
    return proto, unsupported, notes


def proto_text(proto: Any, extras: Optional[Dict[str, Any]] = None) -> str:
    """The protobuf text, with the nnconsole settings comment first when ``extras`` is given."""


    text = text_format.MessageToString(proto)
    if extras is not None:
        text = f"{EXTRAS_PREFIX} {json.dumps(extras, separators=(',', ':'))}\n" + text
    return text


def export_nntxt(project: Project, path: str, with_extras: bool = True,
                 dataset_dir: Optional[str] = None) -> ExportResult:
    """Write ``project`` to ``path`` (.nntxt) for ``nnabla_cli train -c PATH -o OUTDIR``."""

    proto, unsupported, notes = project_to_proto(project, dataset_dir=dataset_dir)
    ipe = int(proto.training_config.iter_per_epoch) or None
    text = proto_text(proto, extras_of(project, ipe) if with_extras else None)
    atomic_write(path, text.encode("utf-8"))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)  # an export is for other tools: ordinary file permissions
    return ExportResult(path=os.path.abspath(path), unsupported=unsupported, notes=notes)
