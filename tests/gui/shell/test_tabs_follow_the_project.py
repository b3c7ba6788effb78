"""Every tab shows only the open project's state: opening another project clears what the previous one
left in TRAINING (curves, overlays, progress, status, error), EVALUATION (results, scatter, messages) and
DATASET (histograms, variables) - issue 13, item 14."""
from __future__ import annotations

import os

import pytest

from tests.gui.support import copy_digits, fake_regression_evaluation, fake_run, train_records, wait_until

from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.app.dataset.page import DatasetPage
from nnconsole.app.evaluation.page import EvaluationPage
from nnconsole.app.training.page import TrainingPage
from nnconsole.engine.rundir import store as runs

pytestmark = pytest.mark.gui


def _page(qtbot, cls, document):
    page = cls(document, None)
    qtbot.addWidget(page)
    page.resize(1400, 900)
    page.show()
    return page


@pytest.fixture
def two_projects(tmp_path):
    """(A, B): A has two finished runs and a failed newest one; B has none."""
    a = copy_digits(str(tmp_path / "a"))
    b = copy_digits(str(tmp_path / "b"))
    fake_run(a, "20260101_000000", started=1.0e9)
    fake_run(a, "20260101_000001", started=1.0e9 + 1, best_validation_error=0.25)
    fake_run(a, "20260101_000002", status="failed", started=1.0e9 + 2, records=train_records(1),
             message="rank 0 failed: deliberate", failed_rank=0)
    return a, b


def test_training_shows_only_the_open_projects_runs(qtbot, two_projects, tmp_path):
    a, b = two_projects
    document = ProjectDocument()
    document.load(a)
    page = _page(qtbot, TrainingPage, document)
    runs_a = [row.run_dir for row in page.history.rows]
    assert len(runs_a) == 3 and page.curves.primary == runs_a[0]
    assert page.error.isVisible() and "deliberate" in page.error.toPlainText()
    page.history.set_checked(runs_a[1], True)  # overlay a second run of A
    assert page.curves.overlays() == [runs_a[1]]
    page.progress.update_from(train_records(1))
    assert page.progress.bar.value() > 0
    page.grab().save(str(tmp_path / "training_a.png"))

    document.load(b)
    page.grab().save(str(tmp_path / "training_b.png"))
    assert page.history.rows == [] and page.history.table.rowCount() == 0
    assert page.curves.runs == {} and page.curves.primary is None
    assert page.curves.point_count("train_loss") == 0
    assert not page.error.isVisible()
    assert page.progress.bar.value() == 0 and page.progress.bar.format() == "idle"
    assert "20260101" not in page.status.text() and page.status.text() == "No run yet."
    assert page.tradeoff.points == []

    document.load(a)  # back to A: its newest run again, nothing of B's
    assert page.curves.primary == runs_a[0] and len(page.history.rows) == 3


def test_evaluation_clears_the_previous_projects_results(qtbot, two_projects, tmp_path):
    a, b = two_projects
    run_dir = os.path.abspath(runs.list_runs(runs.results_root(a))[1])
    fake_regression_evaluation(run_dir)
    document = ProjectDocument()
    document.load(a)
    page = _page(qtbot, EvaluationPage, document)
    page.select_run(run_dir)
    assert page.metrics is not None and "MAE" in page.regression.stats.text()
    page.show_error("a message about A's evaluation")
    page.grab().save(str(tmp_path / "evaluation_a.png"))

    document.load(b)
    page.grab().save(str(tmp_path / "evaluation_b.png"))
    assert page.run_combo.count() == 0
    assert page.state.text().startswith("No trained run yet")
    assert page.metrics is None and page.summary.text() == ""
    assert page.regression.stats.text() == ""
    xs, _ = page.regression.scatter.getData()
    assert xs is None or len(xs) == 0
    assert page.samples.rowCount() == 0 and page.shown.text() == ""
    assert not page.error.isVisible()


def test_dataset_clears_the_previous_projects_histograms(qtbot, tmp_path):
    a = copy_digits(str(tmp_path / "a"))
    b = copy_digits(str(tmp_path / "b"))
    from PIL import Image

    Image.new("L", (12, 12)).save(os.path.join(os.path.dirname(b), "data", "big.png"))
    for split in ("train", "validation"):  # B's first image in each CSV is of the wrong size
        path = os.path.join(os.path.dirname(b), "data", f"{split}.csv")
        with open(path) as fh:
            lines = fh.read().splitlines()
        lines[1] = "big.png," + lines[1].split(",")[1]
        with open(path, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    document = ProjectDocument()
    document.load(a)
    page = _page(qtbot, DatasetPage, document)
    page.wait_for_checks()
    wait_until(qtbot, lambda: all(s.loaded is not None for s in page.states.values()), 30)
    assert page.previews["training"].histogram_counts

    document.load(b)
    page.wait_for_checks()
    wait_until(qtbot, lambda: all(s.error for s in page.states.values()), 30)
    page.grab().save(str(tmp_path / "dataset_b.png"))
    for split in ("training", "validation"):
        assert page.previews[split].histogram_counts == {}, split
        assert "12x12" in page.previews[split].error.text()
