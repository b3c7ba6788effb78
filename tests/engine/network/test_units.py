"""NNC's Unit and Argument layers (issue 17): a network of the project used as a layer, expanded by the engine
into its layers ('<unit>/<layer>', weights under '<unit>/<layer>/...') with the Arguments substituted."""
from __future__ import annotations

import numpy as np
import pytest

from nnconsole.engine.runtime.graph import GraphError, build_graph
from nnconsole.engine.project.model import Layer, Network
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.network.shared_params import UnitInnerLayer as U
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.projects import unit_project
from tests.support.timing import budget

L = Layer


def block() -> Network:
    """A unit network: Affine to the 'n' Argument's size, Tanh; a loss left in it is not part of the unit."""
    return Network([
        L("x", "Input", params={"shape": [6]}),
        L("n", "Argument", params={"value": "4", "type": "PIntArray"}),
        L("fc", "Affine", ["x"], {"out_shape": "n"}),
        L("act", "Tanh", ["fc"]),
        L("t", "Input", params={"shape": [4], "variable": "t"}),
        L("own loss", "SquaredError", ["act", "t"]),
    ])


def main_with_units() -> Network:
    return Network([
        L("x", "Input", params={"shape": [6]}),
        L("u1", "Unit", ["x"], {"network": "Block", "arguments": "n=6"}),
        L("u2", "Unit", ["u1"], {"network": "Block", "arguments": "n=3"}),
        L("y", "Input", params={"shape": [3], "variable": "y"}),
        L("loss", "SquaredError", ["u2", "y"]),
    ])


def hand_expanded() -> Network:
    """The layers a unit's expansion should give, written by hand (U: layers a unit made, '/' allowed)."""
    return Network([
        L("x", "Input", params={"shape": [6]}),
        U("u1/fc", "Affine", ["x"], {"out_shape": [6]}, parameter_scope="u1/fc"),
        U("u1", "Tanh", ["u1/fc"], parameter_scope="u1/act"),
        U("u2/fc", "Affine", ["u1"], {"out_shape": [3]}, parameter_scope="u2/fc"),
        U("u2", "Tanh", ["u2/fc"], parameter_scope="u2/act"),
        L("y", "Input", params={"shape": [3], "variable": "y"}),
        L("loss", "SquaredError", ["u2", "y"]),
    ])


def networks(**more):
    return {"Main": main_with_units(), "Block": block(), **more}


def test_shapes_and_parameters_equal_the_hand_expanded_network():
    info = infer_network(main_with_units(), networks(), "Main")
    assert info.errors == []
    assert info.layers["u1"].out_shape == (6,) and info.layers["u2"].out_shape == (3,)
    assert info.total_params == 6 * 6 + 6 + 6 * 3 + 3
    import nnabla as nn

    nn.clear_parameters()
    got = build_graph(main_with_units(), 2, "train", networks=networks())
    got_params = {k: tuple(v.shape) for k, v in got.parameters.items()}
    nn.clear_parameters()
    want = build_graph(hand_expanded(), 2, "train")
    assert got_params == {k: tuple(v.shape) for k, v in want.parameters.items()}
    assert set(got_params) == {"u1/fc/affine/W", "u1/fc/affine/b", "u2/fc/affine/W", "u2/fc/affine/b"}
    assert tuple(got.prediction.shape) == (2, 3)


def test_unit_network_on_its_own_takes_its_arguments_own_values():
    info = infer_network(block())
    assert info.errors == [] and info.layers["fc"].out_shape == (4,)


def test_a_unit_trains_one_iteration():
    import nnabla as nn
    import nnabla.solvers as S

    nn.clear_parameters()
    graph = build_graph(main_with_units(), 4, "train", rng=np.random.RandomState(0), networks=networks())
    rng = np.random.RandomState(1)
    for var in graph.inputs.values():
        var.d = rng.randn(*var.shape)
    solver = S.Sgd(0.5)
    solver.set_parameters(graph.parameters)
    graph.loss.forward()
    before = float(graph.loss.d)
    solver.zero_grad()
    graph.loss.backward()
    solver.update()
    graph.loss.forward()
    assert np.isfinite(before) and float(graph.loss.d) < before


def test_nested_units_scope_their_weights_under_each_unit():
    outer = Network([L("x", "Input", params={"shape": [6]}),
                     L("inner", "Unit", ["x"], {"network": "Block", "arguments": "n=2"}), L("r", "ReLU", ["inner"])])
    main = Network([L("x", "Input", params={"shape": [6]}), L("o", "Unit", ["x"], {"network": "Outer"}),
                    L("y", "Input", params={"shape": [2], "variable": "y"}), L("loss", "SquaredError", ["o", "y"])])
    import nnabla as nn

    nn.clear_parameters()
    got = build_graph(main, 2, "train", networks=networks(Outer=outer))
    assert set(got.parameters) == {"o/inner/fc/affine/W", "o/inner/fc/affine/b"}


