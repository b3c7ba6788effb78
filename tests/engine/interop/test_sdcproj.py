"""nnconsole.engine.interop: Neural Network Console desktop projects (.sdcproj) and training imported projects."""
from __future__ import annotations

import math
import os

import pytest

from nnconsole.engine.interop.report import InteropError
from nnconsole.engine.interop.files import import_file
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Initializer
from nnconsole.engine.network.layered_layout import crowded
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.nnc_files import sdcproj_text
from tests.support.paths import INTEROP_DATA

SDCPROJ = os.path.join(INTEROP_DATA, "nnc_tiny_cnn.sdcproj")
NNTXT = os.path.join(INTEROP_DATA, "nnc_tiny_repeat.nntxt")


def test_sdcproj_imports_layers_positions_initializers_and_lr_multipliers():
    result = import_file(SDCPROJ)
    p = result.project
    assert result.unsupported == []
    layers = {l.name: l for l in p.network.layers}
    assert [l.name for l in p.network.layers] == [
        "Input", "Convolution", "ReLU", "RepeatStart", "Convolution_2", "Tanh", "RepeatEnd", "MaxPooling",
        "Affine", "y", "SoftmaxCrossEntropy"]
    # NNC's 240x48 boxes 60 apart would touch at the canvas's size: laid out again, in rows, top to bottom
    # (issue 28 item 13), and the report says so
    positions = {name: layer.position for name, layer in layers.items()}
    assert not crowded(positions) and layers["RepeatStart"].params == {"times": 2}
    assert layers["Input"].position == (0.0, 0.0)
    assert layers["Input"].position[1] < layers["Convolution_2"].position[1] < layers["Affine"].position[1]
    assert any(note.startswith("layers laid out again") for note in result.notes)
    conv = layers["Convolution"]
    assert conv.params["pad"] == [1, 1]  # BorderMode=same with Padding=*ConvolutionPaddingSize
    assert (conv.params["outmaps"], conv.params["kernel"]) == (4, [3, 3])
    assert conv.initializers == {"W": Initializer("NormalConvolutionHe", 0.5), "b": Initializer("Constant", 1.0, 0.1)}
    assert conv.lr_multipliers == {"W": 0.5, "b": 2.0}
    assert layers["MaxPooling"].params["stride"] == [2, 2]  # Strides=*KernelShape
    assert layers["Affine"].initializers["W"] == Initializer("UniformAffineGlorot", 1.0)
    assert layers["Convolution_2"].inputs == ["RepeatStart"] and layers["MaxPooling"].inputs == ["RepeatEnd"]
    # the loss target comes from T.Dataset=y: an Input with the label shape
    assert layers["SoftmaxCrossEntropy"].inputs == ["Affine", "y"]
    assert layers["y"].params == {"shape": [1], "variable": "y"}
    info = infer_network(p.network)
    assert info.ok and info.layers["Affine"].out_shape == (3,)
    o = p.optimizer
    assert (o.solver, o.learning_rate, o.solver_params["beta2"], o.solver_params["eps"]) == ("Adam", 0.01, 0.999, 1e-8)
    # NNC's epoch units kept (the plan makes them 6 iterations each: 48 rows / batch 8)
    assert (o.schedule.type, o.lr_multiplier, o.lr_update_interval, o.warmup_iterations) == ("exponential", 0.5, 1, 1)
    assert (o.lr_update_interval_unit, o.warmup_unit) == ("epochs", "epochs")
    assert (p.config.max_epoch, p.config.batch_size, p.config.validation_interval) == (2, 8, 5)
    assert p.datasets.training == os.path.join(INTEROP_DATA, "tiny_train.csv") and p.datasets.shuffle
    assert p.description.startswith("Hand-written sample") and "\n" in p.description


def _train(project_path: str, out: str):
    from nnconsole.engine.rundir import store as runs
    from nnconsole.engine.launch.launcher import LaunchRequest, launch

    result = launch(LaunchRequest(project_path=project_path, output=out, epochs=2, device="cpu"))
    assert result.status == "finished", result.message
    valid = list(runs.iter_metrics(result.run_dir, "validation"))
    # NNC's MonitorInterval=5 is validation_interval 5: of 2 epochs only the last one is validated.
    assert [r["epoch"] for r in valid] == [2]
    assert all(math.isfinite(r["loss"]) for r in valid), valid  # neither NaN nor infinite
    assert os.path.isfile(os.path.join(result.run_dir, "model_final.nnp"))
    return result.run_dir


def copy_samples(folder) -> None:
    """The sample files next to where the test saves the project (data must lie in the project's folder)."""
    import shutil
    for name in os.listdir(INTEROP_DATA):
        if os.path.isfile(os.path.join(INTEROP_DATA, name)):  # sub-folders hold other sets (nnabla's own tests)
            shutil.copy(os.path.join(INTEROP_DATA, name), folder)


