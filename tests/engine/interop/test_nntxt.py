"""nnconsole.engine.interop: .nntxt/.nnp import and export (issue 6), without running nnabla_cli."""
from __future__ import annotations

import os
import shutil
import zipfile

import numpy as np
import pytest

from nnconsole import templates as project_templates
from nnconsole.engine.interop.files import import_file
from nnconsole.engine.interop.report import InteropError
from nnconsole.engine.interop.nntxt.exporter import export_nntxt, project_to_proto
from nnconsole.engine.interop.nntxt.importer import import_nntxt
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Initializer, Layer, Network, Project, Schedule
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.networks import same_network
from tests.support.paths import INTEROP_DATA

SAMPLE = os.path.join(INTEROP_DATA, "nnc_tiny_repeat.nntxt")
TEMPLATES = {t.name: t for t in project_templates.list_templates()}


def absolute_datasets(project: Project) -> Project:
    from nnconsole.engine.project.paths import dataset_path
    copy = project.copy()
    for key in ("training", "validation"):
        setattr(copy.datasets, key, dataset_path(project, getattr(project.datasets, key)))
    return copy


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_template_round_trip_keeps_network_and_config(name, tmp_path):
    project = load_valid_project(str(TEMPLATES[name].project_file))
    out = tmp_path / f"{name}.nntxt"
    export_nntxt(project, str(out))
    back = import_nntxt(str(out)).project
    same_network(project.network, back.network)
    assert back.optimizer == project.optimizer
    assert back.config == project.config
    expected = absolute_datasets(project)
    assert back.datasets == expected.datasets
    # With the nnconsole comment, the whole project comes back (positions, name, seed, multi-GPU...).
    assert [l.position for l in back.network.layers] == [tuple(l.position) for l in project.network.layers]
    assert (back.name, back.description, back.multi_gpu) == (project.name, project.description, project.multi_gpu)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_template_round_trip_without_nnconsole_comment(name, tmp_path):
    """What a plain nnabla reader keeps: the network, the optimizer and the CONFIG nnabla has fields for."""
    project = load_valid_project(str(TEMPLATES[name].project_file))
    out = tmp_path / "plain.nntxt"
    export_nntxt(project, str(out), with_extras=False)
    assert "nnconsole" not in out.read_text()
    back = import_nntxt(str(out)).project
    same_network(project.network, back.network)
    assert back.optimizer == project.optimizer
    c, d = project.config, back.config
    assert (c.max_epoch, c.batch_size, c.save_best, c.validation_interval, c.precision) == \
           (d.max_epoch, d.batch_size, d.save_best, d.validation_interval, d.precision)


def test_export_is_read_by_nnabla_with_names_shapes_and_settings(tmp_path):
    from nnabla.utils import load

    project = load_valid_project(str(TEMPLATES["digits_cnn"].project_file))
    project.optimizer.solver, project.optimizer.learning_rate = "Momentum", 0.05
    project.optimizer.solver_params = {"momentum": 0.8}
    project.optimizer.schedule = Schedule(type="step", steps=[100, 200], gamma=0.5)
    project.optimizer.warmup_iterations = 10
    project.network.layer("fc1").lr_multipliers = {"W": 0.25}
    out = tmp_path / "d.nntxt"
    export_nntxt(project, str(out))
    info = load.load([str(out)], prepare_data_iterator=False, exclude_parameter=True)
    assert set(info.networks) == {"Main", "MainValidation", "MainRuntime"}
    main = info.networks["Main"]
    assert main.parameters["conv1/conv/W"].shape == (16, 1, 3, 3)
    assert main.parameters["fc1/affine/W"].shape == (128, 64)
    assert main.variables["fc2"].variable_instance.shape == (32, 10)
    opt = info.optimizers["Optimizer"]
    assert opt.solver.name == "Momentum"
    assert opt.scheduler.get_learning_rate(150) == pytest.approx(0.025)  # after the first step, after warm-up
    mults = {v.name: m for v, m in opt.parameter_learning_rate_multipliers.items()}
    assert mults["fc1/affine/W"] == pytest.approx(0.25) and mults["conv1/conv/W"] == 1.0
    assert info.training_config.iter_per_epoch == 45  # ceil(1437 / 32)
    assert list(info.executors["Executor"].proto.output_variable)[0].data_name == "y'"