@pytest.mark.parametrize("nets, chain", [
    ({"Block": Network([L("x", "Input", params={"shape": [6]}), L("me", "Unit", ["x"], {"network": "Block"})])},
     "Block -> Block"),
    ({"Block": Network([L("x", "Input", params={"shape": [6]}), L("a", "Unit", ["x"], {"network": "A"})]),
      "A": Network([L("x", "Input", params={"shape": [6]}), L("b", "Unit", ["x"], {"network": "Block"})])},
     "Block -> A -> Block"),
])
def test_a_unit_that_uses_itself_is_refused_with_the_chain(nets, chain):
    main = Network([L("x", "Input", params={"shape": [6]}), L("u", "Unit", ["x"], {"network": "Block"})])
    info = infer_network(main, {"Main": main, **nets}, "Main")
    messages = [m for n, m in info.errors if n == "u"]
    assert messages and chain in messages[0] and "cannot contain itself" in messages[0]
    with pytest.raises(GraphError, match="cannot contain itself"):
        build_graph(main, 2, "runtime", networks={"Main": main, **nets})


def test_missing_network_argument_or_inputs_are_errors_on_the_unit():
    for params, inputs, words in [
        ({"network": "Nope"}, ["x"], "which the project does not have (networks: Main, Block)"),
        ({"network": ""}, ["x"], "set its network"),
        ({"network": "Block", "arguments": "m=3"}, ["x"], "argument 'm' is not an Argument of the network"),
        ({"network": "Block", "arguments": "n=abc"}, ["x"], "argument 'n' = 'abc' is not a valid PIntArray"),
        ({"network": "Block", "arguments": "n"}, ["x"], "is not name=value"),
        ({"network": "Block"}, ["x", "x"], "has 1 Input layer(s) (x) but the unit has 2 input(s)"),
    ]:
        main = Network([L("x", "Input", params={"shape": [6]}), L("u", "Unit", inputs, params)])
        info = infer_network(main, {"Main": main, "Block": block()}, "Main")
        assert any(n == "u" and words in m for n, m in info.errors), (words, info.errors)
        assert info.layers["u"].error and info.layers["u"].out_shape is None


def test_a_slash_is_still_refused_in_a_users_own_layer_name():
    main = Network([L("x", "Input", params={"shape": [6]}), L("a/b", "Tanh", ["x"])])
    assert any("must not contain '/'" in m for _, m in infer_network(main).errors)


def test_a_unit_project_saves_validates_trains_and_exports_expanded(tmp_path):
    from nnconsole.engine.interop.nntxt.exporter import project_to_proto
    from nnconsole.engine.check.project_file import validate
    from tests.support.cli import nnconsole
    from tests.support.training import train_in_process

    path = unit_project(tmp_path / "p")
    project = load_valid_project(path)
    assert project.network.layer("hidden").type == "Unit" and "Hidden" in project.networks  # kept as a unit
    assert validate(project) == []
    out = nnconsole(["info", path]).stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert rows["hidden/fc"][1:4] == ["Affine", "8", "40"] and rows["hidden"][1:3] == ["Unit", "8"]  # expanded
    run_dir, losses = train_in_process(project, str(tmp_path / "results"))
    assert losses and all(np.isfinite(losses))
    assert load_valid_project(path).network.layer("hidden").type == "Unit"  # the user's project keeps its unit
    proto, _, _ = project_to_proto(load_valid_project(path, check_datasets=False))
    main = [n for n in proto.network if n.name == "Main"][0]
    assert "hidden/fc" in [f.name for f in main.function]
    assert {v.name for v in main.variable} >= {"hidden/fc/affine/W", "hidden/fc/affine/b"}
    assert "Hidden" not in [n.name for n in proto.network]  # the unit's own network is expanded, not written


def test_sdcproj_export_and_import_keep_units_as_units(tmp_path):
    """NNC's file holds the Unit (Network and one property per argument), the unit's network with its Argument
    layer and the property written as the argument's name; importing it gives the same project layers."""
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj
    from nnconsole.engine.check.project_file import validate

    project = load_valid_project(unit_project(tmp_path / "p"))
    export_sdcproj(project, str(tmp_path / "p" / "u.sdcproj"))
    text = (tmp_path / "p" / "u.sdcproj").read_text()
    for line in ("Type=Unit", "Property_1_Name=Network", "Property_1_Value=Hidden", "Property_2_Name=width",
                 "Property_2_Value=8", "Type=Argument", "Property_1_Name=Value", "Property_1_Value=5",
                 "Property_2_Name=Type", "Property_2_Value=PInt", "Property_1_Name=OutShape", "Property_1_Value=width"):
        assert line in text.splitlines(), line
    result = import_file(str(tmp_path / "p" / "u.sdcproj"))
    assert result.unsupported == []
    got = result.project
    assert [(x.name, x.type, x.inputs, x.params) for x in got.network.layers if x.type == "Unit"] == \
        [("hidden", "Unit", ["x"], {"network": "Hidden", "arguments": "width=8"})]
    hidden = {x.name: x for x in got.networks["Hidden"].layers}
    assert hidden["width"].params == {"value": "5", "type": "PInt", "search": False}
    assert hidden["fc"].params["out_shape"] == "width"
    assert got.network.layer("y").params["shape"] == [1]  # inferred through the unit (else reported in unsupported)
    assert validate(got, datasets=False) == []


