"""A loss placed directly on a per-sample scalar (BatchDet, BatchLogdet) in an NNC project: the import reads
the scalar through a Reshape to [1] so the loss's target Input has shape [1] (an Input of shape [] is not a
valid project layer), `info` accepts the project, and the network trains a step in nnabla."""
from __future__ import annotations

import numpy as np
import pytest

from nnconsole.engine.project.io import load_project
from tests.support.cli import nnconsole
from tests.support.nnc_files import sdcproj_text


def _write(tmp_path, det_type: str, loss_type: str, n_losses: int = 1) -> str:
    layers = [("x", "Input", {"Size": "3,3", "Dataset": "x"}, []), ("d", det_type, {}, ["x"])]
    layers += [(f"loss{i}", loss_type, {"T.Dataset": "y"}, ["d"]) for i in range(n_losses)]
    path = tmp_path / "scalar.sdcproj"
    path.write_text(sdcproj_text(layers), newline="")
    return str(path)


@pytest.mark.parametrize("det_type,loss_type", [("BatchDet", "SquaredError"), ("BatchLogdet", "AbsoluteError")])
def test_cli_import_then_info_accepts_a_loss_on_a_per_sample_scalar(tmp_path, det_type, loss_type):
    source = _write(tmp_path, det_type, loss_type)
    project_path = str(tmp_path / "scalar.yaml")
    out = nnconsole(["import", source, "-o", project_path], check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Reshape 'd_as_1' to [1]" in out.stdout
    info = nnconsole(["info", project_path], check=False)
    assert info.returncode == 0, info.stdout + info.stderr  # was: layer 'y': shape must be ... got []
    assert "d_as_1" in info.stdout
    net = load_project(project_path).network
    assert net.layer("y").params["shape"] == [1]
    assert net.layer("loss0").inputs == ["d_as_1", "y"]
    assert net.layer("d_as_1").type == "Reshape" and net.layer("d_as_1").inputs == ["d"]


def test_losses_sharing_one_scalar_share_one_reshape_and_the_network_trains_a_step(tmp_path):
    import nnabla as nn
    import nnabla.solvers as S

    from nnconsole.engine.runtime.graph import build_graph
    from nnconsole.engine.interop.files import import_file

    result = import_file(_write(tmp_path, "BatchDet", "SquaredError", n_losses=2))
    net = result.project.network
    assert [layer.name for layer in net.layers if layer.type == "Reshape"] == ["d_as_1"]
    assert net.layer("loss0").inputs == net.layer("loss1").inputs == ["d_as_1", "y"]
    nn.clear_parameters()
    graph = build_graph(net, 4, "train")
    rng = np.random.RandomState(0)
    graph.inputs["x"].d = rng.randn(4, 3, 3)
    graph.inputs["y"].d = rng.randn(4, 1)
    graph.loss.forward()
    want = 2 * np.mean((np.linalg.det(graph.inputs["x"].d) - graph.inputs["y"].d[:, 0]) ** 2)
    assert np.isclose(float(graph.loss.d), want, rtol=1e-4)  # per-sample pairs, not a (4, 4) broadcast
    solver = S.Sgd(0.0)
    solver.set_parameters(nn.get_parameters())
    graph.loss.backward()
