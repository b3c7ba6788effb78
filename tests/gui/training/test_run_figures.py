"""Figures the GUI shows come from the run's and the dataset's own verdicts (issue 13, item 16): the
iteration a run stopped at is status.json's, not the GUI's last record; DATASET judges each variable
on its own, so a bad image in ``x`` does not mark ``y``."""
from __future__ import annotations

import os

import pytest

from tests.gui.support import copy_digits, fake_run, train_records, wait_until

from nnconsole.app.dataset.matching import ExpectedVariable, variable_status
from nnconsole.app.dataset.page import DatasetPage
from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.app.training.page import TrainingPage
from nnconsole.engine.data.loading import DatasetError, load_dataset
from nnconsole.engine.rundir.protocol import LAUNCHER, WORKER

pytestmark = pytest.mark.gui


def test_the_stopped_iteration_is_the_one_status_json_records(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"))
    records = [r for r in train_records(17) if r["iteration"] <= 370]  # the last train record: iteration 370
    run_dir = fake_run(project, "20260101_000000", status="running", records=records, pid=os.getpid())
    document = ProjectDocument()
    document.load(project)
    page = TrainingPage(document, None)
    qtbot.addWidget(page)
    page.progress.update_from(records)
    assert "370" in page.progress.bar.format()
    from nnconsole.engine.rundir import store as runs

    runs.update_status(run_dir, WORKER, iteration=368)
    runs.update_status(run_dir, LAUNCHER, status="stopped", resumable=True)
    page.controller.run_finished.emit(run_dir, "stopped", 3)
    assert page.progress.bar.format() == "stopped at iteration 368 / 391"  # of the planned iterations


def test_a_run_without_a_recorded_iteration_shows_none(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"))
    run_dir = fake_run(project, "20260101_000000", status="failed", records=train_records(1), iteration=0)
    document = ProjectDocument()
    document.load(project)
    page = TrainingPage(document, None)
    qtbot.addWidget(page)
    page.progress.update_from(train_records(1))
    page.controller.run_finished.emit(run_dir, "failed", 1)
    assert page.progress.bar.format() == "failed"


def test_a_load_error_names_the_variable_it_is_about(tmp_path):
    from PIL import Image

    folder = tmp_path / "d"
    folder.mkdir()
    for i in range(2):
        Image.new("L", (8, 8)).save(folder / f"{i}.png")
    Image.new("L", (12, 12)).save(folder / "big.png")
    (folder / "a.csv").write_text("x:image,y:label\n0.png,1\nbig.png,2\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(str(folder / "a.csv"), {"x": (1, 8, 8), "y": (1,)})
    assert info.value.variable == "x"
    (folder / "b.csv").write_text("x:image,y:label\n0.png,1\n1.png,oops\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(str(folder / "b.csv"), {"x": (1, 8, 8), "y": (1,)})
    assert info.value.variable == "y"
    (folder / "c.csv").write_text("x:image,y__0,y__1\n0.png,1\n")  # a row too short: the file as a whole
    with pytest.raises(DatasetError) as info:
        load_dataset(str(folder / "c.csv"), {"x": (1, 8, 8)})
    assert info.value.variable is None


def test_variable_verdicts_are_per_variable():
    x = ExpectedVariable("x", (1, 8, 8), "input")
    y = ExpectedVariable("y", (1,), "target")
    header = ["x", "y"]
    error = "validation.csv line 4, column x: image 'big.png' is 12x12"
    assert variable_status(x, header, None, error, "x") == (False, "error (see problems)")
    assert variable_status(y, header, None, error, "x") == (True, "in header")
    assert variable_status(y, header, None, "validation.csv line 4: the row has 3 values", None)[0] is False
    assert variable_status(y, header, {"y": (1,)}) == (True, "OK [1]")
    assert variable_status(y, ["x"], None) == (False, "missing")


def test_dataset_marks_only_the_variable_that_mismatches(qtbot, digits_document, tmp_path):
    from PIL import Image

    folder = os.path.dirname(digits_document.path)
    Image.new("L", (12, 12)).save(os.path.join(folder, "data", "big.png"))
    path = os.path.join(folder, "data", "validation.csv")
    with open(path) as fh:
        lines = fh.read().splitlines()
    lines[3] = "big.png,3"
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    page = DatasetPage(digits_document, None)
    qtbot.addWidget(page)
    page.resize(1400, 900)
    page.show()
    page.wait_for_checks()
    wait_until(qtbot, lambda: all(s.loaded is not None or s.error for s in page.states.values()), 30)
    page.grab().save(str(tmp_path / "dataset_x_mismatch.png"))
    cells = {(r, c): page.variables.item(r, c).text() for r in range(2) for c in (3, 4)}
    assert cells[(0, 4)] == "\u2716 error (see problems)"  # x in validation.csv: the 12x12 image
    assert cells[(1, 4)].startswith("\u2714"), cells  # y in validation.csv is fine
    assert cells[(0, 3)].startswith("\u2714 OK") and cells[(1, 3)].startswith("\u2714 OK")
