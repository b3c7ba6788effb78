"""Class names from labels.txt in the confusion matrix and the DATASET histogram (issue 28 item 14): the names
beside the training CSV (``engine.data.labels``), the class number where a class has no name. An evaluation
made before labels.txt existed gets them from the run's own project."""
from __future__ import annotations

import os

import numpy as np
import pytest
from PySide6.QtCore import Qt

from tests.gui.support import copy_digits, fake_run, open_tab_page, wait_until

from nnconsole.app.dataset.page import create_page as create_dataset_page
from nnconsole.app.evaluation.confusion import ConfusionMatrixView
from nnconsole.app.evaluation.page import create_page as create_evaluation_page
from nnconsole.engine.metrics.results import EvaluationResult, classification_metrics, evaluation_dir, write_evaluation
from nnconsole.engine.project.io import load_project, save_project
from nnconsole.engine.project.paths import dataset_path
from nnconsole.engine.rundir.protocol import RESOLVED_FILE

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/runs"
TAG = os.environ.get("SHOT_TAG", "after")
NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven"]  # 8 of 10: 8 and 9 keep their numbers


def with_labels(project_path: str) -> None:
    project = load_project(project_path)
    folder = os.path.dirname(dataset_path(project, project.datasets.training))
    with open(os.path.join(folder, "labels.txt"), "w") as fh:
        fh.write("\n".join(NAMES) + "\n")


def classified_run(project_path: str) -> str:
    """A run of the project with a classification evaluation written the engine's way, without class_names
    (evaluated before labels.txt existed)."""
    run_dir = fake_run(project_path, "20240101_000000")
    project = load_project(project_path)
    for name in ("training", "validation"):
        setattr(project.datasets, name, dataset_path(project, getattr(project.datasets, name)))
    save_project(project, os.path.join(run_dir, RESOLVED_FILE), backup=False)  # datasets absolute, as the launcher
    open(os.path.join(run_dir, "parameters_best.h5"), "wb").close()
    rng = np.random.default_rng(0)
    labels = np.arange(40) % 10
    predictions = np.where(rng.random(40) < 0.8, labels, (labels + 1) % 10)
    outputs = np.eye(10)[predictions] * 0.9 + 0.01
    metrics = classification_metrics(labels, predictions, 10)
    metrics.update({"task": "classification", "model": "best", "run_dir": run_dir, "dataset": "", "split": "validation"})
    result = EvaluationResult(run_dir, "best", "classification", "", "y", labels.reshape(-1, 1).astype(float), outputs,
                              predictions, [f"row {i}" for i in range(40)], metrics)
    write_evaluation(result, evaluation_dir(run_dir, "best"))
    return run_dir


def test_the_confusion_headers_name_classes_and_fall_back_to_numbers(qtbot):
    view = ConfusionMatrixView()
    qtbot.addWidget(view)
    view.set_matrix([[3, 1, 0], [0, 2, 0], [1, 0, 4]], ["cat", "dog"])
    model = view.model
    assert [model.headerData(i, Qt.Horizontal) for i in range(3)] == ["cat", "dog", "2"]
    assert model.headerData(1, Qt.Vertical, Qt.ToolTipRole) == "true class 1 (dog)"
    assert "true 0 (cat) \u2192 predicted 1 (dog)" in model.data(model.index(0, 1), Qt.ToolTipRole)
    view.set_matrix([[1, 0], [0, 1]])  # no names: numbers, as before
    assert [model.headerData(i, Qt.Horizontal) for i in range(2)] == ["0", "1"]


def test_an_older_evaluation_shows_the_names_of_the_runs_labels_txt(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"))
    run_dir = classified_run(project)
    with_labels(project)
    page = open_tab_page(qtbot, create_evaluation_page, project)
    page.resize(1300, 850)
    page.load(evaluation_dir(run_dir, "best"))
    headers = [page.confusion.model.headerData(i, Qt.Horizontal) for i in range(10)]
    page.grab().save(f"{SHOTS}/item14_confusion_names_{TAG}.png")
    assert headers == NAMES + ["8", "9"]
    assert page.class_filter.itemText(1) == "0 zero"  # the other views read the same names
    listed = [page.confusions.list.item(i).text() for i in range(page.confusions.list.count())]
    assert any(t.startswith("true 6 six \u2192 predicted 7 seven") for t in listed), listed


def test_the_dataset_histogram_names_classes(qtbot, tmp_path, digits_document):
    with_labels(digits_document.path)
    page = create_dataset_page(digits_document, None)
    qtbot.addWidget(page)
    page.resize(1400, 900)
    page.show()
    page.wait_for_checks()
    wait_until(qtbot, lambda: bool(page.previews["training"].histogram_counts), 30)
    axis = page.previews["training"].histogram.getPlotItem().getAxis("bottom")
    ticks = [text for _x, text in axis._tickLevels[0]]
    page.grab().save(f"{SHOTS}/item14_histogram_names_{TAG}.png")
    assert ticks == NAMES + ["8", "9"]
