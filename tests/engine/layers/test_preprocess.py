"""Pre-process layers with NNC's semantics (issue 16): random while training, deterministic (identity or the
centre crop) at validation, evaluation and in exported runtime networks; each worker draws different random
numbers, reproducibly from the seed."""
from __future__ import annotations

import numpy as np
import pytest

from nnconsole.engine.runtime.graph import build_graph
from nnconsole.engine.interop.files import export_nntxt, import_file
from nnconsole.engine.project.model import Datasets, Layer, Network, Project
from tests.support.nnc_files import sdcproj_text

RANDOM = [("ImageAugmentation", {"flip_lr": True, "brightness": 0.3, "noise": 0.1}),
          ("RandomFlip", {"axes": [2]}),
          ("RandomShift", {"shift": [2, 2]}),
          ("RandomErase", {"prob": 1.0, "replacements": "5,6"})]


def _net(type_, params, shape=(3, 8, 8)):
    layer = Layer("aug", type_, ["x"], dict(params))
    from nnconsole.engine.network.shapes import infer_network

    out = infer_network(Network([Layer("x", "Input", params={"shape": list(shape)}), layer])).layers["aug"].out_shape
    return Network([Layer("x", "Input", params={"shape": list(shape)}), layer,
                    Layer("t", "Input", params={"shape": list(out)}), Layer("loss", "SquaredError", ["aug", "t"])])


def _out(net, mode, x, **kw):
    import nnabla as nn

    nn.clear_parameters()
    built = build_graph(net, len(x), mode, **kw)
    built.inputs["x"].d = x
    built.outputs["aug"].forward()
    return built.outputs["aug"].d.copy()


IMAGES = np.random.RandomState(0).rand(4, 3, 8, 8).astype(np.float32)


@pytest.mark.parametrize("type_,params", RANDOM, ids=[t for t, _ in RANDOM])
def test_random_while_training_identity_at_validation(type_, params):
    net = _net(type_, params)
    assert not np.allclose(_out(net, "train", IMAGES, seed=1), IMAGES)
    assert np.array_equal(_out(net, "validation", IMAGES, seed=1), IMAGES)
    assert np.array_equal(_out(net, "runtime", IMAGES), IMAGES)
    net.layer("aug").params["skip_at_test"] = False
    assert not np.allclose(_out(net, "validation", IMAGES, seed=1), IMAGES)


def test_each_worker_draws_its_own_numbers_reproducibly_from_the_seed():
    net = _net("ImageAugmentation", {"noise": 0.5})
    rank0 = _out(net, "train", IMAGES, seed=3, rank=0)
    assert np.array_equal(rank0, _out(net, "train", IMAGES, seed=3, rank=0))
    assert not np.allclose(rank0, _out(net, "train", IMAGES, seed=3, rank=1))
    assert not np.allclose(rank0, _out(net, "train", IMAGES, seed=4, rank=0))


@pytest.mark.parametrize("type_", ["ImageAugmentation", "RandomCrop"])
def test_crops_are_random_while_training_and_central_at_test(type_):
    net = _net(type_, {"shape": [3, 4, 4]})
    train = _out(net, "train", IMAGES, seed=1)
    assert train.shape == (4, 3, 4, 4)
    assert np.array_equal(_out(net, "validation", IMAGES, seed=1), IMAGES[:, :, 2:6, 2:6])


def test_exported_runtime_and_validation_networks_are_deterministic(tmp_path):
    net = _net("ImageAugmentation", {"shape": [3, 6, 6], "flip_lr": True})
    project = Project(name="aug", network=net, datasets=Datasets(training="a.csv", validation="a.csv"))
    path = tmp_path / "aug.nntxt"
    export_nntxt(project, str(path))
    text = path.read_text()
    main, rest = text[:text.index('name: "MainValidation"')], text[text.index('name: "MainValidation"'):]
    assert 'type: "ImageAugmentation"' in main and "flip_lr: true" in main
    assert "ImageAugmentation" not in rest and 'type: "Slice"' in rest
    import nnabla as nn
    from nnabla.utils.load import load

    nn.clear_parameters()
    info = load([str(path)], prepare_data_iterator=False, batch_size=2)
    runtime = info.networks["MainRuntime"]
    runtime.variables["x"].variable_instance.d = IMAGES[:2]
    out = runtime.variables["aug"].variable_instance
    out.forward()
    assert np.array_equal(out.d, IMAGES[:2, :, 1:7, 1:7])
    nn.clear_parameters()


def test_mean_subtraction_learns_the_mean_while_training_only():
    import nnabla as nn

    net = _net("MeanSubtraction", {}, shape=(2,))
    x = np.array([[1, 2], [3, 4]], np.float32)
    nn.clear_parameters()
    train = build_graph(net, 2, "train")
    valid = build_graph(net, 2, "validation")
    train.inputs["x"].d = x
    train.outputs["aug"].forward()
    assert np.allclose(train.outputs["aug"].d, x - x.mean(0))
    valid.inputs["x"].d = x + 10
    valid.outputs["aug"].forward()
    valid.outputs["aug"].forward()
    assert np.allclose(valid.outputs["aug"].d, x + 10 - x.mean(0))  # running mean not updated at test
    nn.clear_parameters()


def test_one_hot():
    net = _net("OneHot", {"shape": [4]}, shape=(1,))
    out = _out(net, "validation", np.array([[2], [0]], np.float32))
    assert np.array_equal(out, [[0, 0, 1, 0], [1, 0, 0, 0]])


def test_nnc_pre_process_layers_import_with_their_properties(tmp_path):
    path = tmp_path / "aug.sdcproj"
    path.write_text(sdcproj_text([
        ("x", "Input", {"Size": "3,8,8", "Dataset": "x"}, []),
        ("ia", "ImageAugmentation", {"Shape": "3,6,6", "FlipLR": "True", "Angle": "0.2", "Seed": "5",
                                     "SkipAtTest": "True", "ContrastCenter": "0.5"}, ["x"]),
        ("rc", "RandomCrop", {"Shape": "*Input", "BaseAxis": "0"}, ["ia"]),
        ("er", "RandomErase", {"AreaRatios": "0.1,0.2", "InPlace": "*AutoInPlaceOnce"}, ["rc"]),
        ("fl", "RandomFlip", {"Axes": "2", "BaseAxis": "1"}, ["er"]),
        ("loss", "SquaredError", {"T.Dataset": "y"}, ["fl"])]), newline="")
    result = import_file(str(path))
    net = result.project.network
    assert net.layer("ia").params == {"shape": [3, 6, 6], "flip_lr": True, "angle": 0.2, "seed": 5,
                                      "skip_at_test": True, "contrast_center": 0.5}
    assert net.layer("rc").params == {} and net.layer("er").params == {"area_ratios": "0.1,0.2"}
    assert result.unsupported == ["layer 'fl' (RandomFlip): property BaseAxis=1 has no nnconsole equivalent"]
