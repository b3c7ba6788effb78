"""EVALUATION tab: ``nnconsole evaluate`` in a QProcess on a real digits run, the confusion matrix, the
per-sample table and its filters, failures shown, saved evaluations reloaded, the regression view."""
from __future__ import annotations

import json
import os
import shutil

import pytest
from PySide6.QtCore import Qt

from tests.gui.support import copy_run, open_tab_page

from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.app.evaluation.page import EvaluationPage, create_page
from nnconsole.engine.metrics.results import evaluation_dir

pytestmark = pytest.mark.gui


def make_page(qtbot, project_path: str) -> EvaluationPage:
    return open_tab_page(qtbot, create_page, project_path)


@pytest.fixture
def evaluated(qtbot, trained_digits_run):
    """The page after evaluating the trained run's best model through the CLI (done once, then reloaded)."""
    project, run_dir = trained_digits_run
    page = make_page(qtbot, project)
    page.select_run(run_dir)
    page.model_combo.setCurrentText("best")
    if page.metrics is None:
        with qtbot.waitSignal(page.evaluation_loaded, timeout=120_000):
            assert page.evaluate()
    return page, run_dir


@pytest.mark.slow
def test_digits_evaluation_confusion_matrix_and_table(qtbot, evaluated):
    page, run_dir = evaluated
    m = page.metrics
    folder = evaluation_dir(run_dir, "best")
    assert page.folder == folder and os.path.isfile(os.path.join(folder, "samples.csv"))
    # the confusion matrix holds every validation sample once; accuracy is its trace over the total
    assert page.confusion.total() == 360
    assert m["accuracy"] == pytest.approx(page.confusion.trace() / 360)
    model = page.confusion.model
    assert model.rowCount() == model.columnCount() == 10
    assert sum(int(model.data(model.index(r, c))) for r in range(10) for c in range(10)) == 360
    # ... and matches the validation error the training run recorded for its best epoch
    with open(os.path.join(run_dir, "status.json")) as fh:
        best_error = json.load(fh)["best_validation_error"]
    assert 1.0 - m["accuracy"] == pytest.approx(best_error, abs=1e-6)
    assert "Accuracy" in page.summary.text() and f"{m['accuracy']:.2%}" in page.summary.text()
    assert page.per_class.value("macro avg", "F-measure") == f"{m['macro_f_measure']:.4f}"
    assert page.per_class.value("3", "Support") == str(sum(model.matrix[3]))

    samples = page.samples
    assert samples.rowCount() == 360 and page.filter.rowCount() == 360
    assert samples.headers[:6] == ["#", "Sample", "Label", "Prediction", "Correct", "Confidence"]
    assert samples.headers[6:] == [f"p({c})" for c in range(10)]
    pixmap = samples.data(samples.index(0, 1), Qt.DecorationRole)
    assert pixmap is not None and not pixmap.isNull()
    mistakes = 360 - page.confusion.trace()
    page.mistakes_only.setChecked(True)
    assert page.filter.rowCount() == mistakes
    assert all(r["label"] != r["prediction"] for r in page.shown_rows())
    page.mistakes_only.setChecked(False)

    # sorting by confidence is numeric
    page.table.sortByColumn(5, Qt.DescendingOrder)
    shown = [float(r["confidence"]) for r in page.shown_rows()]
    assert shown == sorted(shown, reverse=True)

    # clicking a confusion cell lists exactly those samples
    true_class, predicted = max(((t, p) for t in range(10) for p in range(10) if t != p),
                                key=lambda tp: model.matrix[tp[0]][tp[1]])
    page.confusion.cell_clicked.emit(true_class, predicted)
    rows = page.shown_rows()
    assert len(rows) == model.matrix[true_class][predicted]
    assert all(r["label"] == str(true_class) and r["prediction"] == str(predicted) for r in rows)
    assert f"{len(rows)} of 360 samples shown" in page.shown.text()
    assert bool(m["top_confusions"]) == (mistakes > 0)  # the check below must not be skipped silently
    if m["top_confusions"]:
        assert page.confusions.list.item(0).text().startswith(f"true {m['top_confusions'][0]['true']}")
        # the most frequent confusion comes first: the largest off-diagonal cell (ties: lowest true, predicted)
        top = m["top_confusions"][0]
        assert (top["true"], top["predicted"], top["count"]) == (
            true_class, predicted, model.matrix[true_class][predicted])


@pytest.mark.slow
def test_a_saved_evaluation_shows_without_running_the_engine(qtbot, evaluated):
    page, run_dir = evaluated
    project = page.document.path
    again = make_page(qtbot, project)
    again.select_run(run_dir)
    again.model_combo.setCurrentText("best")
    assert again.metrics is not None and again.confusion.total() == 360
    assert not again.command.is_running()
    again.model_combo.setCurrentText("final")  # not evaluated yet
    assert again.metrics is None and "Not evaluated yet" in again.state.text()