@pytest.mark.slow
def test_imported_nntxt_trains(tmp_path):
    copy_samples(tmp_path)
    result = import_file(str(tmp_path / os.path.basename(NNTXT)))
    path = str(tmp_path / "project.yaml")
    save_project(result.project, path)
    project = load_valid_project(path)  # validates the network, the settings and the datasets
    assert project.network.layer("Input").params["variable"] == "x"
    _train(path, str(tmp_path / "results"))


@pytest.mark.slow
def test_imported_sdcproj_trains_honouring_initializers_and_lr_multipliers(tmp_path):
    """The Affine's W starts Constant 0.3 with LRateMultiplier 0: after training it is still all 0.3, while
    its bias (multiplier 1) and the first convolution (W multiplier 0.5) have moved."""
    import nnabla as nn
    import numpy as np

    with open(SDCPROJ, newline="") as fh:
        text = fh.read()
    head, affine = text.split("[Main_Layer_8]")
    affine, tail = affine.split("[Main_Layer_9]")
    affine = (affine
              .replace("Property_7_Value=UniformAffineGlorot", "Property_7_Value=Constant")
              .replace("Property_8_Value=1.0", "Property_8_Value=0.3")
              .replace("Property_9_Value=1.0", "Property_9_Value=0"))
    copy_samples(tmp_path)
    source = tmp_path / "edited.sdcproj"
    source.write_text(head + "[Main_Layer_8]" + affine + "[Main_Layer_9]" + tail, newline="")
    result = import_file(str(source))
    fc = result.project.network.layer("Affine")
    assert fc.initializers["W"] == Initializer("Constant", 1.0, 0.3) and fc.lr_multipliers == {"W": 0.0}
    path = str(tmp_path / "project.yaml")
    save_project(result.project, path)
    run_dir = _train(path, str(tmp_path / "results"))
    nn.clear_parameters()
    nn.load_parameters(os.path.join(run_dir, "parameters_final.h5"))
    params = nn.get_parameters(grad_only=False)
    assert np.allclose(params["Affine/affine/W"].d, 0.3)
    assert not np.allclose(params["Affine/affine/b"].d, 0.0)
    assert not np.allclose(params["Convolution/conv/b"].d, 0.1)
    nn.clear_parameters()


def _ini(tmp_path, text: str) -> str:
    path = tmp_path / "p.sdcproj"
    path.write_text(text.replace("\n", "\r\n"))
    return str(path)


MINIMAL = """[Global]
NumNetwork=1
Network_0=Main
[Main_Network_Global]
NumLayer=3
NumLink=2
[Main_Layer_0]
ID=0
Type=Input
Position_0=0
Position_1=0
Property_0_Name=Name
Property_0_Value=Input
Property_1_Name=Size
Property_1_Value=6
NumProperty=2
[Main_Layer_1]
ID=1
Type={mid_type}
Position_0=0
Position_1=60
Property_0_Name=Name
Property_0_Value=Mid
Property_1_Name={mid_prop}
Property_1_Value={mid_value}
NumProperty=2
[Main_Layer_2]
ID=2
Type=SquaredError
Position_0=0
Position_1=120
Property_0_Name=Name
Property_0_Value=Loss
Property_1_Name=T.Dataset
Property_1_Value=t
NumProperty=2
[Main_Link_0]
ID=0
SourceLayerID=0
SourcePinIndex=0
DestLayerID=1
DestPinIndex=0
[Main_Link_1]
ID=1
SourceLayerID=1
SourcePinIndex=0
DestLayerID={dest}
DestPinIndex=0
[Config]
MaxEpoch=x3
"""


def test_unknown_layers_and_properties_are_listed(tmp_path):
    path = _ini(tmp_path, MINIMAL.format(mid_type="LSTM", mid_prop="State", mid_value="4", dest=2)  # Unit: the next issue
                .replace("MaxEpoch=x3", "MaxEpoch=3\nBatchSize=2\n[Optimizer_0]\nSolverName=Eve\n"
                         "LearningRateScheduler=Custom"))
    result = import_file(path)
    text = "\n".join(result.unsupported)
    assert "layer 'Mid' (LSTM)" in text and "solver Eve" in text and "LearningRateScheduler=Custom" in text
    assert [l.name for l in result.project.network.layers] == ["Input", "Mid", "t", "Loss"]
    assert result.project.network.layer("t").params == {"shape": [1], "variable": "t"}  # shape unknown: noted
    assert "could not be inferred" in text

    path = _ini(tmp_path, MINIMAL.format(mid_type="Affine", mid_prop="W.File", mid_value="w.h5", dest=2)
                .replace("MaxEpoch=x3", "MaxEpoch=3"))
    result = import_file(path)
    assert any("W.File=w.h5" in u for u in result.unsupported)
    assert result.project.network.layer("t").params["shape"] == [100]  # Affine default OutShape 100


