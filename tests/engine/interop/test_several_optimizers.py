"""Several networks and optimizers through .nntxt (issue 17): export writes every network and optimizer
(nnabla_cli trains them), import keeps them all with one set of weights per scope across networks."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nnconsole.engine.interop.files import export_nntxt, import_file
from nnconsole.engine.network.shapes import infer_network
from tests.support.projects import gan_project
from nnconsole.engine.check.project_file import load_valid_project

NNABLA_CLI = os.path.join(os.path.dirname(sys.executable), "nnabla_cli")


def _weights(network) -> set:
    """The parameter names a network's layers use."""
    from nnconsole.engine.network.shared_params import parameter_name

    info = infer_network(network)
    return {parameter_name(layer, key) for layer in network.layers if layer.name in info.layers
            for key in info.layers[layer.name].weight_shapes}


def test_export_writes_every_optimizer_and_import_keeps_them(tmp_path):
    project = load_valid_project(gan_project(str(tmp_path)))
    project.optimizers[0].start_iteration, project.optimizers[0].end_iteration = 3, 40
    project.optimizers[0].optimizer.update_interval = 2
    out = str(tmp_path / "gan.nntxt")
    export_nntxt(project, out)
    text = open(out).read()
    assert text.count("optimizer {") == 2 and 'network_name: "Generator"' in text and "start_iter: 3" in text
    result = import_file(out)
    assert not [u for u in result.unsupported if "optimizer" in u or "shared" in u], result.unsupported
    back = result.project
    assert list(back.networks) == ["Generator"]
    (entry,) = back.optimizers
    assert (entry.name, entry.network, entry.dataset, entry.start_iteration, entry.end_iteration) == (
        "Optimizer_G", "Generator", "training", 3, 40)
    assert entry.optimizer.update_interval == 2 and entry.optimizer.solver == "Adam"
    assert entry.optimizer.learning_rate == pytest.approx(0.01)
    # one set of weights per scope across both networks, as in the project exported
    assert _weights(back.network) | _weights(back.networks["Generator"]) == {
        "disc/affine/W", "disc/affine/b", "generator/affine/W", "generator/affine/b"}
    assert back.networks["Generator"].layer("d_fake").lr_multipliers == {"W": 0.0, "b": 0.0}


@pytest.mark.slow
def test_exported_gan_trains_under_nnabla_cli(tmp_path):
    project = load_valid_project(gan_project(str(tmp_path)))
    out = str(tmp_path / "gan.nntxt")
    export_nntxt(project, out)
    outdir = tmp_path / "train"
    outdir.mkdir()
    proc = subprocess.run([NNABLA_CLI, "train", "-c", out, "-o", str(outdir)], capture_output=True, text=True,
                          timeout=120)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Training Completed" in log, log[-3000:]


def _network_sections(net: str, layers) -> list:
    """One network of an .sdcproj from (name, type, {property: value}, [input names])."""
    ids = {name: i for i, (name, *_rest) in enumerate(layers)}
    links = [(ids[src], ids[name]) for name, _t, _p, inputs in layers for src in inputs]
    out = [f"[{net}_Network_Global]", f"NumLayer={len(layers)}", f"NumLink={len(links)}"]
    for i, (name, ltype, props, _inputs) in enumerate(layers):
        out += [f"[{net}_Layer_{i}]", f"ID={i}", f"Type={ltype}", f"Position_0={20 * i}", "Position_1=0",
                "Property_0_Name=Name", f"Property_0_Value={name}"]
        for k, (pn, pv) in enumerate(props.items(), start=1):
            out += [f"Property_{k}_Name={pn}", f"Property_{k}_Value={pv}"]
        out.append(f"NumProperty={len(props) + 1}")
    for i, (src, dst) in enumerate(links):
        out += [f"[{net}_Link_{i}]", f"ID={i}", f"SourceLayerID={src}", "SourcePinIndex=0", f"DestLayerID={dst}",
                "DestPinIndex=0"]
    return out