def test_runtime_of_a_unit_project_builds_for_evaluation_and_inference(tmp_path):
    """build_runtime (evaluate, infer, the .nnp a run writes) runs a project that still holds its units."""
    import nnabla as nn

    from nnconsole.engine.runtime.nnp import build_runtime

    nn.clear_parameters()
    runtime = build_runtime(load_valid_project(unit_project(tmp_path / "p"), check_datasets=False), batch_size=2)
    assert tuple(runtime.output.shape) == (2, 3)
    assert set(nn.get_parameters()) >= {"hidden/fc/affine/W", "hidden/fc/affine/b"}
    nn.clear_parameters()


@pytest.mark.slow
def test_exported_nntxt_of_a_unit_project_trains_under_nnabla_cli(tmp_path):
    """NNC exports units expanded; nnabla_cli trains that file and its weights are the engine's names."""
    import os
    import subprocess
    import sys

    import nnabla as nn

    from nnconsole.engine.interop.files import export_nntxt

    project = load_valid_project(unit_project(tmp_path / "p"))
    out = tmp_path / "units.nntxt"
    export_nntxt(project, str(out))
    (tmp_path / "train").mkdir()
    cli = os.path.join(os.path.dirname(sys.executable), "nnabla_cli")
    proc = subprocess.run([cli, "train", "-c", str(out), "-o", str(tmp_path / "train")], capture_output=True,
                          text=True, timeout=240)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Training Completed" in log, log[-3000:]
    nn.clear_parameters()
    nn.load_parameters(str(tmp_path / "train" / "results.nnp"))
    trained = {name: tuple(v.shape) for name, v in nn.get_parameters(grad_only=False).items()}
    nn.clear_parameters()
    assert trained == {"hidden/fc/affine/W": (4, 8), "hidden/fc/affine/b": (8,), "fc2/affine/W": (8, 3),
                       "fc2/affine/b": (3,)}


def test_parameters_of_a_unit_project_are_accepted_as_its_initial_parameters(tmp_path):
    """The check compared the file's 'hidden/fc/affine/W' as 'hidden/W' with a network that had no such layer."""
    import nnabla as nn

    from nnconsole.engine.project.structure import all_networks
    from nnconsole.engine.check.validate import check_initial_parameters

    project = load_valid_project(unit_project(tmp_path / "p"))
    nn.clear_parameters()
    try:
        built = build_graph(project.network, 2, "train", networks=all_networks(project))
        nn.save_parameters(str(tmp_path / "p" / "init.h5"), params=built.parameters, extension=".h5")
    finally:
        nn.clear_parameters()
    project.config.initial_parameters = "init.h5"
    assert check_initial_parameters(project) == []
    project.network.layer("hidden").params["arguments"] = "width=6"  # the unit's Affine is narrower now
    problems = check_initial_parameters(project)
    assert len(problems) == 1 and "hidden/fc/W" in problems[0].message


def test_gradient_bytes_count_the_units_weights(tmp_path):
    """The multi-host predictor all-reduces every learned weight, the units' included (4 bytes each)."""
    from nnconsole.engine.plan.timing_inputs import gradient_bytes

    assert gradient_bytes(load_valid_project(unit_project(tmp_path / "p"), check_datasets=False)) == (4 * 8 + 8 + 8 * 3 + 3) * 4


def _nnc_network(name: str, layers) -> list:
    """[<name>_Network_Global] and layer/link sections as NNC saves them (name, type, props, inputs)."""
    ids = {n: i for i, (n, *_rest) in enumerate(layers)}
    links = [(ids[src], ids[n]) for n, _t, _p, inputs in layers for src in inputs]
    out = [f"[{name}_Network_Global]", f"NumLayer={len(layers)}", f"NumLink={len(links)}"]
    for i, (lname, ltype, props, _inputs) in enumerate(layers):
        out += [f"[{name}_Layer_{i}]", f"ID={i}", f"Type={ltype}", "Position_0=0", f"Position_1={48 * i}",
                "Property_0_Name=Name", f"Property_0_Value={lname}"]
        for k, (pn, pv) in enumerate(props.items(), start=1):
            out += [f"Property_{k}_Name={pn}", f"Property_{k}_Value={pv}"]
        out.append(f"NumProperty={len(props) + 1}")
    for i, (src, dst) in enumerate(links):
        out += [f"[{name}_Link_{i}]", f"ID={i}", f"SourceLayerID={src}", "SourcePinIndex=0", f"DestLayerID={dst}",
                "DestPinIndex=0"]
    return out


