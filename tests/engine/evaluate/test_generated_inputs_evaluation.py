"""Evaluation and inference with generated inputs (issue 26 item 5): a network whose noise is generated runs on a
dataset without that column, gives the same outputs at every evaluation (each row's values are keyed by the row),
and a loss target that a generator makes (a GAN's constant 1) is the evaluation's target."""
from __future__ import annotations

import csv
import os

import numpy as np

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.evaluate.evaluation import evaluate_run
from nnconsole.engine.evaluate.inference import infer
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Datasets, Layer, Network, Project, TrainingConfig
from tests.support.projects import gan_2d_project
from tests.support.training import train_file_in_process


def test_a_generated_constant_target_is_what_evaluation_compares_with(tmp_path):
    run_dir = train_file_in_process(gan_2d_project(str(tmp_path / "gan"), 32, 1))
    result = evaluate_run(run_dir, "final")
    assert result.label_variable == "one" and result.targets.shape == (100, 1) and np.all(result.targets == 1.0)
    assert np.all(np.isfinite(result.outputs))


def _noisy_regression(folder) -> str:
    rng = np.random.RandomState(0)
    rows = [(a, b, 2 * a - b) for a, b in rng.rand(24, 2)]
    with open(folder / "data.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([("x__0", "x__1", "y")] + rows)
    layers = [Layer("x", "Input", params={"shape": [2]}),
              Layer("noise", "Input", params={"shape": [2], "generator": "Normal", "generator_multiplier": 0.1}),
              Layer("noisy", "Add2", ["x", "noise"]),
              Layer("fc", "Affine", ["noisy"], {"out_shape": [1]}),
              Layer("y", "Input", params={"shape": [1]}),
              Layer("loss", "SquaredError", ["fc", "y"])]
    project = Project(name="noisy", network=Network(layers=layers),
                      datasets=Datasets(training="data.csv", validation="data.csv"),
                      config=TrainingConfig(max_epoch=1, batch_size=8, device="cpu"))
    return save_project(project, str(folder / "noisy.yaml"), backup=False)


def test_generated_noise_needs_no_column_and_repeats_at_every_evaluation(tmp_path):
    path = _noisy_regression(tmp_path)
    assert load_valid_project(path).network.layer("noise").params["generator"] == "Normal"
    run_dir = train_file_in_process(path)
    first, second = evaluate_run(run_dir, "final"), evaluate_run(run_dir, "final")
    assert np.array_equal(first.outputs, second.outputs) and np.all(np.isfinite(first.outputs))
    out = infer(run_dir, [str(tmp_path / "data.csv")], output=str(tmp_path / "inferred.csv"), model="final")
    assert out.count == 24 and os.path.isfile(out.output)
