"""Repeat blocks (issue 17): RepeatStart/RepeatEnd paired through the graph as NNC pairs them, kept as blocks
in the project, unrolled by the engine with nnabla's per-repetition parameter names."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nnconsole.engine.project.model import Layer, Network
from nnconsole.engine.network.repeat_blocks import block_totals, find_blocks, unroll
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.networks import resnet_like
from tests.support.projects import blocks_project

L = Layer
NNABLA_CLI = os.path.join(os.path.dirname(sys.executable), "nnabla_cli")


def test_blocks_pair_through_the_graph_innermost_first():
    blocks, problems = find_blocks(resnet_like().layers)
    assert problems == []
    got = {b.start: (b.end, b.times, b.body, b.parent) for b in blocks}
    assert got == {"res": ("res end", 2, ["c1", "r1", "add"], ""),
                   "outer": ("outer end", 2, ["inner", "c2", "inner end", "t"], ""),
                   "inner": ("inner end", 3, ["c2"], "outer")}
    assert [b.start for b in blocks][-1] == "inner"  # outermost first


def test_inference_checks_one_repetition_and_counts_every_repetition():
    info = infer_network(resnet_like())
    assert info.ok, info.error_text()
    conv = 4 * 4 * 9 + 4
    assert info.layers["c1"].n_params == 2 * conv and info.layers["c2"].n_params == 6 * conv
    assert info.layers["outer end"].out_shape == (4, 4, 4)
    assert info.total_params == (2 * 9 * 4 + 4) + 8 * conv + (64 * 3 + 3)
    assert block_totals(resnet_like(), info)["outer"] == (2, 6 * conv, (4, 4, 4))


@pytest.mark.parametrize("change,layer,message", [
    (lambda n: n.layers.pop(6), "res", "never closed"),  # drop 'res end'
    (lambda n: n.layers.pop(2), "res end", "no RepeatStart before"),  # drop 'res'
    (lambda n: n.layers.__setitem__(3, L("c1", "Convolution", ["res"], {"outmaps": 8, "kernel": [3, 3],
                                                                        "pad": [1, 1]})), "add", "shape"),
    (lambda n: n.layers.__setitem__(13, L("fc", "Affine", ["r1"], {"out_shape": [3]})), "r1", "only the RepeatEnd"),
    (lambda n: n.layers[2].params.__setitem__("times", 0), "res", "times"),
])
def test_malformed_blocks_are_named_errors(change, layer, message):
    net = resnet_like()
    change(net)
    info = infer_network(net)
    assert any(message in text for _name, text in info.errors), info.errors
    assert any(name == layer for name, _ in info.errors) or message == "shape", info.errors


def test_unrolled_network_has_nnablas_parameter_names():
    from nnconsole.engine.runtime.graph import build_graph

    import nnabla as nn

    net = resnet_like()
    names = [layer.name for layer in unroll(net).layers]
    assert names[2:5] == ["c1[0]", "r1[0]", "add[0]"] and "c2[1][2]" in names and "RepeatEnd" not in names
    nn.clear_parameters()
    try:
        built = build_graph(net, 2, "train")
        assert {p for p in built.parameters if p.startswith("c2")} == {
            f"c2[{i}][{j}]/conv/{w}" for i in range(2) for j in range(3) for w in "Wb"}
        assert sum(v.size for k, v in built.parameters.items()) == infer_network(net).total_params
        assert built.network.layer("add[1]").inputs == ["add[0]", "r1[1]"]  # the next repetition reads the last
        assert build_graph(net, 2, "runtime").prediction_layer == "fc"
    finally:
        nn.clear_parameters()


SDC_LAYERS = [  # as NNC writes them: RepeatEnd's ID and Times are computed (*...), names are free
    ("Input", "Input", {"Size": "2,4,4", "Dataset": "x"}, []),
    ("Stem", "Convolution", {"OutMaps": "4", "KernelShape": "3,3", "BorderMode": "same",
              "Padding": "*ConvolutionPaddingSize"}, ["Input"]),
    ("Block A", "RepeatStart", {"Times": "2", "ID": "*Name"}, ["Stem"]),
    ("ConvA", "Convolution", {"OutMaps": "4", "KernelShape": "3,3", "BorderMode": "same",
              "Padding": "*ConvolutionPaddingSize"}, ["Block A"]),
    ("ReLUA", "ReLU", {}, ["ConvA"]),
    ("End A", "RepeatEnd", {"ID": "*RepeatStart", "Times": "*RepeatTimes"}, ["ReLUA"]),
    ("Block B", "RepeatStart", {"Times": "2", "ID": "*Name"}, ["End A"]),
    ("Block C", "RepeatStart", {"Times": "3", "ID": "*Name"}, ["Block B"]),
    ("ConvC", "Convolution", {"OutMaps": "4", "KernelShape": "3,3", "BorderMode": "same",
              "Padding": "*ConvolutionPaddingSize"}, ["Block C"]),
    ("End C", "RepeatEnd", {"ID": "*RepeatStart", "Times": "*RepeatTimes"}, ["ConvC"]),
    ("TanhB", "Tanh", {}, ["End C"]),
    ("End B", "RepeatEnd", {"ID": "*RepeatStart", "Times": "*RepeatTimes"}, ["TanhB"]),
    ("Affine", "Affine", {"OutShape": "3"}, ["End B"]),
    ("Loss", "SoftmaxCrossEntropy", {"T.Dataset": "y"}, ["Affine"]),
]


def test_sdcproj_with_two_sequential_and_one_nested_block_imports_as_blocks(tmp_path):
    """Was refused: pairing needed an ID property NNC's editor does not write."""
    from nnconsole.engine.interop.files import import_file
    from tests.support.nnc_files import sdcproj_text

    path = tmp_path / "blocks.sdcproj"
    path.write_text(sdcproj_text(SDC_LAYERS), newline="")
    result = import_file(str(path))
    assert result.unsupported == [], result.unsupported
    net = result.project.network
    assert [(layer.name, layer.params) for layer in net.layers if layer.type == "RepeatStart"] == [
        ("Block A", {"times": 2}), ("Block B", {"times": 2}), ("Block C", {"times": 3})]
    assert net.layer("End C").inputs == ["ConvC"] and net.layer("Affine").inputs == ["End B"]
    info = infer_network(net)
    assert info.ok, info.error_text()
    names = [layer.name for layer in unroll(net).layers]
    assert [n for n in names if n.startswith("ConvC")] == [f"ConvC[{i}][{j}]" for i in range(2) for j in range(3)]
    assert [n for n in names if n.startswith("ConvA")] == ["ConvA[0]", "ConvA[1]"]