def test_an_engine_error_is_shown_in_the_tab(qtbot, trained_digits_run):
    project, run_dir = trained_digits_run
    broken = copy_run(run_dir, "19990101_000000")
    try:
        os.unlink(os.path.join(broken, "parameters_best.h5"))
        shutil.rmtree(os.path.join(broken, "evaluation"), ignore_errors=True)
        page = make_page(qtbot, project)
        page.select_run(broken)
        page.model_combo.setCurrentText("best")
        with qtbot.waitSignal(page.evaluation_failed, timeout=120_000) as blocker:
            page.evaluate()
        assert "use --model final" in blocker.args[0]
        assert page.error.isVisible() and "parameters_best.h5" in page.error.text()
        assert page.evaluate_button.isEnabled()
    finally:
        shutil.rmtree(broken, ignore_errors=True)


def test_progress_and_the_folder_shown_come_from_the_events(qtbot, trained_digits_run, tmp_path, monkeypatch):
    """A stand-in for ``nnconsole evaluate`` announces progress in its --events file (its last argument), waits for
    the test, then names a folder other than the default: the state line counts the samples, the page shows that
    folder. Its terminal lines say otherwise; nothing reads them."""
    import nnconsole.app.bridge.engine_process as engine_process

    project, run_dir = trained_digits_run
    other = copy_run(run_dir, "19990102_000000")
    try:
        folder = os.path.join(other, "evaluation", "named-by-the-event")
        os.makedirs(folder)
        metrics = {"task": "regression", "count": 1, "outputs": 1, "mae": 0.5, "rmse": 0.5, "r2": 0.0, "bias": 0.5,
                   "max_abs_error": 0.5, "model": "best", "run_dir": other, "dataset": ""}
        with open(os.path.join(folder, "metrics.json"), "w") as fh:
            json.dump(metrics, fh)
        with open(os.path.join(folder, "samples.csv"), "w") as fh:
            fh.write("index,source,target,prediction,abs_error\n0,row 1,1.0,1.5,0.5\n")
        go = tmp_path / "go"
        script = ("for last; do :; done; "
                  "echo '{\"event\": \"evaluate_progress\", \"done\": 3, \"total\": 6}' >> \"$last\"; "
                  f"echo 'evaluation: {evaluation_dir(other, 'best')}'; "
                  f"while [ ! -e '{go}' ]; do sleep 0.05; done; "
                  f"echo '{{\"event\": \"evaluate_finished\", \"output\": \"{folder}\"}}' >> \"$last\"")
        monkeypatch.setattr(engine_process, "engine_program", lambda: ("/bin/sh", ["-c", script, "sh"]))
        page = make_page(qtbot, project)
        page.select_run(other)
        page.model_combo.setCurrentText("best")
        assert page.evaluate()
        qtbot.waitUntil(lambda: page.state.text().endswith("... 3/6 samples"), timeout=30_000)
        assert page.state.text().startswith("Evaluating the best model of 19990102_000000")
        with qtbot.waitSignal(page.evaluation_loaded, timeout=30_000) as loaded:
            go.touch()
        assert loaded.args == [folder] and page.folder == folder and page.metrics["task"] == "regression"
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_an_evaluation_that_names_no_folder_is_an_error(qtbot, trained_digits_run, monkeypatch):
    import nnconsole.app.bridge.engine_process as engine_process

    project, run_dir = trained_digits_run
    monkeypatch.setattr(engine_process, "engine_program", lambda: ("/bin/sh", ["-c", "echo 'evaluation: x'", "sh"]))
    page = make_page(qtbot, project)
    page.select_run(run_dir)
    with qtbot.waitSignal(page.evaluation_failed, timeout=30_000) as failed:
        assert page.evaluate()
    assert "without naming its evaluation folder" in failed.args[0] and page.error.isVisible()


def test_regression_results_show_statistics_and_a_scatter(qtbot, tmp_path):
    folder = tmp_path / "evaluation" / "final"
    folder.mkdir(parents=True)
    metrics = {"task": "regression", "count": 3, "outputs": 1, "mae": 0.5, "rmse": 0.6, "r2": 0.7, "bias": 0.1,
               "max_abs_error": 1.0, "model": "final", "run_dir": str(tmp_path), "dataset": ""}
    (folder / "metrics.json").write_text(json.dumps(metrics))
    (folder / "samples.csv").write_text("index,source,target,prediction,abs_error\n"
                                        "0,row 1,1.0,1.5,0.5\n1,row 2,2.0,2.0,0\n2,row 3,3.0,2.0,1.0\n")
    page = EvaluationPage(ProjectDocument(), None)
    qtbot.addWidget(page)
    page.load(str(folder))
    assert page.left.currentWidget() is page.regression
    assert "MAE" in page.regression.stats.text() and "0.6" in page.regression.stats.text()
    x, y = page.regression.scatter.getData()
    assert list(x) == [1.0, 2.0, 3.0] and list(y) == [1.5, 2.0, 2.0]
    assert "RMSE 0.6" in page.summary.text()
    assert page.samples.headers == ["#", "Source", "Target", "Prediction", "Abs error"]
    assert not page.mistakes_only.isEnabled()
