"""Issue 30, the TRAINING tab's Study view: a large-batch study's study.json (fabricated points written with
``write_study``) shown as error against logical batch per policy, time per epoch per worker count, a table of
points, the recommendation sentence and "Apply to CONFIG" as one undoable edit; the view follows the file as it
changes, lists the project's studies and names a damaged study.json instead of failing."""
from __future__ import annotations

import math
import os

import pytest

from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.app.training.study_view import StudyView
from nnconsole.engine.plan.batch_recommendation import recommend
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.batch_study import (STUDY_FILE, BatchStudy, StudyPoint, read_study, study_dir,
                                                 write_study)
from tests.gui.support import fake_run, wait_until

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/h30gui"
B = 32  # per-worker batch


def _shot(widget, name):
    os.makedirs(SHOTS, exist_ok=True)
    widget.grab().save(os.path.join(SHOTS, name))


def _point(workers, policy, warmup, error, state="complete", run_dir="", predicted=None, measured=None):
    lr = 0.01 * {"linear": workers, "sqrt": math.sqrt(workers), "none": 1}[policy]
    return StudyPoint(workers=workers, policy=policy, warmup_epochs=warmup, logical_batch=B * workers,
                      learning_rate=lr, simulated=workers > 1, state=state, run_dir=run_dir,
                      validation_error=error, predicted_epoch_seconds=predicted if predicted is not None else
                      4.0 / workers + 0.3 * math.log2(workers), measured_epoch_seconds=measured)


def _study(project, points, name="digits-batch", recommendation=True):
    study = BatchStudy(name=name, project=project, per_worker_batch=B, tolerance=0.005, epochs=3, points=points)
    if recommendation:
        study.recommendation = recommend(points, study.tolerance)
    folder = study_dir(runs.results_root(project), name)
    write_study(folder, study)
    return folder


def _full_points(run_dir=""):
    """Error rises with the logical batch without scaling; linear + warm-up holds it to 16 workers."""
    points = []
    for w, none, linear, warm in ((1, .040, .040, .041), (2, .046, .041, .040), (4, .060, .043, .042),
                                  (8, .085, .048, .043), (16, .120, .062, .044), (32, .170, .090, .058)):
        points += [_point(w, "none", 0, none, run_dir=run_dir, measured=3.9 * w if w <= 4 else None),
                   _point(w, "linear", 0, linear), _point(w, "linear", 2, warm)]
    return points


def _view(qtbot, project):
    document = ProjectDocument()
    document.load(project)
    view = StudyView(document)
    qtbot.addWidget(view)
    view.resize(1100, 820)
    view.show()
    return view, document


def _cells(view):
    t = view.table
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def test_study_shows_lines_per_policy_points_times_and_the_recommendation(qtbot, digits_project):
    _study(digits_project, _full_points())
    view, _doc = _view(qtbot, digits_project)
    assert [view.choice.itemText(i) for i in range(view.choice.count())] == ["digits-batch"]
    plot = view.plot
    assert sorted(plot.lines) == [("linear", 0.0), ("linear", 2.0), ("none", 0.0)]
    x, y = plot.lines[("none", 0.0)].getData()
    assert list(x) == pytest.approx([math.log2(B * w) for w in (1, 2, 4, 8, 16, 32)])  # log2 of the logical batch
    assert list(y) == pytest.approx([.040, .046, .060, .085, .120, .170])
    ticks = plot.errors.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert [label for _x, label in ticks] == [str(B * w) for w in (1, 2, 4, 8, 16, 32)]
    worker_ticks = plot.times.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert [label for _x, label in worker_ticks] == ["1", "2", "4", "8", "16", "32"]
    assert len(view.points) == 18 and view.table.rowCount() == 18
    row = next(r for r in _cells(view) if r[0].startswith("16 ") and r[2] == "linear" and r[3] == "2")
    assert row == ["16 (simulated)", "512", "linear", "2", "0.16", "4.40%", f"{4.0 / 16 + 1.2:.3g}", "", "complete"]
    rec = view.recommendation
    assert (rec.workers, rec.policy, rec.warmup_epochs) == (16, "linear", 2.0)  # 4.4% is within 0.5 point of 4.0%
    assert view.recommendation_label.text().startswith("Recommendation: 16 workers (logical batch 512)")
    assert view.apply_button.isEnabled()
    assert plot.tolerance_line.value() == pytest.approx(0.045)
    bold = [r for r in range(view.table.rowCount()) if view.table.item(r, 0).font().bold()]
    assert [view.points[r].key for r in bold] == ["w16-linear-warmup2"]  # the recommended point's row
    _shot(view, "study_view_digits_1_to_32.png")


