"""Small projects written to a temp folder (with their generated CSV data) for the tests that load, check,
train or import them: the tabular MLP most tests train, its BatchNormalization and Unit variants, a GAN of
two networks and two optimizers, the gan_2d and digits_cnn templates cut down, a repeat-block project, and the tiny
classifier model the plan tests scale (not saved)."""
from __future__ import annotations

import os
import shutil
from typing import Optional

import numpy as np
import yaml

from nnconsole import templates as project_templates
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.project import model
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.templates import create_from_template
from nnconsole.engine.project.model import (Datasets, ExtraOptimizer, Initializer, Layer, Network, Optimizer,
                                            Project, TrainingConfig)

L = Layer


# -- the tabular MLP and its variants -------------------------------------------------------------------------
def write_tabular_csv(path: str, n: int = 64, features: int = 4, classes: int = 3, seed: int = 0) -> None:
    """A separable-ish classification set in NNC's numeric-column format."""
    rng = np.random.RandomState(seed)
    centers = rng.randn(classes, features) * 2
    labels = rng.randint(0, classes, size=n)
    x = centers[labels] + rng.randn(n, features) * 0.5
    header = ",".join([f"x__{i}" for i in range(features)] + ["y"])
    rows = [",".join([f"{v:.6f}" for v in x[i]] + [str(labels[i])]) for i in range(n)]
    with open(path, "w") as fh:
        fh.write(header + "\n" + "\n".join(rows) + "\n")


