"""Several networks and optimizers through .nntxt (issue 17): export writes every network and optimizer
(nnabla_cli trains them), import keeps them all with one set of weights per scope across networks."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nnconsole.engine.interop import export_nntxt, import_file
from nnconsole.engine.project.io import load_project
from nnconsole.engine.shapes import infer_network
from tests.test_several_optimizers import gan_project

NNABLA_CLI = os.path.join(os.path.dirname(sys.executable), "nnabla_cli")


def _weights(network) -> set:
    """The parameter names a network's layers use."""
    from nnconsole.engine.shared_params import parameter_name

    info = infer_network(network)
    return {parameter_name(layer, key) for layer in network.layers if layer.name in info.layers
            for key in info.layers[layer.name].weight_shapes}


def test_export_writes_every_optimizer_and_import_keeps_them(tmp_path):
    project = load_project(gan_project(str(tmp_path)))
    project.optimizers[0].start_iteration, project.optimizers[0].end_iteration = 3, 40
    project.optimizers[0].optimizer.update_interval = 2
    out = str(tmp_path / "gan.nntxt")
    export_nntxt(project, out)
    text = open(out).read()
    assert text.count("optimizer {") == 2 and 'network_name: "Generator"' in text and "start_iter: 3" in text
    result = import_file(out)
    assert not [u for u in result.unsupported if "optimizer" in u or "shared" in u], result.unsupported
    back = result.project
    assert list(back.networks) == ["Generator"]
    (entry,) = back.optimizers
    assert (entry.name, entry.network, entry.dataset, entry.start_iteration, entry.end_iteration) == (
        "Optimizer_G", "Generator", "training", 3, 40)
    assert entry.optimizer.update_interval == 2 and entry.optimizer.solver == "Adam"
    assert entry.optimizer.learning_rate == pytest.approx(0.01)
    # one set of weights per scope across both networks, as in the project exported
    assert _weights(back.network) | _weights(back.networks["Generator"]) == {
        "disc/affine/W", "disc/affine/b", "generator/affine/W", "generator/affine/b"}
    assert back.networks["Generator"].layer("d_fake").lr_multipliers == {"W": 0.0, "b": 0.0}


@pytest.mark.slow
def test_exported_gan_trains_under_nnabla_cli(tmp_path):
    project = load_project(gan_project(str(tmp_path)))
    out = str(tmp_path / "gan.nntxt")
    export_nntxt(project, out)
    outdir = tmp_path / "train"
    outdir.mkdir()
    proc = subprocess.run([NNABLA_CLI, "train", "-c", out, "-o", str(outdir)], capture_output=True, text=True,
                          timeout=120)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Training Completed" in log, log[-3000:]