def test_apply_to_config_sets_workers_scaling_and_warmup_as_one_undoable_edit(qtbot, digits_project):
    _study(digits_project, _full_points())
    view, document = _view(qtbot, digits_project)
    document.set_setting("multi_gpu.simulate_workers", 8)
    document.undo_stack.clear()
    before = {k: document.get_setting(k) for k in ("multi_gpu.workers", "multi_gpu.scaling",
                                                    "multi_gpu.warmup_epochs", "multi_gpu.simulate_workers")}
    assert before == {"multi_gpu.workers": 1, "multi_gpu.scaling": "linear", "multi_gpu.warmup_epochs": 0.0,
                      "multi_gpu.simulate_workers": 8}
    assert view.apply() is True
    assert document.project.multi_gpu.workers == 16
    assert document.project.multi_gpu.scaling == "linear"
    assert document.project.multi_gpu.warmup_epochs == 2.0
    assert document.project.multi_gpu.simulate_workers == 0  # the plan is the recommended real one
    assert document.undo_stack.count() == 1  # one edit
    assert document.undo_stack.undoText() == "Apply the batch study's recommendation"
    assert document.modified
    document.undo_stack.undo()
    assert {k: document.get_setting(k) for k in before} == before
    document.undo_stack.redo()
    assert document.project.multi_gpu.workers == 16
    assert view.apply() is False and "already set" in view.message.text()


def test_the_view_follows_the_study_file_as_points_finish(qtbot, digits_project):
    points = [_point(1, "none", 0, None, state="running"), _point(2, "none", 0, None, state="queued"),
              _point(4, "none", 0, None, state="queued")]
    folder = _study(digits_project, points, recommendation=False)
    view, _doc = _view(qtbot, digits_project)
    assert view.plot.lines == {} and view.recommendation is None and not view.apply_button.isEnabled()
    assert "needs a complete 1-worker point" in view.recommendation_label.text()
    assert [r[-1] for r in _cells(view)] == ["running", "queued", "queued"]
    _shot(view, "study_view_running.png")
    points[0].state, points[0].validation_error = "complete", 0.05
    points[1].state, points[1].validation_error = "running", 0.051
    _study(digits_project, points, recommendation=False)  # the CLI rewrites the whole file
    wait_until(qtbot, lambda: view.recommendation is not None, timeout=10)  # the poll saw the change
    assert [r[-1] for r in _cells(view)] == ["complete", "running", "queued"]
    assert view.recommendation_label.text().startswith("Recommendation so far: 1 worker")  # the running point waits
    x, _y = view.plot.lines[("none", 0.0)].getData()
    assert len(x) == 2  # the running point is drawn (hollow) with its error so far
    assert read_study(folder).recommendation is None  # the view never writes the study


def test_a_damaged_study_file_is_named_and_the_other_studies_still_show(qtbot, digits_project):
    _study(digits_project, _full_points(), name="a-good")
    bad = _study(digits_project, _full_points(), name="b-bad")
    view, _doc = _view(qtbot, digits_project)
    assert view.choice.count() == 2 and view.choice.currentText() == "b-bad"
    with open(os.path.join(bad, STUDY_FILE), "w") as fh:
        fh.write('{"name": "b-bad", "points": [{"workers": ')  # cut short
    wait_until(qtbot, lambda: view.study is None, timeout=10)
    assert "cannot be read" in view.summary.text() and "b-bad" in view.summary.text()
    assert view.table.rowCount() == 0 and view.plot.lines == {} and not view.apply_button.isEnabled()
    _shot(view, "study_view_damaged.png")
    view.choice.setCurrentIndex(view.choice.findText("a-good"))
    assert view.study is not None and view.study.name == "a-good" and view.table.rowCount() == 18


def test_a_project_without_studies_says_how_to_start_one(qtbot, digits_project):
    view, _doc = _view(qtbot, digits_project)
    assert view.study is None and "nnconsole study batch" in view.summary.text()
    assert view.choice.isHidden() and not view.apply_button.isEnabled()


def test_show_run_asks_the_tab_for_the_point_run(qtbot, digits_project):
    run_dir = fake_run(digits_project, "point_w1", best_validation_error=0.04)
    _study(digits_project, _full_points(run_dir=run_dir))
    view, _doc = _view(qtbot, digits_project)
    asked = []
    view.run_requested.connect(asked.append)
    row = next(r for r, p in enumerate(view.points) if p.policy == "none")
    view.table.selectRow(row)
    view.open_button.click()
    assert asked == [run_dir]
    queued_row = next(r for r, p in enumerate(view.points) if p.policy == "linear")
    assert view.open_run(queued_row) is None and "no run yet" in view.message.text()


def test_training_tab_has_the_batch_study_view_beside_the_curves(qtbot, digits_project):
    from nnconsole.app.training.page import create_page
    from tests.gui.support import open_tab_page

    run_dir = fake_run(digits_project, "point_w1", best_validation_error=0.04)
    _study(digits_project, _full_points(run_dir=run_dir))
    page = open_tab_page(qtbot, create_page, digits_project)
    views = page.views
    assert [views.tabText(i) for i in range(views.count())] == ["Learning curves", "Batch study"]
    views.setCurrentWidget(page.study)
    assert page.study.study is not None and page.study.table.rowCount() == 18
    _shot(page, "training_tab_batch_study.png")
    row = next(r for r, p in enumerate(page.study.points) if p.policy == "none" and p.workers == 1)
    assert page.study.open_run(row) == run_dir
    assert views.currentIndex() == 0 and page.curves.primary == run_dir  # its curves, in the curves view
    assert page.log_pane.run_dir == run_dir
