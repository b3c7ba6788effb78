"""Issue 16, helper I4: Dropout's SkipAtTest and Seed, BatchNormalization's options, the properties NNC
files carry for supported layers, the IO and Loss categories and the Validation layers."""
from __future__ import annotations

import numpy as np

from nnconsole.engine.runtime.graph import build_graph
from nnconsole.engine.interop.files import export_nntxt, import_file
from nnconsole.engine.project.model import Datasets, Layer, Network, Project
from tests.support.nnc_files import sdcproj_text


def _import(tmp_path, layers):
    path = tmp_path / "p.sdcproj"
    path.write_text(sdcproj_text(layers), newline="")
    return import_file(str(path))


def _forward(net: Network, mode: str, feed: dict, out: str, batch: int = 4):
    import nnabla as nn

    nn.clear_parameters()
    built = build_graph(net, batch, mode)
    for name, value in feed.items():
        built.inputs[name].d = value
    built.outputs[out].forward()
    return built.outputs[out].d.copy()


# ------------------------------------------------------------------------------ Dropout / BN options
def test_dropout_skip_at_test_false_keeps_dropping_at_validation_and_in_exports(tmp_path):
    result = _import(tmp_path, [("x", "Input", {"Size": "64", "Dataset": "x"}, []),
                                ("d", "Dropout", {"P": "0.5", "Seed": "7", "SkipAtTest": "False"}, ["x"]),
                                ("loss", "SquaredError", {"T.Dataset": "y"}, ["d"])])
    assert [u for u in result.unsupported if "'d'" in u] == []
    layer = result.project.network.layer("d")
    assert layer.params["skip_at_test"] is False and layer.params["seed"] == 7
    net = result.project.network
    x = np.ones((4, 64), np.float32)
    out = _forward(net, "validation", {"x": x}, "d")
    assert (out == 0).any() and (out == 2).any()  # still dropping (and scaling) at validation
    layer.params["skip_at_test"] = True
    assert np.array_equal(_forward(net, "validation", {"x": x}, "d"), x)
    layer.params["skip_at_test"] = False
    project = Project(name="p", network=net, datasets=Datasets(training="a.csv", validation="a.csv"))
    export_nntxt(project, str(tmp_path / "p.nntxt"))
    text = (tmp_path / "p.nntxt").read_text()
    runtime = text[text.index('name: "MainRuntime"'):] if 'name: "MainRuntime"' in text else text
    assert 'type: "Dropout"' in runtime and "seed: 7" in text


def test_batchnorm_batch_stat_false_uses_running_statistics_while_training(tmp_path):
    result = _import(tmp_path, [("x", "Input", {"Size": "2,3,3", "Dataset": "x"}, []),
                                ("bn", "BatchNormalization", {"Axes": "0", "DecayRate": "0.5", "Epsilon": "0.01",
                                                              "BatchStat": "False"}, ["x"]),
                                ("loss", "SquaredError", {"T.Dataset": "y"}, ["bn"])])
    assert [u for u in result.unsupported if "'bn'" in u] == []
    params = result.project.network.layer("bn").params
    assert params["batch_stat"] is False and params["decay_rate"] == 0.5 and params["eps"] == 0.01
    x = np.random.RandomState(0).randn(4, 2, 3, 3).astype(np.float32) * 3 + 5
    out = _forward(result.project.network, "train", {"x": x}, "bn")
    assert np.allclose(out, x / np.sqrt(1 + 0.01), atol=1e-4)  # running mean 0, var 1: not batch statistics
    result.project.network.layer("bn").params["batch_stat"] = True
    out = _forward(result.project.network, "train", {"x": x}, "bn")
    assert abs(out.mean()) < 1e-3


def test_batchnorm_batch_stat_round_trips_through_nntxt(tmp_path):
    net = Network([Layer("x", "Input", params={"shape": [2, 3]}),
                   Layer("bn", "BatchNormalization", ["x"], {"batch_stat": False, "decay_rate": 0.7}),
                   Layer("t", "Input", params={"shape": [2, 3]}), Layer("loss", "SquaredError", ["bn", "t"])])
    project = Project(name="p", network=net, datasets=Datasets(training="a.csv", validation="a.csv"))
    path = str(tmp_path / "bn.nntxt")
    export_nntxt(project, path)
    back = import_file(path).project.network.layer("bn").params
    assert back["batch_stat"] is False and abs(back["decay_rate"] - 0.7) < 1e-6


