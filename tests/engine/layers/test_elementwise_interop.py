"""Issue 16's element-wise palette in NNC and nnabla files and through the CLI: .sdcproj Values and side
pins, .nntxt round trips (arguments NNC hides included), an NNC project with every new type imported and
accepted by `info`, and a project with new types trained by `nnconsole train` and exported as .nnp.
The type list and cases are tests/engine/layers/test_elementwise.py's."""
from __future__ import annotations

import numpy as np
import pytest

from nnconsole.engine.layers import get_spec
from nnconsole.engine.project.model import Layer, Network
from tests.support import nnc_reference
from tests.support.networks import single_layer_network
from tests.support.elementwise_cases import CASES, S
from nnconsole.engine.check.project_file import load_valid_project

# -- .sdcproj: NNC's Value property and side pins (R, x) --------------------------------------------------
def test_sdcproj_values_and_side_pins_import(tmp_path):
    """Div2's R and ATan2's x arrive on NNC's side pin (DestPinIndex 1) and become the second input; the
    R pin's Generator properties are not reported; an unlinked R read from a dataset gets an Input reading it."""
    from nnconsole.engine.interop.files import import_file
    from tests.support.nnc_files import sdcproj_text

    text = sdcproj_text([
        ("r", "Input", {"Size": "4", "Dataset": "r"}, []),  # linked first, to the side pin
        ("x", "Input", {"Size": "4", "Dataset": "x"}, []),
        ("d", "Div2", {"R.Generator": "Constant", "R.GeneratorMultiplier": "1.0"}, ["r", "x"]),
        ("a", "ATan2", {"x.Generator": "Constant"}, ["r", "d"]),
        ("s", "AddScalar", {"Value": "0.5"}, ["a"]),
        ("g", "LogicalOrScalar", {"Value": "1"}, ["s"]),
        ("p", "PReLU", {"BaseAxis": "0", "Shared": "True", "slope.Initializer": "Constant",
                            "slope.InitializerMultiplier": "0.1"}, ["s"]),
        ("m", "Max", {"Axes": "0", "KeepDims": "True", "OnlyIndex": "False"}, ["p"]),
        ("loss", "SquaredError", {"T.Dataset": "y"}, ["m"]),
    ])
    # the links r -> d and r -> a go to the side pin
    text = text.replace("SourceLayerID=0\r\nSourcePinIndex=0\r\nDestLayerID=2\r\nDestPinIndex=0",
                        "SourceLayerID=0\r\nSourcePinIndex=0\r\nDestLayerID=2\r\nDestPinIndex=1")
    text = text.replace("SourceLayerID=0\r\nSourcePinIndex=0\r\nDestLayerID=3\r\nDestPinIndex=0",
                        "SourceLayerID=0\r\nSourcePinIndex=0\r\nDestLayerID=3\r\nDestPinIndex=1")
    assert text.count("DestPinIndex=1") == 2
    path = tmp_path / "elementwise.sdcproj"
    path.write_text(text, newline="")
    result = import_file(str(path))
    net = result.project.network
    assert result.unsupported == []
    assert net.layer("d").inputs == ["x", "r"] and net.layer("a").inputs == ["d", "r"]
    assert net.layer("s").params == {"val": 0.5} and net.layer("g").params == {"val": 1.0}
    assert net.layer("p").params == {"base_axis": 0, "shared": True}
    assert net.layer("p").initializers["slope"].type == "Constant" and net.layer("p").initializers["slope"].value == 0.1
    assert net.layer("m").params == {"axes": [0], "keep_dims": True, "only_index": False}

    path.write_text(sdcproj_text([("x", "Input", {"Size": "4", "Dataset": "x"}, []),
                                  ("d", "Sub2", {"R.Dataset": "r"}, ["x"]),
                                  ("loss", "SquaredError", {"T.Dataset": "y"}, ["d"])]), newline="")
    result = import_file(str(path))  # the unlinked R pin reads dataset variable r through an added Input (issue 26)
    assert result.unsupported == [] and result.project.network.layer("d").inputs == ["x", "r"]
    assert result.project.network.layer("r").params == {"shape": [4], "variable": "r"}


@pytest.mark.slow
def test_the_trainer_trains_and_evaluates_a_project_with_new_types(tmp_path):
    """The real CLI: `train` runs epochs of an MLP with PReLU, a Logical mask, Mul2 and scalar arithmetic
    (forward through the comparison at validation, backward around it), and `info` counts PReLU's slopes."""
    from nnconsole.engine.project.io import save_project
    from tests.support.cli import nnconsole, run_dir_from
    from tests.support.projects import tabular_project

    path = tabular_project(str(tmp_path), n=32, batch=8, epochs=2)
    project = load_valid_project(path)
    net = project.network
    fc2 = net.layer("fc2")
    net.layers.remove(net.layer("act1"))
    position = net.layers.index(fc2)
    net.layers[position:position] = [
        Layer("p", "PReLU", ["fc1"]),
        Layer("g", "GreaterScalar", ["p"], {"val": 0.0}),
        Layer("m", "Mul2", ["p", "g"]),
        Layer("s", "AddScalar", ["m"], {"val": 0.5}),
    ]
    fc2.inputs = ["s"]
    save_project(project, path, backup=False)
    out = nnconsole(["train", path, "-q"])
    assert "finished: validation loss" in out.stdout
    run_dir = run_dir_from(out.stdout)
    info = nnconsole(["info", path]).stdout
    rows = {line.split()[0]: line.split() for line in info.splitlines() if line.strip()}
    assert rows["p"][1:] == ["PReLU", "8", "8", "8"]  # 8 slopes; NNC's CostMultiplyAdd: the input size
    assert rows["g"][1:] == ["GreaterScalar", "8", "0", "0"]

    import nnabla as nn
    from nnabla.utils.nnp_graph import NnpLoader

    nn.clear_parameters()
    try:  # the exported runtime network (with the comparison) runs in nnabla
        nnp = NnpLoader(f"{run_dir}/model_final.nnp")
        graph = nnp.get_network(nnp.get_network_names()[0], batch_size=2)
        x = list(graph.inputs.values())[0]
        x.d = np.random.RandomState(0).randn(*x.shape)
        y = list(graph.outputs.values())[0]
        y.forward()
        assert y.shape == (2, 3) and np.isfinite(y.d).all()
    finally:
        nn.clear_parameters()


