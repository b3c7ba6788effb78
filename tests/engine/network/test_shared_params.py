"""Parameter scopes shared between layers (issue 16): a GAN's discriminator applied twice has one set of
weights in the project model, the nnabla graph, the parameter counts, the imports and the exports."""
from __future__ import annotations

import numpy as np

from nnconsole.engine.runtime.graph import build_graph
from nnconsole.engine.interop.files import export_nntxt, import_file
from nnconsole.engine.project.model import Datasets, Layer, Network, Project
from nnconsole.engine.network.shapes import infer_network
from tests.support.nnc_files import sdcproj_text
from nnconsole.engine.check.project_file import load_valid_project


def _two_discriminators(scope_b: str = "disc") -> Network:
    """real -> D, fake -> D (the same weights when both layers name scope 'disc')."""
    return Network([
        Layer("real", "Input", params={"shape": [4]}), Layer("fake", "Input", params={"shape": [4]}),
        Layer("d_real", "Affine", ["real"], {"out_shape": [1]}, parameter_scope="disc"),
        Layer("d_fake", "Affine", ["fake"], {"out_shape": [1]}, parameter_scope=scope_b),
        Layer("t", "Input", params={"shape": [1]}), Layer("t2", "Input", params={"shape": [1]}),
        Layer("l1", "SquaredError", ["d_real", "t"]), Layer("l2", "SquaredError", ["d_fake", "t2"])])


def test_layers_naming_one_scope_share_one_set_of_weights():
    import nnabla as nn

    net = _two_discriminators()
    info = infer_network(net)
    assert info.ok and info.total_params == 5  # 4x1 W + 1 b, counted once
    assert infer_network(_two_discriminators("other")).total_params == 10
    nn.clear_parameters()
    built = build_graph(net, 2, "train", rng=np.random.RandomState(0))
    assert sorted(built.parameters) == ["disc/affine/W", "disc/affine/b"]
    x = np.random.RandomState(1).randn(2, 4)
    built.inputs["real"].d = x
    built.inputs["fake"].d = x
    built.outputs["d_real"].forward()
    built.outputs["d_fake"].forward()
    assert np.array_equal(built.outputs["d_real"].d, built.outputs["d_fake"].d)
    nn.clear_parameters()


def test_shared_weights_of_different_shapes_are_an_error():
    net = _two_discriminators()
    net.layer("fake").params["shape"] = [3]
    errors = infer_network(net).errors
    assert any("disc" in msg and "shape" in msg for _, msg in errors), errors


def test_import_keeps_sharing_and_export_writes_one_parameter(tmp_path):
    path = tmp_path / "gan.sdcproj"
    path.write_text(sdcproj_text([
        ("x", "Input", {"Size": "4", "Dataset": "x"}, []),
        ("a", "Affine", {"OutShape": "4", "ParameterScope": "fc"}, ["x"]),
        ("b", "Affine", {"OutShape": "4", "ParameterScope": "fc"}, ["a"]),
        ("loss", "SquaredError", {"T.Dataset": "y"}, ["b"])]), newline="")
    result = import_file(str(path))
    assert [u for u in result.unsupported if "shared" in u] == []
    net = result.project.network
    assert net.layer("a").parameter_scope == net.layer("b").parameter_scope == "fc"
    assert infer_network(net).total_params == 20
    project = Project(name="gan", network=net, datasets=Datasets(training="a.csv", validation="a.csv"))
    out = str(tmp_path / "gan.nntxt")
    export_nntxt(project, out)
    text = open(out).read()
    main = text[:text.index('name: "MainValidation"')]
    assert main.count('name: "fc/affine/W"') == 1 and main.count('input: "fc/affine/W"') == 2
    back = import_file(out).project.network
    assert back.layer("a").parameter_scope == back.layer("b").parameter_scope == "fc"


def test_project_file_keeps_the_scope(tmp_path):
    from nnconsole.engine.project.io import save_project

    project = Project(name="gan", network=_two_discriminators(),
                      datasets=Datasets(training="a.csv", validation="a.csv"))
    path = str(tmp_path / "gan.yaml")
    save_project(project, path)
    assert "parameter_scope: disc" in open(path).read()
    assert load_valid_project(path, check_datasets=False).network.layer("d_fake").parameter_scope == "disc"