def test_properties_nnc_files_set_are_used_or_reported(tmp_path):
    """A supported layer's NNC property that changes its meaning is never dropped without a report line."""
    result = _import(tmp_path, [("x", "Input", {"Size": "2,4", "Dataset": "x"}, []),
                                ("fc", "Affine", {"OutShape": "3", "BaseAxis": "1"}, ["x"]),
                                ("loss", "SquaredError", {"T.Dataset": "y"}, ["fc"])])
    assert any("'fc'" in u and "BaseAxis" in u for u in result.unsupported), result.unsupported


# ------------------------------------------------------------------------------------- IO and Loss
def test_every_io_and_loss_layer_of_nncs_palette_is_registered_with_its_loss_role():
    from nnconsole.engine.layers import find_spec
    from tests.support import nnc_reference

    palette = nnc_reference.palette()
    for name in palette["IO"] + palette["Loss"]:
        spec = find_spec(name)
        assert spec is not None and spec.group == ("IO" if name in palette["IO"] else "Loss"), name
    for name in palette["Loss"]:
        spec = find_spec(name)
        assert spec.is_loss and spec.task in ("classification", "regression") and spec.error is not None, name


def test_constant_feeds_its_value_and_imports_from_nnc(tmp_path):
    result = _import(tmp_path, [("x", "Input", {"Size": "1", "Dataset": "x"}, []),
                                ("c", "Constant", {"Value": "2.5", "ValueType": "Float"}, []),
                                ("a", "Add2", {}, ["x", "c"]),
                                ("loss", "SquaredError", {"T.Dataset": "y"}, ["a"])])
    assert result.unsupported == [] and result.project.network.layer("c").type == "Constant"
    x = np.arange(4, dtype=np.float32).reshape(4, 1)
    assert np.allclose(_forward(result.project.network, "validation", {"x": x}, "a"), x + 2.5)
    from nnconsole.engine.network.shapes import infer_network

    net = result.project.network
    net.layer("c").params["value"] = "abc"
    assert any("not a number" in msg for _, msg in infer_network(net).errors)


def test_epsilon_insensitive_loss_as_nnc_computes_it(tmp_path):
    result = _import(tmp_path, [("x", "Input", {"Size": "3", "Dataset": "x"}, []),
                                ("loss", "EpsilonInsensitiveLoss", {"Epsilon": "0.5", "T.Dataset": "t"}, ["x"])])
    assert result.unsupported == []
    net = result.project.network
    assert net.layer("loss").params == {"epsilon": 0.5} and net.layer("loss").inputs == ["x", "t"]
    x = np.array([[0, 1, 3]] * 4, np.float32)
    out = _forward(net, "train", {"x": x, "t": np.zeros_like(x)}, "loss")
    assert np.allclose(out, np.maximum(np.abs(x) - 0.5, 0))


def test_kl_multinomial_reads_its_q_pin_and_computes_the_divergence(tmp_path):
    result = _import(tmp_path, [("x", "Input", {"Size": "3", "Dataset": "x"}, []),
                                ("sm", "Softmax", {"Axis": "0"}, ["x"]),
                                ("kl", "KLMultinomial", {"BaseAxis": "0", "q.Dataset": "q"}, ["sm"])])
    assert result.unsupported == [], result.unsupported
    net = result.project.network
    assert net.layer("kl").inputs == ["sm", "q"]
    rng = np.random.RandomState(0)
    x = rng.randn(4, 3).astype(np.float32)
    q = rng.dirichlet([1, 1, 1], 4).astype(np.float32)
    out = _forward(net, "train", {"x": x, "q": q}, "kl")
    p = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    assert out.shape == (4, 1) and np.allclose(out[:, 0], (p * np.log(p / q)).sum(1), atol=1e-5)


# ------------------------------------------------------------------------------ Validation layers
def _classifier(extra):
    return Network([Layer("x", "Input", params={"shape": [5]}), Layer("fc", "Affine", ["x"], {"out_shape": [6]}),
                    Layer("y", "Input", params={"shape": [1]}),
                    Layer("loss", "SoftmaxCrossEntropy", ["fc", "y"])] + extra)


