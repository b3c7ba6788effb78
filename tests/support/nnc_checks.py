"""Checks an imported NNC project must pass (issue 26): valid, equal to itself after an .sdcproj round trip, and
read by nnabla's own loader from our .nntxt export with the same parameters and outputs."""
from __future__ import annotations

import os

import numpy as np

from nnconsole.engine.project.model import Project


def layer_rows(project: Project) -> dict:
    """Every network's layers as the engine reads them (name, type, inputs, params, initializers, LR multipliers)."""
    from nnconsole.engine.project.structure import all_networks

    return {name: [(x.name, x.type, list(x.inputs), dict(x.params), dict(x.initializers), dict(x.lr_multipliers),
                    x.parameter_scope) for x in net.layers] for name, net in all_networks(project).items()}


def sdcproj_round_trip(project: Project, folder) -> Project:
    """``project`` exported as .sdcproj into ``folder`` and imported again (nothing reported lost)."""
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj

    os.makedirs(folder, exist_ok=True)
    path = os.path.join(str(folder), "back.sdcproj")
    export_sdcproj(project, path)
    return import_file(path).project


def nnabla_parameters_and_outputs(project: Project, params_h5: str, folder, x: np.ndarray) -> tuple:
    """Our .nntxt export of ``project`` read by nnabla's NnpLoader with the parameters ``params_h5``: its
    parameters (name -> shape, learned ones) and its runtime output for ``x``."""
    import nnabla as nn
    from nnabla.utils.nnp_graph import NnpLoader

    from nnconsole.engine.interop.files import export_nntxt

    path = os.path.join(str(folder), "export.nntxt")
    export_nntxt(project, path)
    nn.clear_parameters()
    try:
        net = NnpLoader(path).get_network("MainRuntime", batch_size=len(x))  # its parameters, initialized
        nn.load_parameters(params_h5)  # then given the trained values (the loader's variables are the same objects)
        net.inputs["x"].d = x
        out = list(net.outputs.values())[0]
        out.forward()
        shapes = {k: tuple(v.shape) for k, v in nn.get_parameters(grad_only=False).items()}
        return shapes, out.d.copy()
    finally:
        nn.clear_parameters()


def engine_parameters_and_outputs(project: Project, params_h5: str, x: np.ndarray) -> tuple:
    """The engine's runtime graph of ``project`` with the parameters ``params_h5``: its parameters and output."""
    import nnabla as nn

    from nnconsole.engine.runtime.nnp import build_runtime

    nn.clear_parameters()
    try:
        nn.load_parameters(params_h5)
        rt = build_runtime(project, batch_size=len(x))
        rt.inputs["x"].d = x
        rt.output.forward(clear_buffer=True)
        shapes = {k: tuple(v.shape) for k, v in nn.get_parameters(grad_only=False).items()}
        return shapes, rt.output.d.copy()
    finally:
        nn.clear_parameters()


def _with_defaults(rows: dict) -> dict:
    """Layer rows with each type's defaults filled in (an export writes them out, an import reads them back)."""
    from nnconsole.engine.layers.registry import find_spec

    out = {}
    for net, layers in rows.items():
        out[net] = []
        for name, type_, inputs, params, inits, lrs, scope in layers:
            spec = find_spec(type_)
            full = {**(spec.defaults() if spec else {}), **params}
            full = {k: (list(v) if isinstance(v, tuple) else v) for k, v in full.items()}
            out[net].append((name, type_, inputs, full, inits, lrs, scope))
    return out


def check_nnc_project(path: str, folder) -> tuple:
    """An NNC-format project file through everything issue 26 asks: imports into a valid project, trains one epoch
    with finite losses, its parameters (names, shapes, count) and outputs (within 1e-6) are nnabla's reading of our
    .nntxt export (which re-imports with the same count), and an .sdcproj export re-imports to the same project. Returns (project, run_dir, report)."""
    import nnabla as nn

    from nnconsole.engine.check.project_file import load_valid_project, validate
    from nnconsole.engine.interop.files import import_file, import_to_project
    from nnconsole.engine.network.shapes import infer_network
    from nnconsole.engine.project.structure import all_networks

    from .training import train_in_process

    result, _ = import_to_project(path, os.path.join(os.path.dirname(path), "project.yaml"))  # as `nnconsole import`
    project = load_valid_project(os.path.join(os.path.dirname(path), "project.yaml"))
    assert validate(project) == []
    info = infer_network(project.network, all_networks(project), "Main")
    assert info.errors == []
    run_dir, losses = train_in_process(project, os.path.join(str(folder), "results"))
    assert losses and all(np.isfinite(losses))
    params_h5 = os.path.join(run_dir, "parameters_final.h5")
    x = np.random.RandomState(0).randn(4, 16).astype(np.float32)
    ours, expected = engine_parameters_and_outputs(project, params_h5, x)
    theirs, got = nnabla_parameters_and_outputs(project, params_h5, folder, x)
    assert theirs == ours
    nn.clear_parameters()
    learned = sum(int(np.prod(s)) for k, s in ours.items() if not k.endswith(("/mean", "/var")))
    assert learned == info.total_params
    assert np.abs(got - expected).max() < 1e-6
    again = import_file(os.path.join(str(folder), "export.nntxt")).project  # NNC's own export: units expanded
    assert infer_network(again.network, all_networks(again), "Main").total_params == info.total_params
    back = sdcproj_round_trip(project, os.path.join(str(folder), "round_trip"))
    assert _with_defaults(layer_rows(back)) == _with_defaults(layer_rows(project))
    return project, run_dir, result
