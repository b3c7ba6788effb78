"""Parameter counts of the binary-weight layers (issue 26, item 7) against nnabla's own loader.

BinaryConnect/BinaryWeight Affine and Convolution keep, besides the learned W and b, the binarised copy Wb (and
the per-output scale alpha for BinaryWeight) that nnabla recomputes from W on every forward pass; BatchNormalization
keeps its running mean and variance. ``nnconsole info`` shows what training learns ("parameters") and, when they
differ, every value the network's file holds ("stored"): the count nnabla's loader gives for the exported .nntxt.
A trained run's .nnp holds all of them, so nnabla runs it with our outputs.
"""
from __future__ import annotations

import os

import numpy as np

from nnconsole.engine.cli.main import main
from nnconsole.engine.interop.files import export_nntxt, export_run
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Datasets, Layer as L, Network, Project, TrainingConfig

BINARY_LAYERS = [
    L("x", "Input", params={"shape": [1, 8, 8]}),
    L("bc", "BinaryConnectConvolution", ["x"], {"outmaps": 4, "kernel": [3, 3], "pad": [1, 1]}),
    L("bw", "BinaryWeightConvolution", ["bc"], {"outmaps": 4, "kernel": [3, 3], "pad": [1, 1]}),
    L("bn", "BatchNormalization", ["bw"]),
    L("ba", "BinaryConnectAffine", ["bn"], {"out_shape": [6]}),
    L("bwa", "BinaryWeightAffine", ["ba"], {"out_shape": [3], "with_bias": False}),
    L("y", "Input", params={"shape": [1]}),
    L("loss", "SoftmaxCrossEntropy", ["bwa", "y"]),
]
NOT_LEARNED = ("Wb", "alpha", "mean", "var")


def _project(folder) -> Project:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "data.csv"), "w") as fh:
        fh.write("x,y\n")
    project = Project(name="binary", network=Network([L(l.name, l.type, list(l.inputs), dict(l.params))
                                                      for l in BINARY_LAYERS]),
                      datasets=Datasets(training="data.csv", validation="data.csv"),
                      config=TrainingConfig(batch_size=2, max_epoch=1))
    save_project(project, os.path.join(folder, "project.yaml"), backup=False)
    return project


def _nnabla_parameters(nntxt: str) -> dict:
    """Parameter name -> element count, as nnabla's loader creates them from the file."""
    import nnabla as nn
    from nnabla.utils import load

    nn.clear_parameters()
    load.load([nntxt])
    found = {name: int(np.prod(v.shape)) for name, v in nn.get_parameters(grad_only=False).items()}
    nn.clear_parameters()
    return found


def _rows(text: str) -> dict:
    return {line.split()[0]: line.split() for line in text.splitlines() if line.strip() and not line.startswith("-")}


def _number(cell: str) -> int:
    return int(cell.replace(",", ""))


