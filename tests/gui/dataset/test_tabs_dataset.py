"""DATASET tab: previews with thumbnails, class histograms, variables matched, bad paths reported, undo."""
from __future__ import annotations

import os

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit, QPushButton

from tests.gui.support import wait_until

from nnconsole.app.dataset import page as dataset_page
from nnconsole.app.dataset.page import DatasetPage, create_page, relative_to_project

pytestmark = pytest.mark.gui


def make_page(qtbot, document) -> DatasetPage:
    widget = create_page(document, None)
    qtbot.addWidget(widget)
    widget.resize(1400, 900)
    widget.show()
    return widget


def wait_checked(qtbot, page: DatasetPage) -> None:
    """Wait for both background loads (started by the last refresh) to report."""
    page.wait_for_checks()
    wait_until(qtbot, lambda: all(s.loaded is not None or s.error for s in page.states.values()), 30)


def cell(page, row, col):
    return page.variables.item(row, col).text()


@pytest.mark.slow
def test_digits_previews_histograms_and_matched_variables(qtbot, digits_document):
    page = make_page(qtbot, digits_document)
    wait_checked(qtbot, page)
    assert page.problem_texts() == []
    train, valid = page.previews["training"], page.previews["validation"]
    # class_histogram of the loaded label variable: 10 classes covering every sample
    assert sorted(train.histogram_counts) == list(range(10))
    assert sum(train.histogram_counts.values()) == 1437
    assert sum(valid.histogram_counts.values()) == 360
    assert "1,437" in train.info.text() and "x (image)" in train.info.text()
    # the table shows the first rows with a thumbnail for the image cell
    model = train.model
    assert model.columns == ["x:image", "y:label"] and model.rowCount() == 200
    pixmap = model.data(model.index(0, 0), Qt.DecorationRole)
    assert pixmap is not None and not pixmap.isNull() and pixmap.width() == 32
    assert model.data(model.index(0, 1), Qt.DecorationRole) is None
    # x and y matched against both CSVs, with the shapes the engine loaded
    assert [cell(page, r, 0) for r in range(2)] == ["x", "y"]
    assert [cell(page, r, 1) for r in range(2)] == ["input", "target"]
    assert cell(page, 0, 2) == "[1, 8, 8]"
    assert cell(page, 0, 3) == "\u2714 OK [1, 8, 8]" and cell(page, 1, 4) == "\u2714 OK [1]"


@pytest.mark.slow
def test_a_bad_path_is_reported_and_the_edit_undoes(qtbot, digits_document):
    page = make_page(qtbot, digits_document)
    wait_checked(qtbot, page)
    edit = page.findChild(QLineEdit, "dataset_path_training")
    edit.setText("data/missing.csv")
    edit.editingFinished.emit()
    assert digits_document.project.datasets.training == "data/missing.csv"
    problems = page.problem_texts()
    assert any("datasets.training" in p and "not found" in p and "missing.csv" in p for p in problems), problems
    preview = page.previews["training"]
    assert preview.error.isVisible() and "missing.csv" in preview.error.text()
    assert "fix the path" in preview.error.text() or "check the dataset path" in preview.error.text()
    assert cell(page, 0, 3).startswith("\u2716")
    assert digits_document.undo_stack.undoText() == "Change Training dataset"

    digits_document.undo_stack.undo()
    assert edit.text() == "data/train.csv"
    wait_checked(qtbot, page)
    assert page.problem_texts() == []
    assert not preview.error.isVisible()


def test_a_header_without_the_networks_variable_is_an_error_before_any_run(qtbot, digits_document, tmp_path):
    folder = os.path.dirname(digits_document.path)
    with open(os.path.join(folder, "data", "train.csv")) as fh:
        lines = fh.read().splitlines()
    with open(os.path.join(folder, "data", "renamed.csv"), "w") as fh:
        fh.write("\n".join(["image:image,y:label"] + lines[1:]) + "\n")
    page = make_page(qtbot, digits_document)
    page.findChild(QLineEdit, "dataset_path_training").setText("data/renamed.csv")
    page.findChild(QLineEdit, "dataset_path_training").editingFinished.emit()
    wait_checked(qtbot, page)
    problems = page.problem_texts()
    assert any("no column for variable(s) x" in p for p in problems), problems
    assert cell(page, 0, 3) == "\u2716 missing" and cell(page, 0, 4).startswith("\u2714")
    assert "header has no variable 'x'" in page.previews["training"].error.text()


def test_an_image_of_the_wrong_size_is_reported_with_line_and_fix(qtbot, digits_document):
    from PIL import Image

    folder = os.path.dirname(digits_document.path)
    Image.new("L", (12, 12)).save(os.path.join(folder, "data", "big.png"))
    with open(os.path.join(folder, "data", "validation.csv")) as fh:
        lines = fh.read().splitlines()
    lines[3] = "big.png,3"
    with open(os.path.join(folder, "data", "validation.csv"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    page = make_page(qtbot, digits_document)
    wait_checked(qtbot, page)
    text = page.previews["validation"].error.text()
    assert "validation.csv line 4" in text and "12x12" in text and "8x8" in text
    assert any("datasets.validation" in p and "line 4" in p for p in page.problem_texts())
    assert page.previews["training"].histogram_counts  # the other CSV is still fine


def test_a_label_outside_the_networks_classes_is_reported_in_the_preview(qtbot, digits_document):
    """The DATASET tab checks labels as training does (10 digit classes: 10 and 2.5 are not classes)."""
    folder = os.path.dirname(digits_document.path)
    path = os.path.join(folder, "data", "validation.csv")
    with open(path) as fh:
        lines = fh.read().splitlines()
    image = lines[3].split(",")[0]
    lines[3] = image + ",10"
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    page = make_page(qtbot, digits_document)
    wait_checked(qtbot, page)
    text = page.previews["validation"].error.text()
    assert "validation.csv line 4" in text and "'10'" in text and "0 to 9" in text, text
    assert page.previews["training"].histogram_counts  # the other CSV is still fine


def test_browse_stores_a_path_relative_to_the_project(qtbot, digits_document, monkeypatch):
    folder = os.path.dirname(digits_document.path)
    chosen = os.path.join(folder, "data", "validation.csv")
    monkeypatch.setattr(dataset_page, "choose_dataset_file", lambda parent, start: chosen)
    page = make_page(qtbot, digits_document)
    page.findChild(QPushButton, "dataset_browse_training").click()
    assert digits_document.project.datasets.training == os.path.join("data", "validation.csv")
    assert relative_to_project(digits_document.path, "/elsewhere/x.csv") == "/elsewhere/x.csv"
    assert relative_to_project(None, "rel.csv") == os.path.abspath("rel.csv")
