"""Each network has its own variables (issue 26, item 6): as in NNC, Inputs of different networks may read one
dataset variable in different shapes (``y`` as a label [1] in one network and as a [1, 3, 3] map in another);
only a dataset column that would have to feed both is refused (``network.data_flow``).

The project: Main reconstructs x (no y), Classifier (its optimizer on the training dataset) reads y as [1],
Map (its optimizer on the validation dataset) reads y as [1, 3, 3]. It is valid, trains with finite losses on
each split's own columns, exports to .nntxt (nnabla's loader reads each network's own y and counts the
parameters we count) and .sdcproj, and both re-import to the same networks.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.interop.files import export_nntxt, import_file
from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj
from nnconsole.engine.network.data_flow import dataset_variables, fits
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.project.errors import ProjectError
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import (Datasets, ExtraOptimizer, Layer as L, Network, Optimizer, Project,
                                            TrainingConfig)
from nnconsole.engine.project.structure import all_networks
from tests.support.networks import same_network
from tests.support.training import results_of, train_in_process

MAP = [1, 3, 3]


def _write_csv(path: str, n: int, y_values: int, seed: int) -> None:
    """x as 4 numeric columns; y as one column (a label) or y__0.. (one map per sample)."""
    rng = np.random.RandomState(seed)
    y_head = ["y"] if y_values == 1 else [f"y__{i}" for i in range(y_values)]
    with open(path, "w") as fh:
        fh.write(",".join([f"x__{i}" for i in range(4)] + y_head) + "\n")
        for _ in range(n):
            x = rng.randn(4)
            y = [str(int(x[0] > 0))] if y_values == 1 else [f"{v:.4f}" for v in np.tanh(x[:1] * rng.rand(y_values))]
            fh.write(",".join([f"{v:.4f}" for v in x] + y) + "\n")


def _networks() -> tuple:
    main = Network([L("x", "Input", params={"shape": [4], "variable": "x"}), L("code", "Affine", ["x"], {"out_shape": [4]}),
                    L("rec", "SquaredError", ["code", "x"])])
    classifier = Network([L("x", "Input", params={"shape": [4], "variable": "x"}), L("fc", "Affine", ["x"], {"out_shape": [2]}),
                          L("y", "Input", params={"shape": [1], "variable": "y"}), L("loss", "SoftmaxCrossEntropy", ["fc", "y"])])
    heat = Network([L("x", "Input", params={"shape": [4], "variable": "x"}), L("map", "Affine", ["x"], {"out_shape": MAP}),
                    L("y", "Input", params={"shape": MAP, "variable": "y"}), L("mse", "SquaredError", ["map", "y"])])
    return main, classifier, heat


def _project(folder: str, map_dataset: str = "validation") -> str:
    os.makedirs(folder, exist_ok=True)
    _write_csv(os.path.join(folder, "train.csv"), 32, 1, 0)
    _write_csv(os.path.join(folder, "valid.csv"), 16, math.prod(MAP), 1)
    main, classifier, heat = _networks()
    project = Project(name="own_variables", network=main, networks={"Classifier": classifier, "Map": heat},
                      datasets=Datasets(training="train.csv", validation="valid.csv"),
                      config=TrainingConfig(max_epoch=1, batch_size=8, device="cpu", seed=2),
                      optimizer=Optimizer(solver="Adam", learning_rate=0.01),
                      optimizers=[ExtraOptimizer(name="Optimizer_C", network="Classifier", dataset="training",
                                                 optimizer=Optimizer(solver="Adam", learning_rate=0.01)),
                                  ExtraOptimizer(name="Optimizer_M", network="Map", dataset=map_dataset,
                                                 optimizer=Optimizer(solver="Adam", learning_rate=0.01))])
    return save_project(project, os.path.join(folder, "project.yaml"), backup=False)


def test_one_variable_in_two_shapes_where_each_split_feeds_one_is_valid_and_trains(tmp_path):
    path = _project(str(tmp_path))
    project = load_valid_project(path)  # the CSVs read too: each split's column fits the Inputs it feeds
    assert dataset_variables(project, "training") == {"x": (4,), "y": (1,)}
    assert dataset_variables(project, "validation") == {"x": (4,), "y": tuple(MAP)}
    run_dir, losses = train_in_process(project, results_of(path))
    assert losses and all(np.isfinite(losses))
    import json
    with open(os.path.join(run_dir, "metrics.jsonl")) as fh:
        per_optimizer = [json.loads(line) for line in fh if '"optimizer_loss"' in line]
    assert {r["optimizer"] for r in per_optimizer} == {"Optimizer_C", "Optimizer_M"}
    assert all(np.isfinite(r["loss"]) for r in per_optimizer)


def test_a_column_that_would_feed_two_shapes_is_refused_naming_both(tmp_path):
    path = _project(str(tmp_path), map_dataset="training")  # y: [1] for Classifier and [1, 3, 3] for Map
    with pytest.raises(ProjectError) as caught:
        load_valid_project(path, check_datasets=False)
    text = str(caught.value)
    assert "training dataset's variable 'y'" in text and "[1] in network 'Classifier' (optimizer 'Optimizer_C')" \
        in text and "[1, 3, 3] in network 'Map' (optimizer 'Optimizer_M')" in text


def test_shapes_that_differ_only_by_axes_of_size_one_fit_one_column():
    assert fits((1,), (1, 1)) and fits((3, 1, 4), (3, 4)) and not fits((1,), (1, 3, 3)) and not fits((3, 4), (4, 3))


def test_exports_keep_each_networks_own_variables_and_reimport_equal(tmp_path):
    import nnabla as nn
    from nnabla.utils import load

    project = load_valid_project(_project(str(tmp_path)))
    nntxt = str(tmp_path / "own.nntxt")
    lost = export_nntxt(project, nntxt).unsupported  # Map's y comes from 9 numeric columns of the validation CSV
    assert [u for u in lost if u.startswith("input 'y' has shape [1, 3, 3]")], lost  # which nnabla_cli cannot feed
    nn.clear_parameters()
    info = load.load([nntxt], prepare_data_iterator=False)
    y_shapes = {name: tuple(net.variables["y"].variable_instance.shape[1:]) for name, net in info.networks.items()
                if "y" in net.variables}
    assert y_shapes == {"Classifier": (1,), "Map": tuple(MAP)}  # nnabla reads each network's own y
    by_nnabla = sum(int(np.prod(v.shape)) for v in nn.get_parameters(grad_only=False).values())
    nn.clear_parameters()
    ours = sum(infer_network(n, all_networks(project), k).total_stored for k, n in all_networks(project).items())
    assert by_nnabla == ours

    for exported in (nntxt, str(tmp_path / "own.sdcproj")):
        if exported.endswith(".sdcproj"):
            lost = export_sdcproj(project, exported).unsupported
            assert not [u for u in lost if "target" in u], lost  # the reconstruction's target x is carried
        result = import_file(exported)
        back = result.project
        assert set(back.networks) == {"Classifier", "Map"}, exported
        same_network(project.network, back.network)
        for name in ("Classifier", "Map"):
            same_network(project.networks[name], back.networks[name])
        assert [(o.name, o.network, o.dataset) for o in back.optimizers] == [
            ("Optimizer_C", "Classifier", "training"), ("Optimizer_M", "Map", "validation")], exported
        out = str(tmp_path / f"back_{os.path.basename(exported)}.yaml")
        back.datasets = project.datasets
        save_project(back, out, backup=False)
        load_valid_project(out, check_datasets=False)  # valid again


def test_inputs_that_differ_by_axes_of_size_one_share_one_column_while_training(tmp_path):
    """Main reads the training column y as [1] (a label), network Score as [1, 1]: one column feeds both, the
    batch reshaped for Score's Input."""
    folder = str(tmp_path)
    _write_csv(os.path.join(folder, "train.csv"), 32, 1, 0)
    main = Network([L("x", "Input", params={"shape": [4], "variable": "x"}), L("fc", "Affine", ["x"], {"out_shape": [2]}),
                    L("y", "Input", params={"shape": [1], "variable": "y"}), L("loss", "SoftmaxCrossEntropy", ["fc", "y"])])
    score = Network([L("x", "Input", params={"shape": [4], "variable": "x"}),
                     L("s", "Affine", ["x"], {"out_shape": [1, 1]}),
                     L("y", "Input", params={"shape": [1, 1], "variable": "y"}), L("mse", "SquaredError", ["s", "y"])])
    project = Project(name="unit_axes", network=main, networks={"Score": score},
                      datasets=Datasets(training="train.csv", validation="train.csv"),
                      config=TrainingConfig(max_epoch=1, batch_size=8, device="cpu", seed=2),
                      optimizers=[ExtraOptimizer(name="Optimizer_S", network="Score", dataset="training")])
    path = save_project(project, os.path.join(folder, "project.yaml"), backup=False)
    run_dir, losses = train_in_process(load_valid_project(path), results_of(path))
    assert losses and all(np.isfinite(losses))