def test_info_counts_learned_and_stored_parameters_as_nnabla_reads_them(tmp_path, capsys):
    project = _project(tmp_path)
    nntxt = str(tmp_path / "binary.nntxt")
    export_nntxt(project, nntxt)
    by_nnabla = _nnabla_parameters(nntxt)
    assert any(name.endswith("/Wb") for name in by_nnabla) and any(name.endswith("/alpha") for name in by_nnabla)

    assert main(["info", str(tmp_path / "project.yaml")]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["layer"][4:7] == ["parameters", "stored", "multiply-adds"]  # "output shape" is two words
    learned = sum(n for name, n in by_nnabla.items() if name.rsplit("/", 1)[1] not in NOT_LEARNED)
    assert _number(rows["total"][1]) == learned  # what training updates
    assert _number(rows["total"][2]) == sum(by_nnabla.values())  # every value of the file, as nnabla counts
    for layer in ("bc", "bw", "bn", "ba", "bwa"):  # and per layer: the parameters under its scope
        stored = sum(n for name, n in by_nnabla.items() if name.split("/", 1)[0] == layer)
        assert _number(rows[layer][4]) == stored, layer


def _counted_by_both(tmp_path, layers) -> tuple:
    """(learned, stored) of shape inference and the same two counts of nnabla's loader on the exported .nntxt."""
    from nnconsole.engine.network.shapes import infer_network

    project = _project(tmp_path)
    project.network = Network(layers)
    info = infer_network(project.network)
    assert info.ok, info.error_text()
    nntxt = str(tmp_path / "net.nntxt")
    export_nntxt(project, nntxt)
    by_nnabla = _nnabla_parameters(nntxt)
    learned = sum(n for name, n in by_nnabla.items() if name.rsplit("/", 1)[1] not in NOT_LEARNED)
    return (info.total_params, info.total_stored), (learned, sum(by_nnabla.values()))


def test_stored_counts_of_shared_scopes_and_repeat_blocks_match_nnabla(tmp_path):
    shared = [L("x", "Input", params={"shape": [6]}),
              L("a1", "BinaryWeightAffine", ["x"], {"out_shape": [6]}, parameter_scope="twin"),
              L("a2", "BinaryWeightAffine", ["a1"], {"out_shape": [6]}, parameter_scope="twin"),  # one set of 4
              L("out", "BinaryConnectAffine", ["a2"], {"out_shape": [3]}),
              L("y", "Input", params={"shape": [1]}), L("loss", "SoftmaxCrossEntropy", ["out", "y"])]
    ours, nnabla = _counted_by_both(tmp_path / "shared", shared)
    assert ours == nnabla and ours[1] > ours[0]
    repeated = [L("x", "Input", params={"shape": [6]}), L("rep", "RepeatStart", ["x"], {"times": 3}),
                L("b", "BinaryConnectAffine", ["rep"], {"out_shape": [6]}), L("n", "BatchNormalization", ["b"]),
                L("rep end", "RepeatEnd", ["n"]), L("out", "Affine", ["rep end"], {"out_shape": [3]}),
                L("y", "Input", params={"shape": [1]}), L("loss", "SoftmaxCrossEntropy", ["out", "y"])]
    ours, nnabla = _counted_by_both(tmp_path / "repeat", repeated)
    assert ours == nnabla and ours[1] > ours[0]


def test_a_runs_nnp_of_binary_layers_runs_under_nnabla_with_our_outputs(tmp_path):
    import nnabla as nn
    from nnabla.utils.nnp_graph import NnpLoader

    from nnconsole.engine.runtime.graph import build_graph
    from nnconsole.engine.runtime.nnp import build_runtime

    project = _project(tmp_path / "run")
    nn.clear_parameters()
    rng = np.random.RandomState(0)
    build_graph(project.network, 2, "train")
    for name, v in nn.get_parameters(grad_only=False).items():  # trained-looking weights, positive variances
        v.d = rng.uniform(0.5, 1.5, v.shape) if name.endswith("/var") else rng.randn(*v.shape) * 0.5
    nn.save_parameters(str(tmp_path / "run" / "parameters_final.h5"))
    x = rng.randn(5, 1, 8, 8).astype(np.float32)
    runtime = build_runtime(project, batch_size=5)
    runtime.inputs["x"].d = x
    runtime.output.forward(clear_buffer=True)
    ours = runtime.output.d.copy()
    nn.clear_parameters()

    nnp = export_run(str(tmp_path / "run"), "nnp").path
    net = NnpLoader(nnp).get_network("runtime", batch_size=5)
    stored = nn.get_parameters(grad_only=False)
    assert {name.rsplit("/", 1)[1] for name in stored} >= {"W", "Wb", "alpha", "b", "mean", "var"}
    net.inputs["x"].d = x
    out = list(net.outputs.values())[0]
    out.forward()
    nn.clear_parameters()
    assert np.abs(out.d - ours).max() <= 1e-6