def test_a_saved_project_keeps_its_blocks_and_an_expanded_one_stays_valid(tmp_path):

    path = blocks_project(tmp_path, resnet_like())
    loaded = load_valid_project(path)
    assert [layer.type for layer in loaded.network.layers].count("RepeatStart") == 3
    assert loaded.network.layer("outer").params == {"times": 2}
    expanded = blocks_project(tmp_path / "old", unroll(resnet_like()))  # what older versions saved on import
    assert infer_network(load_valid_project(expanded).network).total_params == infer_network(loaded.network).total_params


@pytest.mark.slow
def test_exported_nntxt_of_a_project_with_blocks_trains_under_nnabla_cli(tmp_path):
    from nnconsole.engine.interop.files import export_nntxt

    net = resnet_like()
    net.layers[0].params["shape"] = [32]  # nnabla_cli reads numeric CSV columns as a vector
    net.layers[1] = L("stem", "Affine", ["x"], {"out_shape": [4, 4, 4]})
    project = load_valid_project(blocks_project(tmp_path, net))
    out = tmp_path / "blocks.nntxt"
    result = export_nntxt(project, str(out))
    assert not any("written unrolled" in n for n in result.notes)
    text = out.read_text()  # nnabla's repeat form (engine/interop/nntxt/repeat.py), as NNC writes blocks
    assert 'name: "c2{outer}{inner}/conv/W"' in text and 'name: "c1{res}/conv/W"' in text and "[1]" not in text
    assert text.count("repeat_info {") == 9  # three blocks in Main, MainValidation and MainRuntime
    (tmp_path / "train").mkdir()
    proc = subprocess.run([NNABLA_CLI, "train", "-c", str(out), "-o", str(tmp_path / "train")],
                          capture_output=True, text=True, timeout=240)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Training Completed" in log, log[-3000:]
    # nnabla expands the blocks into the weights the engine's unrolling names (one set per repetition)
    import nnabla as nn

    nn.clear_parameters()
    nn.load_parameters(str(tmp_path / "train" / "results.nnp"))
    trained = {name: tuple(v.shape) for name, v in nn.get_parameters(grad_only=False).items()}
    nn.clear_parameters()
    from nnconsole.engine.runtime.graph import build_graph

    engine = {name: tuple(v.shape) for name, v in build_graph(project.network, 2, "train").parameters.items()}
    nn.clear_parameters()
    assert "c2[1][2]/conv/W" in engine and "c1[1]/conv/W" in engine and trained == engine
    # and the file imports back as blocks, not unrolled
    from nnconsole.engine.interop.files import import_file

    back = import_file(str(out)).project.network
    assert [layer.name for layer in back.layers] == [layer.name for layer in project.network.layers]
    assert back.layer("outer").params == {"times": 2} and back.layer("inner").params == {"times": 3}