def _run(net, mode, feed, batch=8):
    import nnabla as nn

    nn.clear_parameters()
    built = build_graph(net, batch, mode, rng=np.random.RandomState(0))
    for name, value in feed.items():
        built.inputs[name].d = value
    built.loss.forward()
    built.sample_error.forward()
    return built


def test_top_n_error_is_the_error_curve_and_not_part_of_the_loss():
    rng = np.random.RandomState(1)
    feed = {"x": rng.randn(8, 5), "y": rng.randint(0, 6, (8, 1))}
    plain = _run(_classifier([]), "validation", feed)
    plain_loss = float(plain.loss.d)
    logits = plain.outputs["fc"].d.copy()
    top2 = np.argsort(-logits, axis=1)[:, :2]
    want = np.array([0.0 if feed["y"][i, 0] in top2[i] else 1.0 for i in range(8)])
    for mode in ("train", "validation"):
        built = _run(_classifier([Layer("top2", "TopNError", ["fc", "y"], {"n": 2})]), mode, feed)
        assert np.allclose(built.sample_error.d, want) and abs(float(built.loss.d) - plain_loss) < 1e-5
        assert built.loss_layers == ["loss"] and built.task == "classification"
    from nnconsole.engine.network.shapes import derive_network

    runtime = derive_network(_classifier([Layer("top2", "TopNError", ["fc", "y"], {"n": 2})]), "runtime")
    assert [layer.name for layer in runtime.layers] == ["x", "fc"]


def test_binary_error_is_the_error_curve():
    net = Network([Layer("x", "Input", params={"shape": [3]}), Layer("s", "Sigmoid", ["x"]),
                   Layer("y", "Input", params={"shape": [3]}), Layer("loss", "BinaryCrossEntropy", ["s", "y"]),
                   Layer("err", "BinaryError", ["s", "y"])])
    x = np.array([[-1, 2, 0.5]] * 8)
    y = np.array([[1, 1, 0]] * 8)
    built = _run(net, "validation", {"x": x, "y": y})
    assert np.allclose(built.sample_error.d, 2 / 3)


def test_validation_layers_import_from_nnc(tmp_path):
    result = _import(tmp_path, [("x", "Input", {"Size": "5", "Dataset": "x"}, []),
                                ("fc", "Affine", {"OutShape": "6"}, ["x"]),
                                ("loss", "SoftmaxCrossEntropy", {"Axis": "0", "T.Dataset": "y"}, ["fc"]),
                                ("top", "TopNError", {"Axis": "0", "N": "3", "T.Dataset": "y"}, ["fc"])])
    assert result.unsupported == [], result.unsupported
    layer = result.project.network.layer("top")
    assert layer.type == "TopNError" and layer.params == {"axis": 0, "n": 3} and layer.inputs == ["fc", "y"]


def test_skip_at_test_off_survives_an_nntxt_round_trip(tmp_path):
    net = Network([Layer("x", "Input", params={"shape": [4]}),
                   Layer("d", "Dropout", ["x"], {"p": 0.3, "skip_at_test": False}),
                   Layer("f", "RandomFlip", ["d"], {"axes": [0]}),
                   Layer("t", "Input", params={"shape": [4]}), Layer("loss", "SquaredError", ["f", "t"])])
    project = Project(name="p", network=net, datasets=Datasets(training="a.csv", validation="a.csv"))
    path = str(tmp_path / "d.nntxt")
    export_nntxt(project, path)
    back = import_file(path).project.network
    assert back.layer("d").params["skip_at_test"] is False
    assert back.layer("f").params.get("skip_at_test", True) is True


def test_input_order_is_understood_at_its_default_and_reported_otherwise(tmp_path):
    result = _import(tmp_path, [("x", "Input", {"Size": "2", "Dataset": "x", "Order": "-1"}, []),
                                ("z", "Input", {"Size": "2", "Dataset": "z", "Order": "3"}, []),
                                ("a", "Add2", {}, ["x", "z"]),
                                ("loss", "SquaredError", {"T.Dataset": "y"}, ["a"])])
    assert [u for u in result.unsupported if "Order" in u] == [
        "layer 'z' (Input): Order=3 is not supported; nnconsole orders the runtime network's inputs itself"]
