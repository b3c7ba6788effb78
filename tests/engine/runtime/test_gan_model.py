"""A GAN-style project (issue 17): a generator fed by z and a discriminator applied to real and generated
data, one parameter scope each. It validates, trains and writes its model: the runtime network keeps
every head (the discriminator on real data and on generated data), so z is an input the saved network
uses (it was 'z is not found in networks!' when only the first loss's prediction was saved)."""
from __future__ import annotations

import os

import numpy as np

from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Datasets, Layer, Network, Project, TrainingConfig
from tests.support.training import train_in_process
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.projects import write_gan_data


def gan_layers() -> list:
    """z -> generator -> discriminator (scope 'disc') <- x; real labelled 1, generated 0."""
    return [
        Layer("x", "Input", params={"shape": [4]}), Layer("z", "Input", params={"shape": [2]}),
        Layer("gen", "Affine", ["z"], {"out_shape": [4]}, parameter_scope="generator"),
        Layer("d_real", "Affine", ["x"], {"out_shape": [1]}, parameter_scope="disc"),
        Layer("d_fake", "Affine", ["gen"], {"out_shape": [1]}, parameter_scope="disc"),
        Layer("one", "Constant", params={"value": "1"}), Layer("zero", "Constant", params={"value": "0"}),
        Layer("loss_real", "SigmoidCrossEntropy", ["d_real", "one"]),
        Layer("loss_fake", "SigmoidCrossEntropy", ["d_fake", "zero"]),
    ]


def gan_project(folder: str) -> str:
    os.makedirs(folder, exist_ok=True)
    write_gan_data(folder)
    project = Project(name="gan", network=Network(gan_layers()),
                      datasets=Datasets(training="train.csv", validation="train.csv"),
                      config=TrainingConfig(max_epoch=2, batch_size=8, device="cpu", seed=1))
    return save_project(project, os.path.join(folder, "project.yaml"), backup=False)


def test_gan_project_validates_trains_and_writes_a_model_that_uses_z(tmp_path):
    import nnabla as nn
    from nnabla.utils.nnp_graph import NnpLoader

    project = load_valid_project(gan_project(str(tmp_path / "gan")))  # validate passes
    run_dir, losses = train_in_process(project, str(tmp_path / "results"))
    assert losses and all(np.isfinite(losses))
    nnp = os.path.join(run_dir, "model_final.nnp")
    assert os.path.isfile(nnp)
    loader = NnpLoader(nnp)
    graph = loader.get_network("runtime", batch_size=3)
    assert sorted(graph.inputs) == ["x", "z"]
    assert sorted(graph.outputs) == ["d_fake", "y'"]
    rng = np.random.RandomState(2)
    graph.inputs["x"].d = rng.randn(3, 4)
    graph.inputs["z"].d = rng.randn(3, 2)
    outputs = list(graph.outputs.values())
    nn.forward_all(outputs)
    for out in outputs:  # the SigmoidCrossEntropy head: probabilities
        assert out.d.shape == (3, 1) and np.all((out.d > 0) & (out.d < 1))
    nn.clear_parameters()