def test_nnc_written_sample_imports_with_repeat_block_kept():
    result = import_file(SAMPLE)
    p = result.project
    assert result.unsupported == []
    assert any("repeat block 'RepeatStart' x2 (Affine_2, Tanh) kept" in n for n in result.notes)
    layers = {l.name: l for l in p.network.layers}
    assert [l.name for l in p.network.layers] == [
        "Input", "Affine", "BatchNormalization", "ReLU", "RepeatStart", "Affine_2", "Tanh", "RepeatEnd", "Affine_3",
        "SoftmaxCrossEntropy_T", "SoftmaxCrossEntropy"]
    assert layers["RepeatStart"].inputs == ["ReLU"] and layers["RepeatStart"].params == {"times": 2}
    assert layers["Affine_2"].inputs == ["RepeatStart"] and layers["RepeatEnd"].inputs == ["Tanh"]
    assert layers["Affine_3"].inputs == ["RepeatEnd"]
    assert layers["SoftmaxCrossEntropy"].inputs == ["Affine_3", "SoftmaxCrossEntropy_T"]
    assert layers["Input"].params == {"shape": [16], "variable": "x"}
    assert layers["SoftmaxCrossEntropy_T"].params == {"shape": [1], "variable": "y"}
    assert layers["BatchNormalization"].params == {"axes": [0], "decay_rate": 0.9, "eps": 0.0001}
    assert layers["SoftmaxCrossEntropy"].params == {"axis": 0}
    assert layers["Affine"].initializers["W"] == Initializer("NormalAffineHe", 1.0)
    assert layers["Affine_2"].initializers["W"] == Initializer("NormalAffineGlorot", 0.8)
    assert layers["Affine_3"].initializers["W"] == Initializer("UniformAffineGlorot", 1.0)
    assert layers["Affine"].lr_multipliers == {"b": 2.0}
    assert layers["Affine_3"].lr_multipliers == {"W": 0.5}
    assert layers["BatchNormalization"].lr_multipliers == {}  # running stats: LR 0 is their nature
    o = p.optimizer
    assert (o.solver, o.learning_rate, o.solver_params, o.weight_decay) == ("Momentum", 0.05, {"momentum": 0.9}, 1e-4)
    assert (o.schedule.type, o.schedule.steps, o.schedule.gamma, o.warmup_iterations) == ("step", [6, 9], 0.5, 3)
    assert (p.config.max_epoch, p.config.batch_size, p.config.validation_interval) == (2, 8, 5)
    # the Windows training path is found by its file name next to the .nntxt; the relative one directly
    assert p.datasets.training == os.path.join(INTEROP_DATA, "tiny_train.csv")
    assert p.datasets.validation == os.path.join(INTEROP_DATA, "tiny_valid.csv")
    from nnconsole.engine.network.shapes import infer_network
    assert infer_network(p.network).ok


def _sample_nnp(tmp_path, values):
    """An .nnp like NNC writes one: the sample network plus parameter.h5 with expanded repeat names."""
    import nnabla as nn

    params = {}
    for name, shape in (("Affine/affine/W", (16, 8)), ("Affine/affine/b", (8,)),
                        ("BatchNormalization/bn/beta", (1, 8)), ("BatchNormalization/bn/gamma", (1, 8)),
                        ("BatchNormalization/bn/mean", (1, 8)), ("BatchNormalization/bn/var", (1, 8)),
                        ("Affine_2[0]/affine/W", (8, 8)), ("Affine_2[0]/affine/b", (8,)),
                        ("Affine_2[1]/affine/W", (8, 8)), ("Affine_2[1]/affine/b", (8,)),
                        ("Affine_3/affine/W", (8, 3)), ("Affine_3/affine/b", (3,))):
        v = nn.Variable(shape, need_grad=not name.endswith(("mean", "var")))
        v.d = values.uniform(-1, 1, shape).astype(np.float32)
        params[name] = v
    h5 = tmp_path / "parameter.h5"
    nn.save_parameters(str(h5), params=params, extension=".h5")
    nnp = tmp_path / "model.nnp"
    with zipfile.ZipFile(nnp, "w") as zf:
        zf.writestr("nnp_version.txt", "0.1\n")
        zf.write(SAMPLE, "network.nntxt")
        zf.write(h5, "parameter.h5")
    return nnp, {k: v.d.copy() for k, v in params.items()}