@pytest.mark.parametrize("edit,needle", [
    (lambda t: t, "[Config] MaxEpoch: expected a number, got 'x3'"),
    (lambda t: t.replace("DestLayerID={dest}", "DestLayerID=9"), "link from layer ID 1 to 9"),
    (lambda t: t.replace("[Main_Layer_2]", "[Main_Layer_7]"), "section [Main_Layer_2] is missing"),
])
def test_broken_projects_name_file_section_and_line(tmp_path, edit, needle):
    text = edit(MINIMAL).format(mid_type="ReLU", mid_prop="InPlace", mid_value="False", dest=2)
    with pytest.raises(InteropError) as err:
        import_file(_ini(tmp_path, text))
    message = str(err.value)
    assert needle in message and str(tmp_path / "p.sdcproj") in message
    if "MaxEpoch" in needle:
        line = text.splitlines().index("MaxEpoch=x3") + 1
        assert f"p.sdcproj:{line} [Config]" in message


def test_nnc_properties_map_to_registry_parameters(tmp_path):
    layers = [
        ("x", "Input", {"Size": "1,8,8", "Dataset": "x"}, []),
        ("c", "Convolution", {"OutMaps": "2", "KernelShape": "3,3", "BorderMode": "full", "Dilation": "2,2",
                              "Padding": "*ConvolutionPaddingSize", "ChannelLast": "False"}, ["x"]),
        ("bn", "BatchNormalization", {"Axes": "0", "DecayRate": "0.5", "Epsilon": "0.001", "BatchStat": "True",
                                      "beta.LRateMultiplier": "0.1", "mean.LRateMultiplier": "0"}, ["c"]),
        ("d", "Deconvolution", {"OutMaps": "3", "KernelShape": "2,2", "Padding": "0,0", "Strides": "2,2"}, ["bn"]),
        ("ap", "AveragePooling", {"KernelShape": "2,2", "Strides": "*KernelShape", "IncludingPad": "False"}, ["d"]),
        ("e", "ELU", {"Alpha": "0.5"}, ["ap"]),
        ("a", "Add2", {}, ["ap", "e"]),
        ("r", "Reshape", {"OutShape": "3,144"}, ["a"]),
        ("s", "Slice", {"Start": "0,0", "Stop": "3,100", "Step": "1,2"}, ["r"]),
        ("cat", "Concatenate", {"Axis": "1"}, ["s", "s"]),
        ("dr", "Dropout", {"P": "0.25", "Seed": "-1"}, ["cat"]),
        ("lk", "LeakyReLU", {"Alpha": "0.05"}, ["dr"]),
        ("se", "SELU", {"Scale": "1.05070098735548", "Alpha": "1.673263242354377"}, ["lk"]),
        ("fc", "Affine", {"OutShape": "4", "WithBias": "False", "W.Initializer": "NormalCLConvHeBackward"}, ["se"]),
        ("sm", "Softmax", {"Axis": "0"}, ["fc"]),
        ("loss", "CategoricalCrossEntropy", {"Axis": "0", "T.Dataset": "label"}, ["sm"]),
    ]
    path = tmp_path / "many.sdcproj"
    path.write_text(sdcproj_text(layers), newline="")
    result = import_file(str(path))
    net = result.project.network
    p = {l.name: l.params for l in net.layers}
    assert p["c"]["pad"] == [4, 4] and p["c"]["dilation"] == [2, 2]  # BorderMode full: dilation * (k - 1)
    assert p["bn"] == {"axes": [0], "decay_rate": 0.5, "eps": 0.001, "batch_stat": True}
    assert net.layer("bn").lr_multipliers == {"beta": 0.1}
    assert (p["d"]["outmaps"], p["d"]["stride"]) == (3, [2, 2])
    assert (p["ap"]["stride"], p["ap"]["including_pad"]) == ([2, 2], False)
    assert p["e"] == {"alpha": 0.5} and net.layer("a").inputs == ["ap", "e"]
    assert p["r"] == {"shape": [3, 144]} and p["s"] == {"start": [0, 0], "stop": [3, 100], "step": [1, 2]}
    assert p["cat"] == {"axis": 1} and net.layer("cat").inputs == ["s", "s"]
    assert p["dr"] == {"p": 0.25, "seed": -1} and p["lk"] == {"alpha": 0.05} and p["se"] == {}
    assert p["fc"] == {"out_shape": [4], "with_bias": False}
    assert net.layer("loss").inputs == ["sm", "label"] and p["label"] == {"shape": [1], "variable": "label"}
    assert result.unsupported == ["layer 'fc': W.Initializer=NormalCLConvHeBackward has no nnconsole equivalent; "
                                  "the layer's default initializer is used"]
    info = infer_network(net)
    assert info.ok, info.error_text()
    assert info.layers["cat"].out_shape == (3, 100) and info.layers["loss"].out_shape == (1,)