# ------------------------------------------------------------------------------------ Parameter layers
def test_parameter_layer_is_a_learned_tensor_and_working_memory_is_kept(tmp_path):
    import nnabla as nn

    from nnconsole.engine.runtime.graph import lr_multipliers

    net = Network([Layer("x", "Input", params={"shape": [3]}), Layer("p", "Parameter", [], {"shape": [3]}),
                   Layer("m", "WorkingMemory", [], {"shape": [3]}),
                   Layer("a", "Add2", ["x", "p"]), Layer("b", "Add2", ["a", "m"]),
                   Layer("t", "Input", params={"shape": [3]}), Layer("loss", "SquaredError", ["b", "t"])])
    info = infer_network(net)
    assert info.ok and info.total_params == 3 and info.layers["m"].n_params == 0
    nn.clear_parameters()
    built = build_graph(net, 2, "train", rng=np.random.RandomState(0))
    assert set(lr_multipliers(net, built)) == {"p/param/W"}
    built.inputs["x"].d = 0
    built.outputs["b"].forward()
    p, m = built.parameters["p/param/W"].d, built.parameters["m/param/W"].d
    assert np.allclose(built.outputs["b"].d, np.broadcast_to(p + m, (2, 3)))
    nn.clear_parameters()


def test_parameter_layers_import_from_nnc(tmp_path):
    path = tmp_path / "p.sdcproj"
    path.write_text(sdcproj_text([
        ("x", "Input", {"Size": "3", "Dataset": "x"}, []),
        ("p", "Parameter", {"Size": "3", "Initializer": "Constant", "InitializerMultiplier": "0.5",
                            "LRateMultiplier": "2"}, []),
        ("a", "Add2", {}, ["x", "p"]),
        ("loss", "SquaredError", {"T.Dataset": "y"}, ["a"])]), newline="")
    result = import_file(str(path))
    assert result.unsupported == [], result.unsupported
    p = result.project.network.layer("p")
    assert p.type == "Parameter" and p.params == {"shape": [3]} and p.lr_multipliers == {"W": 2.0}
    assert p.initializers["W"].type == "Constant" and p.initializers["W"].value == 0.5


def test_a_repeat_block_reading_one_parameter_keeps_one_set_of_weights(tmp_path):
    """nnabla's repeat expansion gives every copy the same parameter when its name has no {repeat} mark."""
    path = tmp_path / "rep.nntxt"
    path.write_text('''
network { name: "Main" batch_size: 2
  repeat_info { id: "R" times: 3 }
  variable { name: "x" type: "Buffer" shape { dim: -1 dim: 4 } }
  variable { name: "fc/affine/W" type: "Parameter" shape { dim: 4 dim: 4 } }
  variable { name: "fc/affine/b" type: "Parameter" shape { dim: 4 } }
  variable { name: "rs" type: "Buffer" shape { dim: -1 dim: 4 } }
  variable { name: "fc" type: "Buffer" shape { dim: -1 dim: 4 } }
  variable { name: "re" type: "Buffer" shape { dim: -1 dim: 4 } }
  variable { name: "y" type: "Buffer" shape { dim: -1 dim: 4 } }
  variable { name: "loss" type: "Buffer" shape { dim: -1 dim: 4 } }
  function { name: "rs" type: "RepeatStart" input: "x" input: "fc" output: "rs" repeat_id: "R"
             repeat_param { repeat_id: "R" times: 3 } }
  function { name: "fc" type: "Affine" input: "rs" input: "fc/affine/W" input: "fc/affine/b" output: "fc"
             repeat_id: "R" }
  function { name: "re" type: "RepeatEnd" input: "fc" output: "re" repeat_param { repeat_id: "R" times: 3 } }
  function { name: "loss" type: "SquaredError" input: "re" input: "y" output: "loss" }
}
''')
    result = import_file(str(path))
    net = result.project.network
    assert net.layer("fc").parameter_scope == "fc" and net.layer("rs").params == {"times": 3}, result.report()
    assert infer_network(net).total_params == 20 and not [u for u in result.unsupported if "shared" in u]
    from nnconsole.engine.runtime.graph import build_graph

    built = build_graph(net, 2, "train")  # three repetitions, one set of weights
    assert sorted(built.parameters) == ["fc/affine/W", "fc/affine/b"]
    assert len([n for n in built.outputs if n.startswith("fc[")]) == 3