def test_nnp_parameters_become_initial_weights(tmp_path):
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    nnp, values = _sample_nnp(tmp_path, np.random.RandomState(3))
    shutil.copy(os.path.join(INTEROP_DATA, "tiny_valid.csv"), tmp_path)
    result = import_file(str(nnp), workdir=str(tmp_path / "w"))
    assert result.initial_parameters_path and os.path.isfile(result.initial_parameters_path)
    nn.clear_parameters()
    nn.load_parameters(result.initial_parameters_path)
    loaded = {k: v.d.copy() for k, v in nn.get_parameters(grad_only=False).items()}
    assert np.array_equal(loaded["Affine_2[1]/affine/W"], values["Affine_2[1]/affine/W"])
    assert np.array_equal(loaded["Affine_2[0]/affine/b"], values["Affine_2[0]/affine/b"])
    assert np.array_equal(loaded["BatchNormalization/bn/var"], values["BatchNormalization/bn/var"])
    assert np.array_equal(loaded["Affine_3/affine/W"], values["Affine_3/affine/W"])
    assert len(loaded) == len(values)
    # The engine builds the imported network on exactly these weights (nothing re-initialised).
    graph = build_graph(result.project.network, 2, "train")
    assert set(graph.parameters) == set(loaded)
    assert np.array_equal(graph.parameters["Affine_2[1]/affine/W"].d, values["Affine_2[1]/affine/W"])
    nn.clear_parameters()


UNSUPPORTED_NNTXT = '''
network {
  name: "Main"
  batch_size: 4
  variable { name: "Input" type: "Buffer" shape { dim: -1 dim: 6 } }
  variable { name: "Affine/affine/W" type: "Parameter" shape { dim: 6 dim: 4 }
             initializer { type: "NormalCLConvGlorot" multiplier: 1 } }
  variable { name: "Affine" type: "Buffer" shape { dim: -1 dim: 4 } }
  variable { name: "Erf" type: "Buffer" shape { dim: -1 dim: 4 } }
  variable { name: "Identity" type: "Buffer" shape { dim: -1 dim: 4 } }
  variable { name: "SquaredError_T" type: "Buffer" shape { dim: -1 dim: 4 } }
  variable { name: "SquaredError" type: "Buffer" shape { dim: -1 dim: 4 } }
  function { name: "Affine" type: "Affine" input: "Input" input: "Affine/affine/W" output: "Affine"
             affine_param { base_axis: 1 } }
  function { name: "Erf" type: "Erf" input: "Affine" output: "Erf" }
  function { name: "Identity" type: "Identity" input: "Erf" output: "Identity" }
  function { name: "SquaredError" type: "SquaredError" input: "Identity" input: "SquaredError_T"
             output: "SquaredError" }
}
dataset { name: "Training" uri: "train.csv" batch_size: 4 }
dataset { name: "Validation" uri: "valid.csv" batch_size: 4 }
dataset { name: "Test" uri: "test.csv" batch_size: 4 }
optimizer {
  name: "Optimizer" network_name: "Main" dataset_name: "Training"
  solver { type: "RMSpropGraves" lr_scheduler_type: "Custom" rmsprop_graves_param { lr: 0.002 } }
  data_variable { variable_name: "Input" data_name: "x" }
  data_variable { variable_name: "SquaredError_T" data_name: "y" }
  loss_variable { variable_name: "SquaredError" }
  parameter_variable { variable_name: "Affine/affine/W" learning_rate_multiplier: 1 }
}
optimizer { name: "Second" network_name: "Main" dataset_name: "Training" solver { type: "Sgd" } }
'''