def _blocks_mlp(path: str) -> str:
    """The tabular project (tests/support/projects.py) with a ResNet-like network: a residual block x2, then a block x2
    holding a nested block x2 (Affine layers, so the numeric CSV feeds it)."""
    from nnconsole.engine.project.io import save_project
    from nnconsole.engine.project.model import Initializer

    glorot = {"W": Initializer("NormalAffineGlorot"), "b": Initializer("Constant", value=0.0)}

    def fc(name, src, out=8):
        return L(name, "Affine", [src], {"out_shape": [out]}, initializers=dict(glorot))

    project = load_valid_project(path, check_datasets=False)
    project.network = Network([
        L("x", "Input", params={"shape": [4]}), fc("fc0", "x"),
        L("A", "RepeatStart", ["fc0"], {"times": 2}), fc("fa", "A"), L("ta", "Tanh", ["fa"]),
        L("sum", "Add2", ["A", "ta"]), L("A end", "RepeatEnd", ["sum"]),
        L("B", "RepeatStart", ["A end"], {"times": 2}), L("C", "RepeatStart", ["B"], {"times": 2}),
        fc("fc", "C"), L("tc", "Tanh", ["fc"]), L("C end", "RepeatEnd", ["tc"]), L("B end", "RepeatEnd", ["C end"]),
        fc("out", "B end", 3), L("y", "Input", params={"shape": [1]}), L("loss", "SoftmaxCrossEntropy", ["out", "y"])])
    save_project(project, path, backup=False)
    return path


@pytest.mark.mpi
def test_a_project_with_repeat_blocks_trains_the_same_under_one_and_two_workers(tmp_path):
    from tests.support.cli import nnconsole, run_dir_from
    from tests.support.projects import tabular_project
    from tests.support.training import final_params, max_relative_error, train_file_in_process

    one = _blocks_mlp(tabular_project(str(tmp_path / "one"), n=64, batch=16, epochs=1, lr=0.2, scaling="none"))
    two = _blocks_mlp(tabular_project(str(tmp_path / "two"), n=64, batch=8, epochs=1, lr=0.2, scaling="none",
                                      workers=2))
    reference = final_params(train_file_in_process(one))  # one worker: the worker's Trainer, in this process
    assert {k for k in reference if k.startswith("fc[")} == {
        f"fc[{i}][{j}]/affine/{w}" for i in range(2) for j in range(2) for w in "Wb"}
    assert len([k for k in reference if k.startswith("fa[")]) == 4
    two_run = final_params(run_dir_from(nnconsole(["train", two, "-q"]).stdout))
    # the keep-logical-batch tolerance of tests/system/test_multiworker.py
    assert max_relative_error(reference, two_run) <= 1e-5


def test_parameters_of_a_project_with_blocks_are_accepted_as_its_initial_parameters(tmp_path):
    """Was refused: the check compared the file's 'c1[0]/W' with the folded network's 'c1/W'."""
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph
    from nnconsole.engine.check.validate import check_initial_parameters

    project = load_valid_project(blocks_project(tmp_path, resnet_like()))
    nn.clear_parameters()
    try:
        built = build_graph(project.network, 2, "train")
        nn.save_parameters(str(tmp_path / "init.h5"), params=built.parameters, extension=".h5")
    finally:
        nn.clear_parameters()
    project.config.initial_parameters = "init.h5"
    assert check_initial_parameters(project) == []
    project.network.layer("inner").params["times"] = 4  # now the file lacks c2[i][3]: allowed (initializers)
    assert check_initial_parameters(project) == []
    project.network.layer("res").params["times"] = 1  # the file's c1[1] has no layer any more
    assert "c1[1]/W" in check_initial_parameters(project)[0].message


def test_a_cycle_through_a_repeat_end_or_a_clashing_name_is_an_error_not_a_hang():
    """Was an endless walk: each pass round a cycle through a RepeatEnd opened one more level."""
    import threading

    cyclic = Network([L("x", "Input", params={"shape": [3]}), L("a", "ReLU", ["e"]), L("e", "RepeatEnd", ["a"]),
                      L("s", "RepeatStart", ["x"])])
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("info", infer_network(cyclic)), daemon=True)
    worker.start()
    worker.join(20)
    assert "info" in result, "infer_network did not return"
    errors = dict(result["info"].errors)
    assert "cycle" in errors["a"] and "no RepeatStart before" in errors["e"] and "never closed" in errors["s"]
    assert unroll(cyclic) is cyclic  # left for inference to report, never half unrolled

    clash = resnet_like()
    clash.layers.insert(14, L("c1[1]", "ReLU", ["outer end"]))
    assert "taken by a repetition of 'c1'" in dict(infer_network(clash).errors)["c1[1]"]
    broken = resnet_like()
    broken.layers[2].params = [1, 2]  # malformed file content: the default count, and a parameter error
    assert not infer_network(broken).ok
