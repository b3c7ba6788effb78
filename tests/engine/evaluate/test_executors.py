"""Executors (issue 17): evaluation runs the first executor's network NumEvaluations times per batch and
combines the passes as nnabla_cli forward does (mean: Monte-Carlo dropout averaging with Dropout's
skip_at_test off; last; std: the spread). Without executors evaluation runs Main's runtime network once."""
from __future__ import annotations

import os

import numpy as np
import pytest

from nnconsole.engine.project.model import Datasets, Executor, Layer, Network, Project
from tests.support.projects import write_tabular_csv
from nnconsole.engine.check.project_file import load_valid_project


def _project(folder: str) -> Project:
    write_tabular_csv(os.path.join(folder, "data.csv"), n=40)
    layers = [Layer("x", "Input", params={"shape": [4]}),
              Layer("drop", "Dropout", ["x"], {"p": 0.5, "skip_at_test": False}),
              Layer("fc", "Affine", ["drop"], {"out_shape": [1]}),
              Layer("y", "Input", params={"shape": [1]}),
              Layer("loss", "SquaredError", ["fc", "y"])]
    project = Project(name="mc", network=Network(layers), datasets=Datasets(training="data.csv",
                                                                            validation="data.csv"))
    project.path = os.path.join(folder, "project.yaml")
    return project


def _outputs(project: Project, folder: str) -> np.ndarray:
    import nnabla as nn

    from nnconsole.engine.data.loading import load_dataset
    from nnconsole.engine.evaluate.evaluation import _run_network
    from nnconsole.engine.runtime.graph import build_graph

    nn.clear_parameters()
    nn.seed(0)
    build_graph(project.network, 4, "train", rng=np.random.RandomState(0))
    params = os.path.join(folder, "params.h5")
    nn.save_parameters(params)
    data = load_dataset(os.path.join(folder, "data.csv"), expected_shapes={"x": (4,), "y": (1,)})
    return _run_network(project, params, data, 40)


def test_monte_carlo_passes_average_towards_the_expected_output(tmp_path):
    project = _project(str(tmp_path))
    deterministic = project.copy()
    deterministic.network.layer("drop").params["skip_at_test"] = True
    expected = _outputs(deterministic, str(tmp_path))
    once = _outputs(project, str(tmp_path))  # no executor: one pass, a random dropout mask
    project.executors = [Executor(num_evaluations=200)]
    averaged = _outputs(project, str(tmp_path))
    assert np.abs(averaged - expected).mean() < 0.35 * np.abs(once - expected).mean()
    project.executors = [Executor(num_evaluations=20, repeat_evaluation_type="std")]
    spread = _outputs(project, str(tmp_path))
    assert spread.shape == once.shape and np.all(spread >= 0) and spread.mean() > 0.05
    project.executors = [Executor(num_evaluations=5, repeat_evaluation_type="last")]
    assert _outputs(project, str(tmp_path)).shape == once.shape


def test_combine_passes_as_nnabla_cli_forward():
    from nnconsole.engine.evaluate.evaluation import combine_passes

    passes = [np.array([[1.0], [2.0]]), np.array([[3.0], [2.0]])]
    assert np.array_equal(combine_passes(passes, "mean"), [[2.0], [2.0]])
    assert np.array_equal(combine_passes(passes, "last"), [[3.0], [2.0]])
    assert np.allclose(combine_passes(passes, "std"), [[1.0], [0.0]])


@pytest.mark.parametrize("change, where", [
    (lambda e: setattr(e, "network", "Nope"), "executors[0].network"),
    (lambda e: setattr(e, "num_evaluations", 0), "executors[0].num_evaluations"),
    (lambda e: setattr(e, "repeat_evaluation_type", "median"), "executors[0].repeat_evaluation_type"),
])
def test_bad_executors_are_located(tmp_path, change, where):
    from nnconsole.engine.check.structure import check_structure

    project = _project(str(tmp_path))
    project.executors = [Executor()]
    change(project.executors[0])
    assert [p.path for p in check_structure(project)] == [where]


def test_executors_round_trip_through_the_file_and_nntxt(tmp_path):
    from nnconsole.engine.interop.files import export_nntxt, import_file
    from nnconsole.engine.project.io import save_project

    project = _project(str(tmp_path))
    project.executors = [Executor(name="MC", num_evaluations=30, repeat_evaluation_type="std")]
    save_project(project, backup=False)
    assert load_valid_project(project.path).executors == project.executors
    out = str(tmp_path / "mc.nntxt")
    export_nntxt(project, out)
    text = open(out).read()
    assert "num_evaluations: 30" in text and 'repeat_evaluation_type: "std"' in text
    assert import_file(out).project.executors == [Executor(name="MC", num_evaluations=30,
                                                           repeat_evaluation_type="std")]