def test_what_cannot_be_represented_is_listed_by_name(tmp_path):
    path = tmp_path / "odd.nntxt"
    path.write_text(UNSUPPORTED_NNTXT)
    result = import_file(str(path))
    text = "\n".join(result.unsupported)
    for needle in ("layer 'Erf' (Erf)", "NormalCLConvGlorot", "solver RMSpropGraves", "scheduler Custom",
                   "datasets Test", "Affine/affine/W"):
        assert needle in text, needle
    assert [o.name for o in result.project.optimizers] == ["Second"]  # issue 17: a second optimizer is kept
    layers = {l.name: l for l in result.project.network.layers}
    assert layers["Erf"].type == "Erf"  # an nnabla function outside NNC's palette: kept in place, not dropped
    assert layers["SquaredError"].inputs == ["Identity", "SquaredError_T"]  # Identity is a layer (issue 16)
    assert layers["Identity"].type == "Identity" and layers["Identity"].inputs == ["Erf"]
    assert layers["Affine"].params == {"out_shape": [4], "with_bias": False}
    assert result.project.optimizer.solver == "Adam" and result.project.optimizer.learning_rate == 0.002


@pytest.mark.parametrize("text,needle", [
    ("network { name: \"Main\"\n  batch_size: 4\n  variable { name: }\n}", ":3:"),
    ("this is not protobuf", "line"),
])
def test_bad_files_name_file_and_line(tmp_path, text, needle):
    path = tmp_path / "bad.nntxt"
    path.write_text(text)
    with pytest.raises(InteropError) as err:
        import_file(str(path))
    assert str(path) in str(err.value) and needle in str(err.value)


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(InteropError, match="cannot import '.onnx'"):
        import_file(str(tmp_path / "m.onnx"))
    with pytest.raises(InteropError, match="not found"):
        import_file(str(tmp_path / "none.nntxt"))


def test_export_refuses_a_broken_network():
    project = Project(network=Network(layers=[Layer("x", "Input", params={"shape": [3]}),
                                              Layer("fc", "Affine", ["nowhere"])]))
    with pytest.raises(InteropError, match="fc"):
        project_to_proto(project)


def test_flatten_and_constant_schedule_survive_through_the_comment(tmp_path):
    project = load_valid_project(str(TEMPLATES["digits_cnn"].project_file))
    net = project.network
    net.layers.insert(7, Layer("flat", "Flatten", ["pool2"], position=(40.0, 520.0)))
    net.layer("fc1").inputs = ["flat"]
    project.optimizer.schedule = Schedule(type="constant")
    project.config.seed = 7
    out = tmp_path / "f.nntxt"
    export_nntxt(project, str(out))
    back = import_nntxt(str(out)).project
    assert back.network.layer("flat").type == "Flatten" and back.network.layer("flat").position == (40.0, 520.0)
    assert back.optimizer.schedule.type == "constant" and back.config.seed == 7
    plain = tmp_path / "p.nntxt"
    export_nntxt(project, str(plain), with_extras=False)
    flat = import_nntxt(str(plain)).project.network.layer("flat")
    assert (flat.type, flat.params["shape"]) == ("Reshape", [128])  # the same computation, spelled as nnabla has it


