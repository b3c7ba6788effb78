"""Class labels are checked against the network's classes when the data loads.

A label outside 0..C-1 (C = the size of the classifier's prediction along its class axis), or
not a whole number, used to train to "finished" on garbage (11 for 10 classes, -1, 2.5, 1e30)
or crash nnabla (1e8: segmentation fault). Now it is a located error: CSV file, line, column,
the value as written, and the valid range, before any worker starts, in training and in
validation data alike.
"""
from __future__ import annotations

import os

import pytest

from nnconsole.engine.data.loading import DatasetError, check_dataset, load_dataset
from nnconsole.engine.data.labels import class_label_variables
from nnconsole.engine.project.io import load_project
from nnconsole.engine.project.model import Layer, Network
from nnconsole.engine.check.project_file import validate
from nnconsole.engine.data.loading import load_dataset_split
from tests.support.cli import nnconsole
from tests.support.projects import tabular_project
from nnconsole.engine.check.project_file import load_valid_project

HOSTILE = ["3", "-1", "2.5", "1e30", "1e8", "-0.5", "1e-9"]  # the helper's classifier has 3 classes


def plant(csv_path: str, value: str, row: int = 5) -> int:
    """Put ``value`` as the label (last column) of data row ``row``; returns its CSV line number."""
    with open(csv_path) as fh:
        lines = fh.read().splitlines()
    cells = lines[row].split(",")
    cells[-1] = value
    lines[row] = ",".join(cells)
    with open(csv_path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return row + 1


@pytest.fixture
def project(tmp_path) -> str:
    return tabular_project(str(tmp_path / "p"), n=32, epochs=1)


def test_the_classifier_target_is_found_with_its_class_count(project):
    net = load_valid_project(project).network
    assert class_label_variables(net) == {"y": 3}
    # The class axis is the loss's axis; a regression loss has no class labels.
    layers = [Layer("x", "Input", params={"shape": [4]}), Layer("fc", "Affine", ["x"], {"out_shape": [5, 7]}),
              Layer("t", "Input", params={"shape": [1, 7], "variable": "label"}),
              Layer("loss", "SoftmaxCrossEntropy", ["fc", "t"], {"axis": 0})]
    assert class_label_variables(Network(layers)) == {"label": 5}
    layers[-1] = Layer("loss", "SquaredError", ["fc", "t"])
    assert class_label_variables(Network(layers)) == {}


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_training_label_is_a_located_error(project, value):
    train_csv = os.path.join(os.path.dirname(project), "train.csv")
    line = plant(train_csv, value)
    problems = [p for p in validate(load_project(project)) if p.severity == "error"]
    assert len(problems) == 1, problems
    text = str(problems[0].message)
    assert f"train.csv line {line}, column y" in text and f"'{value}'" in text and "0 to 2" in text, text
    # The workers' own loading (e.g. a CSV edited after the run started) says the same.
    with pytest.raises(DatasetError, match=f"line {line}, column y"):
        load_dataset_split(load_valid_project(project, check_datasets=False), "training")


def test_a_hostile_validation_label_is_a_located_error(project):
    valid_csv = os.path.join(os.path.dirname(project), "valid.csv")
    line = plant(valid_csv, "11", row=3)
    with pytest.raises(DatasetError) as caught:
        check_dataset(valid_csv, {"x": (4,), "y": (1,)}, label_classes={"y": 3})
    assert f"valid.csv line {line}, column y" in str(caught.value) and caught.value.line == line


def test_labels_of_a_multi_value_target_name_the_column(tmp_path):
    csv = tmp_path / "seg.csv"
    csv.write_text("x__0,x__1,t__0,t__1,t__2\n1,2,0,1,2\n3,4,2,7,0\n")
    with pytest.raises(DatasetError, match=r"seg.csv line 3, column t__1: class label '7'"):
        load_dataset(str(csv), {"x": (2,), "t": (3,)}, label_classes={"t": 3})
    assert load_dataset(str(csv), {"x": (2,), "t": (3,)}).size == 2  # without the rule: plain numbers


def test_valid_labels_load_and_equal_integers_written_as_floats_pass(tmp_path):
    csv = tmp_path / "ok.csv"
    csv.write_text("x,y\n0.5,0\n0.25,2.0\n1,1e0\n")
    data = load_dataset(str(csv), {"x": (1,), "y": (1,)}, label_classes={"y": 3})
    assert data.arrays["y"].ravel().tolist() == [0, 2, 1]


@pytest.mark.parametrize("value", ["11", "1e8"])
def test_train_refuses_hostile_labels_before_any_worker_starts(project, value):
    train_csv = os.path.join(os.path.dirname(project), "train.csv")
    line = plant(train_csv, value)
    out = nnconsole(["train", project, "-q"], check=False)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert f"line {line}, column y" in out.stderr and "Traceback" not in out.stderr
    assert not os.path.isdir(os.path.join(os.path.dirname(project), "results"))  # nothing was started