def test_an_nnc_project_file_with_a_unit_imports_with_nothing_left_out(tmp_path):
    """NNC saves a Unit with its computed properties (Input, Output, ParameterScope, Cost*) and one property per
    Argument of its network; the import keeps the unit and reports nothing."""
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.project.structure import all_networks

    main = [("x", "Input", {"Size": "4", "Dataset": "x"}, []),
            ("block", "Unit", {"Input": "4", "Network": "Block", "ParameterScope": "block", "Output": "6",
                               "Units": "6", "CostParameter": "30", "CostMultiplyAdd": "24"}, ["x"]),
            ("fc", "Affine", {"OutShape": "3"}, ["block"]),
            ("loss", "SquaredError", {"T.Dataset": "y"}, ["fc"])]
    block = [("in", "Input", {"Size": "4"}, []),
             ("Units", "Argument", {"Value": "2", "Type": "PInt", "Search": "False"}, []),
             ("aff", "Affine", {"OutShape": "Units"}, ["in"]),
             ("relu", "ReLU", {}, ["aff"])]
    text = ["[Global]", "NumNetwork=2", "Network_0=Main", "Network_1=Block"] + _nnc_network("Main", main) + \
        _nnc_network("Block", block) + ["[Config]", "MaxEpoch=1", "BatchSize=4"]
    path = tmp_path / "unit.sdcproj"
    path.write_text("\r\n".join(text) + "\r\n")
    result = import_file(str(path))
    assert result.unsupported == []
    project = result.project
    assert project.network.layer("block").params == {"network": "Block", "arguments": "Units=6"}
    assert project.networks["Block"].layer("aff").params["out_shape"] == "Units"
    assert project.network.layer("y").params["shape"] == [3]
    info = infer_network(project.network, all_networks(project), "Main")
    assert info.errors == [] and info.layers["block"].out_shape == (6,) and info.total_params == 4 * 6 + 6 + 6 * 3 + 3


def test_a_network_with_arguments_builds_on_its_own_with_their_values():
    """A unit's network trained or run by itself: its Arguments give their own values and are not built."""
    import nnabla as nn

    nn.clear_parameters()
    built = build_graph(block(), 2, "train")
    assert {k: tuple(v.shape) for k, v in built.parameters.items()} == {"fc/affine/W": (6, 4), "fc/affine/b": (4,)}
    nn.clear_parameters()


def test_expanded_project_leaves_no_unit_or_argument_to_write(tmp_path):
    from nnconsole.engine.network.units import expanded_project

    project = load_valid_project(unit_project(tmp_path / "p"), check_datasets=False)
    project.network.layers.append(L("spare", "Argument", params={"value": "3"}))
    out = expanded_project(project)
    assert [x.type for x in out.network.layers] == ["Input", "Affine", "Tanh", "Affine", "Input", "SoftmaxCrossEntropy"]
    assert out.networks == {} and project.network.layer("hidden").type == "Unit"  # the project itself is kept


def test_deep_or_exploding_units_are_refused_quickly():
    import time

    deep = {f"N{i}": Network([L("x", "Input", params={"shape": [2]}), L("u", "Unit", ["x"], {"network": f"N{i + 1}"})])
            for i in range(200)}
    deep["N200"] = Network([L("x", "Input", params={"shape": [2]}), L("t", "Tanh", ["x"])])
    # each network runs the next one twice: 2^20 layers if expanded
    doubling = {f"D{i}": Network([L("x", "Input", params={"shape": [2]}), L("a", "Unit", ["x"], {"network": f"D{i + 1}"}),
                                  L("b", "Unit", ["a"], {"network": f"D{i + 1}"})]) for i in range(20)}
    doubling["D20"] = Network([L("x", "Input", params={"shape": [2]}), L("t", "Tanh", ["x"])])
    for nets, words in ((deep, "nest more than 32 deep"), (doubling, "more than 50,000")):
        main = Network([L("x", "Input", params={"shape": [2]}), L("top", "Unit", ["x"], {"network": next(iter(nets))})])
        start = time.monotonic()
        info = infer_network(main, {"Main": main, **nets}, "Main")
        assert time.monotonic() - start < budget(10)
        assert any(n == "top" and words in m for n, m in info.errors), info.errors[:2]