def test_cli_import_then_export(tmp_path, capsys):
    from nnconsole.engine.cli.main import main
    from nnconsole.engine.network.repeat_blocks import unroll

    folder = tmp_path / "proj"  # the data next to the project (nnconsole reads data inside its folder only)
    shutil.copytree(INTEROP_DATA, folder)
    sample = str(folder / os.path.basename(SAMPLE))
    out = folder / "imported.yaml"
    assert main(["import", sample, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "RepeatStart" in printed and str(out) in printed
    project = load_valid_project(str(out))  # validates, datasets included
    assert project.network.layer("Affine_2").type == "Affine"  # the block is kept in the saved project
    assert project.network.layer("RepeatStart").params == {"times": 2}
    assert main(["import", sample, "-o", str(out)]) == 2  # refuses to overwrite
    assert "exists" in capsys.readouterr().err
    assert main(["export", str(out), "--format", "nntxt", "-o", str(tmp_path / "again.nntxt")]) == 0
    again = import_nntxt(str(tmp_path / "again.nntxt")).project
    same_network(project.network, again.network)  # the repeat block comes back as a block (repeat_info)
    same_network(unroll(project.network), unroll(again.network))
    assert main(["export", str(out), "--format", "onnx"]) == 2
    save_project(project, str(tmp_path / "copy.yaml"))


def every_layer_type_project() -> Project:
    """The nnabla-test network plus Embed and every loss type: all registry types at least once."""
    from nnconsole.engine.layers import all_specs
    from nnconsole.engine.project.model import Datasets
    from tests.support.networks import single_layer_network
    from tests.support.networks import coverage_layers

    L = Layer
    layers = coverage_layers() + [
        L("ids", "Input", params={"shape": [3], "variable": "ids"}),
        L("emb", "Embed", ["ids"], {"n_inputs": 10, "n_features": 4}),
        L("embf", "Flatten", ["emb"]),
        L("fc3", "Affine", ["embf"], {"out_shape": [2]}, lr_multipliers={"b": 0.0}),
        L("t2", "Input", params={"shape": [2], "variable": "t2"}),
        L("l_sq", "SquaredError", ["fc3", "t2"]),
        L("l_abs", "AbsoluteError", ["fc3", "t2"]),
        L("l_hub", "HuberLoss", ["fc3", "t2"], {"delta": 0.5}),
        L("l_sig", "SigmoidCrossEntropy", ["fc3", "t2"]),
        L("sig3", "Sigmoid", ["fc3"]),
        L("l_bin", "BinaryCrossEntropy", ["sig3", "t2"]),
        L("smx", "Softmax", ["fc2"], {"axis": 0}),
        L("l_cat", "CategoricalCrossEntropy", ["smx", "y"], {"axis": 0}),
    ]
    listed = {l.type for l in layers}
    for spec in all_specs():  # types added since: one chain each, built from the registration's examples
        if spec.type not in listed and not spec.loop_control:  # blocks: tests/engine/network/test_repeat_blocks.py
            for k, (params, shapes) in enumerate(spec.example_cases()):
                layers += single_layer_network(spec.type, params, shapes, prefix=f"{spec.type.lower()}{k}_")
    project = Project(name="all", network=Network(layers), datasets=Datasets(training="a.csv", validation="b.csv"))
    assert {l.type for l in layers} == {s.type for s in all_specs() if not s.loop_control}
    return project


@pytest.mark.slow
@pytest.mark.parametrize("extras", [True, False])
def test_every_layer_type_round_trips(tmp_path, extras):
    from nnconsole.engine.network.shapes import infer_network

    project = every_layer_type_project()
    assert infer_network(project.network).ok
    out = tmp_path / "all.nntxt"
    result = export_nntxt(project, str(out), with_extras=extras)
    assert any("iter_per_epoch" in u for u in result.unsupported)  # a.csv does not exist: said, not hidden
    back = import_nntxt(str(out)).project
    expected = project.copy()
    if not extras:  # nnabla has no Flatten: it comes back as the equivalent Reshape (Broadcast: a Tile)
        info = infer_network(project.network)
        for layer in expected.network.layers:
            if layer.type == "Flatten":
                layer.type = "Reshape"
                layer.params = {"shape": [int(np.prod(info.layers[layer.name].out_shape))]}
            elif layer.type == "Broadcast":
                li = info.layers[layer.name]
                layer.type, layer.params = "Tile", {"reps": [o // i for o, i in zip(li.out_shape, li.in_shapes[0])]}
    same_network(expected.network, back.network)


NESTED_NNTXT = '''
network {
  name: "Main"
  batch_size: 2
  repeat_info { id: "RepeatStart_2" times: 2 }
  repeat_info { id: "RepeatStart" times: 3 }
  variable { name: "Input" type: "Buffer" shape { dim: -1 dim: 1 dim: 6 dim: 6 } }
  variable { name: "Convolution/conv/W" type: "Parameter" shape { dim: 2 dim: 1 dim: 3 dim: 3 } }
  variable { name: "Convolution_2{RepeatStart_2}{RepeatStart}/conv/W" type: "Parameter"
             repeat_id: "RepeatStart_2" repeat_id: "RepeatStart" shape { dim: 2 dim: 2 dim: 3 dim: 3 } }
  variable { name: "Convolution" type: "Buffer" shape { dim: -1 dim: 2 dim: 4 dim: 4 } }
  variable { name: "RepeatStart_2" type: "Buffer" repeat_id: "RepeatStart_2" shape { dim: -1 dim: 2 dim: 4 dim: 4 } }
  variable { name: "RepeatStart" type: "Buffer" repeat_id: "RepeatStart_2" repeat_id: "RepeatStart"
             shape { dim: -1 dim: 2 dim: 4 dim: 4 } }
  variable { name: "Convolution_2" type: "Buffer" repeat_id: "RepeatStart_2" repeat_id: "RepeatStart"
             shape { dim: -1 dim: 2 dim: 4 dim: 4 } }
  variable { name: "Tanh_2" type: "Buffer" repeat_id: "RepeatStart_2" repeat_id: "RepeatStart"
             shape { dim: -1 dim: 2 dim: 4 dim: 4 } }
  variable { name: "RepeatEnd" type: "Buffer" repeat_id: "RepeatStart_2" shape { dim: -1 dim: 2 dim: 4 dim: 4 } }
  variable { name: "RepeatEnd_2" type: "Buffer" shape { dim: -1 dim: 2 dim: 4 dim: 4 } }
  variable { name: "Sigmoid" type: "Buffer" shape { dim: -1 dim: 2 dim: 4 dim: 4 } }
  function { name: "Convolution" type: "Convolution" input: "Input" input: "Convolution/conv/W"
             output: "Convolution" convolution_param { base_axis: 1 group: 1 } }
  function { name: "RepeatStart_2" type: "RepeatStart" repeat_id: "RepeatStart_2" input: "Convolution"
             input: "RepeatEnd" output: "RepeatStart_2" repeat_param { repeat_id: "RepeatStart_2" } }
  function { name: "RepeatStart" type: "RepeatStart" repeat_id: "RepeatStart_2" repeat_id: "RepeatStart"
             input: "RepeatStart_2" input: "Tanh_2" output: "RepeatStart" repeat_param { repeat_id: "RepeatStart" } }
  function { name: "Convolution_2" type: "Convolution" repeat_id: "RepeatStart_2" repeat_id: "RepeatStart"
             input: "RepeatStart" input: "Convolution_2{RepeatStart_2}{RepeatStart}/conv/W" output: "Convolution_2"
             convolution_param { pad { dim: 1 dim: 1 } base_axis: 1 group: 1 } }
  function { name: "Tanh_2" type: "Tanh" repeat_id: "RepeatStart_2" repeat_id: "RepeatStart"
             input: "Convolution_2" output: "Tanh_2" }
  function { name: "RepeatEnd" type: "RepeatEnd" repeat_id: "RepeatStart_2" input: "Tanh_2" output: "RepeatEnd"
             repeat_param { repeat_id: "RepeatStart" times: 3 } }
  function { name: "RepeatEnd_2" type: "RepeatEnd" input: "RepeatEnd" output: "RepeatEnd_2"
             repeat_param { repeat_id: "RepeatStart_2" times: 2 } }
  function { name: "Sigmoid" type: "Sigmoid" input: "RepeatEnd_2" output: "Sigmoid" }
}
executor { name: "Executor" network_name: "Main" data_variable { variable_name: "Input" data_name: "x" }
           output_variable { variable_name: "Sigmoid" data_name: "y'" } }
'''


def test_nested_repeats_expand_like_nnablas_own_expander(tmp_path):
    import contextlib
    import io

    from google.protobuf import text_format
    from nnabla.utils import nnabla_pb2
    from nnabla.utils.converter.nnabla.expander import NnpExpander

    from nnconsole.engine.interop.netgraph import parameter_renames
    from nnconsole.engine.interop.nntxt.importer import proto_to_project
    from nnconsole.engine.network.repeat_blocks import unroll

    proto = nnabla_pb2.NNablaProtoBuf()
    text_format.Merge(NESTED_NNTXT, proto)
    with contextlib.redirect_stdout(io.StringIO()):
        expanded = NnpExpander(proto).execute().network[0]
    # nnabla's chain of Convolution_2 copies, as (input producer order, weight name)
    theirs = [f.input[1] for f in expanded.function if f.type == "Convolution" and f.input[1] != "Convolution/conv/W"]
    assert len(theirs) == 6

    notes, unsupported = [], []
    project, nodes = proto_to_project(proto, str(tmp_path), "nested", unsupported, notes, "nested.nntxt")
    kept = {l.name: l for l in project.network.layers}
    assert kept["RepeatStart_2"].params == {"times": 2} and kept["RepeatStart"].params == {"times": 3}
    assert kept["RepeatStart"].inputs == ["RepeatStart_2"] and kept["Convolution_2"].inputs == ["RepeatStart"]
    unrolled = unroll(project.network)
    convs = [l for l in unrolled.layers if l.name.startswith("Convolution_2")]
    assert [l.name for l in convs] == ["Convolution_2[0][0]", "Convolution_2[0][1]", "Convolution_2[0][2]",
                                       "Convolution_2[1][0]", "Convolution_2[1][1]", "Convolution_2[1][2]"]
    renames, shared = parameter_renames(nodes)
    ours = [next(src for src, targets in renames.items() if f"{l.name}/conv/W" in targets) for l in convs]
    assert ours == theirs  # same copies, same order, same parameter names ('Convolution_2[i][j]/conv/W')
    assert [f"{l.name}/conv/W" for l in convs] == theirs  # the engine's own names are nnabla's
    chain = {l.name: l.inputs for l in unrolled.layers}
    assert chain["Convolution_2[0][0]"] == ["Convolution"] and chain["Convolution_2[1][0]"] == ["Tanh_2[0][2]"]
    assert chain["Sigmoid"] == ["Tanh_2[1][2]"] and shared == [] and unsupported == []
    assert sum("repeat block" in n for n in notes) == 2


def test_imported_nnp_weights_are_the_starting_point_of_training(tmp_path):
    import nnabla as nn

    from nnconsole.engine.cli.main import main
    from nnconsole.engine.comm.cpu import SingleComm
    from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
    from nnconsole.engine.train.trainer import Trainer
    from nnconsole.engine.rundir.launch_options import WorkerOptions

    nnp, values = _sample_nnp(tmp_path, np.random.RandomState(5))
    for name in ("tiny_train.csv", "tiny_valid.csv"):
        shutil.copy(os.path.join(INTEROP_DATA, name), tmp_path)
    out = tmp_path / "imported.yaml"
    assert main(["import", str(nnp), "-o", str(out)]) == 0
    project = load_valid_project(str(out), check_datasets=False)
    assert project.config.initial_parameters == "imported_initial.h5"
    run_dir = prepare_run(project, LaunchRequest(output=str(tmp_path / "runs")), workers=1)
    trainer = Trainer(run_dir, SingleComm(), WorkerOptions())
    try:
        trainer.setup()
        assert np.array_equal(trainer.params["Affine_3/affine/W"].d, values["Affine_3/affine/W"])
        assert np.array_equal(trainer.params["Affine_2[0]/affine/b"].d, values["Affine_2[0]/affine/b"])
    finally:
        trainer.close()
        nn.clear_parameters()