def test_nntxt_keeps_what_nnc_hides_and_reports_other_values(tmp_path):
    """SoftPlus's beta (no NNC property) is written as 1 (a missing message would make nnabla use 0); a
    file with another beta is reported, not silently changed. Logical scalars' bool val reads as 0/1."""
    from nnconsole.engine.interop.files import export_nntxt, import_file
    from nnconsole.engine.project.model import Datasets, Project

    layers = single_layer_network("SoftPlus", {}, [S], prefix="a_") + \
        single_layer_network("LogicalOrScalar", {"val": 3.0}, [S], prefix="b_")
    project = Project(name="hidden", network=Network(layers), datasets=Datasets(training="a.csv", validation="a.csv"))
    path = tmp_path / "hidden.nntxt"
    export_nntxt(project, str(path))
    text = path.read_text()
    assert "beta: 1" in text and "val: true" in text
    back = import_file(str(path))
    assert back.project.network.layer("b_layer").params == {"val": 1.0}  # nnabla's bool: true
    assert [u for u in back.unsupported if "a_layer" in u or "b_layer" in u] == []
    path.write_text(text.replace("beta: 1", "beta: 2"))
    assert any("a_layer" in u and "beta 2" in u for u in import_file(str(path)).unsupported)


def test_every_example_of_the_new_types_round_trips(tmp_path):
    """Each new type's registration examples (non-default axes, Values, flags) exported to .nntxt and
    imported again give the same layers, parameters and initializers (PReLU's slope); the .nnp a run
    exports is checked by the CLI test above."""
    from nnconsole.engine.interop.files import export_nntxt, import_file
    from nnconsole.engine.project.model import Datasets, Project
    from tests.support.networks import same_network

    layers = []
    for t in sorted(CASES):
        for k, (params, shapes) in enumerate(get_spec(t).example_cases()):
            layers += single_layer_network(t, params, shapes, prefix=f"{t.lower()}{k}_")
    project = Project(name="rt", network=Network(layers), datasets=Datasets(training="a.csv", validation="a.csv"))
    path = tmp_path / "rt.nntxt"
    export_nntxt(project, str(path))
    back = import_file(str(path))
    assert [u for u in back.unsupported if "_layer" in u] == []
    same_network(project.network, back.project.network)


def _nnc_project_with_every_new_type() -> str:
    """A .sdcproj as NNC writes it: every new type with NNC's default properties, fed by Inputs (the second
    operand of Div2, Greater, ATan2, BatchMatmul ... on its side pin), each chain ending in a loss."""
    from tests.support.nnc_files import sdcproj_text

    layers, side = [], []
    for t in sorted(CASES):
        nnc = nnc_reference.layer(t)
        _params, shapes = get_spec(t).example_cases()[0]
        props = {k: p.value for k, p in nnc.properties.items() if k not in ("Input", "Output", "Inputs")
                 and not k.startswith("Cost")}
        names = [f"{t}_in{i}" for i in range(len(shapes))]
        layers += [(n, "Input", {"Size": ",".join(map(str, s)), "Dataset": n}, []) for n, s in zip(names, shapes)]
        layers.append((t, t, props, names))
        if len(get_spec(t).input_names) == 2:
            side.append((len(layers) - 1, len(names) - 1))
        head = t
        if t in ("BatchDet", "BatchLogdet"):  # one value per sample, shape (): a loss needs it as (1,)
            layers.append((f"{t}_r", "Reshape", {"OutShape": "1"}, [t]))
            head = f"{t}_r"
        layers.append((f"{t}_loss", "SquaredError", {"T.Dataset": f"{t}_y"}, [head]))
    text = sdcproj_text(layers)
    ids = {name: i for i, (name, *_rest) in enumerate(layers)}
    for dst, _pin in side:  # the link from the second Input to the layer goes to the side pin
        src = ids[layers[dst][3][1]]
        old = f"SourceLayerID={src}\r\nSourcePinIndex=0\r\nDestLayerID={dst}\r\nDestPinIndex=0"
        assert text.count(old) == 1
        text = text.replace(old, old[:-1] + "1")
    return text


@pytest.mark.slow
def test_nnc_project_with_every_new_type_imports_and_info_accepts_it(tmp_path):
    """The CLI, as a user runs it: `import` of the .sdcproj reports nothing about the layers, `info` accepts
    the project (shapes, parameters and costs of every layer)."""
    from tests.support.cli import nnconsole

    source = tmp_path / "every.sdcproj"
    source.write_text(_nnc_project_with_every_new_type(), newline="")
    from nnconsole.engine.interop.files import import_file

    assert import_file(str(source)).unsupported == []
    imported = nnconsole(["import", str(source), "-o", str(tmp_path / "every.yaml")])
    assert all(t not in imported.stdout + imported.stderr for t in ("side pin", "no nnconsole equivalent")), \
        imported.stdout + imported.stderr
    info = nnconsole(["info", str(tmp_path / "every.yaml")])
    types = {line.split()[1] for line in info.stdout.splitlines() if len(line.split()) > 2}
    assert set(CASES) <= types