def test_sdcproj_with_two_networks_and_optimizers_imports_both(tmp_path):
    frozen = {"W.LRateMultiplier": "0", "b.LRateMultiplier": "0"}
    main = [("x", "Input", {"Size": "4", "Dataset": "x"}, []),
            ("disc", "Affine", {"OutShape": "1"}, ["x"]),
            ("loss", "SquaredError", {"T.Dataset": "y"}, ["disc"])]
    generator = [("z", "Input", {"Size": "2", "Dataset": "z"}, []),
                 ("gen", "Affine", {"OutShape": "4"}, ["z"]),
                 ("disc", "Affine", dict(frozen, OutShape="1"), ["gen"]),
                 ("loss", "SquaredError", {"T.Dataset": "y"}, ["disc"])]
    text = ["[Global]", "NumNetwork=3", "Network_0=Main", "Network_1=Generator", "Network_2=MainRuntime"]
    text += _network_sections("Main", main) + _network_sections("Generator", generator)
    text += _network_sections("MainRuntime", main[:2])
    text += ["[Config]", "MaxEpoch=1", "BatchSize=4", "NumOptimizer=2",
             "[Optimizer_0]", "Optimizer_Name=Optimizer", "Optimizer_NetworkName=Main", "SolverName=Sgd",
             "[Optimizer_1]", "RangeFrom=-1", "RangeTo=100", "RangeUnit=1", "Optimizer_Name=Optimizer_G",
             "Optimizer_NetworkName=Generator", "UpdateInterval=2", "SolverName=Adam", "SolverParameterNum=1",
             "SolverParameterName_0=Alpha", "SolverParameter_0=0.002"]
    path = tmp_path / "gan.sdcproj"
    path.write_text("\r\n".join(text) + "\r\n", newline="")
    result = import_file(str(path))
    _check_gan_import(result)
    # and back: export writes both networks and optimizers, which import the same
    from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj

    again = tmp_path / "again.sdcproj"
    export_sdcproj(result.project, str(again))
    assert "NumNetwork=2" in again.read_text() and "NumOptimizer=2" in again.read_text()
    back = import_file(str(again))
    _check_gan_import(back)
    assert _meaning(back.project.networks["Generator"]) == _meaning(result.project.networks["Generator"])
    assert back.project.optimizers == result.project.optimizers


def _meaning(network) -> list:
    """What a network computes: names, types, links, checked parameters (defaults filled in), weights' settings."""
    from nnconsole.engine.layers import resolve_params

    def params(la) -> dict:
        p = resolve_params(la.type, la.params)
        if la.type == "Input":  # an empty variable is the layer's name
            p["variable"] = p.get("variable") or la.name
        return p
    return [(la.name, la.type, la.inputs, params(la), la.lr_multipliers, la.parameter_scope) for la in network.layers]


def _check_gan_import(result) -> None:
    assert not [u for u in result.unsupported if "ptimizer" in u], result.unsupported
    project = result.project
    assert list(project.networks) == ["Generator"]  # MainRuntime is derived by nnconsole, not kept
    (entry,) = project.optimizers
    assert (entry.name, entry.network, entry.end_iteration, entry.start_iteration) == ("Optimizer_G", "Generator",
                                                                                      100, 0)
    assert entry.optimizer.solver == "Adam" and entry.optimizer.update_interval == 2
    assert entry.optimizer.learning_rate == pytest.approx(0.002)
    generator_net = project.networks["Generator"]
    assert generator_net.layer("disc").lr_multipliers == {"W": 0.0, "b": 0.0}
    # layers of one name read one set of weights in every network, as in NNC
    assert _weights(project.network) & _weights(generator_net) == {"disc/affine/W", "disc/affine/b"}


def test_a_network_no_optimizer_trains_goes_through_nntxt_with_its_executor(tmp_path):
    """A network only an executor runs (not NNC's derived MainValidation/MainRuntime) is written and read back."""
    from nnconsole.engine.project.model import Executor

    project = load_valid_project(gan_project(str(tmp_path)))
    project.optimizers = []  # Generator is now trained by nobody, and run by an executor
    project.executors = [Executor(name="Sample", network="Generator", num_evaluations=3)]
    out = str(tmp_path / "gan.nntxt")
    result = export_nntxt(project, out)
    assert any("no optimizer trains it" in u for u in result.unsupported)  # its multipliers: said, not lost silently
    for layer in project.networks["Generator"].layers:
        layer.lr_multipliers = {}
    back = import_file(out)
    assert list(back.project.networks) == ["Generator"] and back.project.optimizers == []
    assert _meaning(back.project.networks["Generator"]) == _meaning(project.networks["Generator"])
    assert not [n for n in back.notes if "Generator" in n and "not imported" in n], back.notes
    # and through NNC's project file
    from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj

    sdc = str(tmp_path / "gan.sdcproj")
    export_sdcproj(project, sdc)
    assert list(import_file(sdc).project.networks) == ["Generator"]