def tabular_project(folder: str, n: int = 64, batch: int = 8, epochs: int = 3, solver: str = "Sgd",
                    lr: float = 0.1, workers: int = 1, scaling: str = "linear", shuffle: bool = True,
                    hidden: int = 8, name: str = "project.yaml", monitor: int = 2) -> str:
    """An MLP classifier (no dropout, no batch-norm) on a generated CSV; returns the project path."""
    os.makedirs(folder, exist_ok=True)
    write_tabular_csv(os.path.join(folder, "train.csv"), n=n)
    write_tabular_csv(os.path.join(folder, "valid.csv"), n=max(n // 2, 8), seed=1)
    glorot = {"W": Initializer("NormalAffineGlorot"), "b": Initializer("Constant", value=0.0)}
    layers = [
        Layer("x", "Input", params={"shape": [4]}),
        Layer("fc1", "Affine", ["x"], {"out_shape": hidden}, initializers=dict(glorot)),
        Layer("act1", "Tanh", ["fc1"]),
        Layer("fc2", "Affine", ["act1"], {"out_shape": 3}, initializers=dict(glorot)),
        Layer("y", "Input", params={"shape": [1]}),
        Layer("loss", "SoftmaxCrossEntropy", ["fc2", "y"]),
    ]
    project = Project(name="tabular", network=Network(layers),
                      datasets=Datasets(training="train.csv", validation="valid.csv", shuffle=shuffle),
                      config=TrainingConfig(max_epoch=epochs, batch_size=batch, log_interval=monitor, seed=3,
                                            device="cpu"),
                      optimizer=Optimizer(solver=solver, learning_rate=lr))
    project.multi_gpu.workers = workers
    project.multi_gpu.scaling = scaling
    path = os.path.join(folder, name)
    save_project(project, path, backup=False)
    return path


def bn_project(folder: str, sync: bool = False, decay_rate: float = 0.9, **kwargs) -> str:
    """The tabular MLP with a BatchNormalization layer between fc1 and its activation."""
    path = tabular_project(folder, **kwargs)
    project = load_valid_project(path)
    layers = project.network.layers
    index = next(i for i, layer in enumerate(layers) if layer.name == "act1")
    params = {"sync_across_workers": True} if sync else {}
    params["decay_rate"] = decay_rate
    layers.insert(index, Layer("bn1", "BatchNormalization", ["fc1"], params))
    layers[index + 1].inputs = ["bn1"]
    save_project(project, path, backup=False)
    return path


def unit_project(folder) -> str:
    """The tabular MLP with its hidden layer as a Unit of a 'Hidden' network (Argument 'width')."""
    path = tabular_project(str(folder), epochs=1)
    project = load_valid_project(path, check_datasets=False)
    project.networks["Hidden"] = Network([
        L("in", "Input", params={"shape": [4]}), L("width", "Argument", params={"value": "5", "type": "PInt"}),
        L("fc", "Affine", ["in"], {"out_shape": "width"}), L("act", "Tanh", ["fc"])])
    project.network = Network([
        L("x", "Input", params={"shape": [4]}), L("hidden", "Unit", ["x"], {"network": "Hidden", "arguments": "width=8"}),
        L("fc2", "Affine", ["hidden"], {"out_shape": 3}), L("y", "Input", params={"shape": [1]}),
        L("loss", "SoftmaxCrossEntropy", ["fc2", "y"])])
    save_project(project, path, backup=False)
    return path


# -- a GAN: two networks, two optimizers, weights shared through parameter scopes ----------------------------
def write_gan_data(folder: str, n: int = 32) -> None:
    """Real samples around 2 (x) and the generator's noise (z) as CSV columns."""
    rng = np.random.RandomState(0)
    header = [f"x__{i}" for i in range(4)] + [f"z__{i}" for i in range(2)]
    rows = [",".join(f"{v:.5f}" for v in list(rng.randn(4) + 2) + list(rng.randn(2))) for _ in range(n)]
    with open(os.path.join(folder, "train.csv"), "w") as fh:
        fh.write(",".join(header) + "\n" + "\n".join(rows) + "\n")


FROZEN = {"W": 0.0, "b": 0.0}


def _gen(frozen: bool) -> Layer:
    return Layer("gen", "Affine", ["z"], {"out_shape": [4]}, parameter_scope="generator",
                 lr_multipliers=dict(FROZEN) if frozen else {})


def _disc(name: str, source: str, frozen: bool) -> Layer:
    return Layer(name, "Affine", [source], {"out_shape": [1]}, parameter_scope="disc",
                 lr_multipliers=dict(FROZEN) if frozen else {})


def discriminator_network() -> Network:
    return Network([
        Layer("x", "Input", params={"shape": [4]}), Layer("z", "Input", params={"shape": [2]}), _gen(True),
        _disc("d_real", "x", False), _disc("d_fake", "gen", False),
        Layer("one", "Constant", params={"value": "1", "value_type": "Float"}), Layer("zero", "Constant", params={"value": "0", "value_type": "Float"}),
        Layer("loss_real", "SigmoidCrossEntropy", ["d_real", "one"]),
        Layer("loss_fake", "SigmoidCrossEntropy", ["d_fake", "zero"])])


def generator_network() -> Network:
    return Network([
        Layer("z", "Input", params={"shape": [2]}), _gen(False), _disc("d_fake", "gen", True),
        Layer("one", "Constant", params={"value": "1", "value_type": "Float"}),
        Layer("loss_gen", "SigmoidCrossEntropy", ["d_fake", "one"])])


def gan_project(folder: str, epochs: int = 2, **extra) -> str:
    """The GAN (Main: the discriminator's network, Generator: the generator's) on ``write_gan_data``'s CSV in
    ``folder``; ``extra`` goes to the second optimizer (Optimizer_G)."""
    os.makedirs(folder, exist_ok=True)
    write_gan_data(folder)
    project = Project(
        name="gan2", network=discriminator_network(), networks={"Generator": generator_network()},
        datasets=Datasets(training="train.csv", validation="train.csv"),
        config=TrainingConfig(max_epoch=epochs, batch_size=8, device="cpu", seed=1),
        optimizer=Optimizer(solver="Adam", learning_rate=0.01),
        optimizers=[ExtraOptimizer(name="Optimizer_G", network="Generator",
                                   optimizer=Optimizer(solver="Adam", learning_rate=0.01), **extra)])
    return save_project(project, os.path.join(folder, "project.yaml"), backup=False)


def gan_2d_project(folder: str, batch: int, workers: int) -> str:
    """The gan_2d template copied into ``folder``, cut to 2 epochs of ``batch`` on ``workers`` CPU workers with
    the logical batch kept (no LR scaling)."""
    from nnconsole.engine.project.templates import create_from_template

    project = load_valid_project(create_from_template("gan_2d", folder))
    project.config.max_epoch, project.config.batch_size, project.config.device = 2, batch, "cpu"
    project.multi_gpu.workers, project.multi_gpu.scaling = workers, "none"
    return save_project(project, backup=False)


# -- repeat blocks -------------------------------------------------------------------------------------------
def blocks_project(tmp_path, network: Network, rows: int = 32) -> str:
    """``network`` (32 features in, 3 classes out) saved as ``blocks.yaml`` with random data, 1 epoch of 8."""
    rng = np.random.RandomState(0)
    os.makedirs(tmp_path / "data", exist_ok=True)
    for split in ("train", "valid"):
        with open(tmp_path / "data" / f"{split}.csv", "w") as f:
            f.write(",".join(f"x__{i}" for i in range(32)) + ",y\n")
            for _ in range(rows):
                f.write(",".join(f"{v:.4f}" for v in rng.rand(32)) + f",{rng.randint(3)}\n")
    project = Project(name="blocks", network=network,
                      datasets=Datasets(training="data/train.csv", validation="data/valid.csv"))
    project.config.max_epoch, project.config.batch_size = 1, 8
    path = str(tmp_path / "blocks.yaml")
    save_project(project, path)
    return path


# -- the plan tests' model -----------------------------------------------------------------------------------
def plan_project(batch: int = 256, lr: float = 0.1, solver: str = "Momentum", bn: bool = False,
                 interval: int = 0, multiplier: float = 1.0, schedule: model.Schedule | None = None,
                 warmup_iterations: int = 0, update_interval: int = 1, max_epoch: int = 10,
                 workers: int = 1, scaling: str = "linear", warmup_epochs: float = 0.0) -> model.Project:
    """A tiny classifier: Input -> Affine (-> BatchNormalization) -> SoftmaxCrossEntropy with a label Input."""
    layers = [
        model.Layer("x", "Input", params={"shape": [1, 8, 8], "variable": "x"}),
        model.Layer("label", "Input", params={"shape": [1], "variable": "y"}),
        model.Layer("fc", "Affine", ["x"], params={"n_outmaps": 10}),
    ]
    last = "fc"
    if bn:
        layers.append(model.Layer("bn", "BatchNormalization", ["fc"]))
        last = "bn"
    layers.append(model.Layer("loss", "SoftmaxCrossEntropy", [last, "label"]))
    return model.Project(
        name="tiny",
        network=model.Network(layers),
        config=model.TrainingConfig(max_epoch=max_epoch, batch_size=batch),
        optimizer=model.Optimizer(solver=solver, learning_rate=lr, lr_multiplier=multiplier,
                                  lr_update_interval=interval, schedule=schedule or model.Schedule(),
                                  warmup_iterations=warmup_iterations, update_interval=update_interval),
        multi_gpu=model.MultiGPU(workers=workers, scaling=scaling, warmup_epochs=warmup_epochs),
    )


# -- the digits template cut down ------------------------------------------------------------------------------

def digits_subset_project(folder: str, rows: int = 256, validation_rows: int = 64) -> str:
    """The digits_cnn template with its first ``rows`` training images (``validation_rows`` validation), 2 epochs."""
    path = create_from_template("digits_cnn", folder)
    project = load_valid_project(path)
    for name, keep in ((project.datasets.training, rows), (project.datasets.validation, validation_rows)):
        csv = os.path.join(folder, name)
        with open(csv) as fh:
            lines = fh.readlines()
        with open(csv, "w") as fh:
            fh.writelines(lines[:keep + 1])
    project.config.max_epoch, project.config.device, project.config.log_interval = 2, "cpu", 1
    return save_project(project, backup=False)


def digits_search_copy(tmp_path, rows: Optional[int] = None, validation_rows: Optional[int] = None,
                       **search) -> str:
    """The digits_search template copied into ``tmp_path/p`` with ``search`` merged into its search section;
    returns the project file (its dataset paths stay relative, as a user's copy would have them). ``rows`` /
    ``validation_rows`` keep only the first rows of each dataset: shorter epochs for tests whose claim is about
    runs, checkpoints or trials rather than the template's accuracy."""
    folder = tmp_path / "p"
    shutil.copytree(project_templates.template_path("digits_search"), folder)
    for name, keep in (("train.csv", rows), ("validation.csv", validation_rows)):
        if keep is not None:
            csv = folder / "data" / name
            csv.write_text("".join(csv.read_text().splitlines(keepends=True)[:keep + 1]))
    path = folder / "project.yaml"
    data = yaml.safe_load(path.read_text())
    data["search"].update(search)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)
