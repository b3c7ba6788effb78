"""Starting a large-batch study from the TRAINING tab's Study view (issue 30): the "Start study..." dialog's
command line and its refusals, a real short study run through the bridge whose points appear in the view,
Stop (as Ctrl-C: exit code 3, resumable) and the CLI's own message when it refuses."""
from __future__ import annotations

import os

import pytest
from PySide6.QtWidgets import QDialog

from tests.gui.support import copy_digits, wait_until

from nnconsole.app.bridge.study_process import StudyRequest, study_args
from nnconsole.app.config.commands import set_setting
from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.app.training import dialogs
from nnconsole.app.training.page import TrainingPage
from nnconsole.app.training.study_launch import StudyStartDialog, default_study_name
from nnconsole.app.training.study_view import StudyView
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.batch_study import BatchStudy, StudyPoint, read_study, study_dir, write_study

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/h30start"


def _shot(widget, name):
    os.makedirs(SHOTS, exist_ok=True)
    widget.grab().save(os.path.join(SHOTS, name))


def _document(project):
    document = ProjectDocument()
    document.load(project)
    return document


def test_the_dialog_builds_the_cli_command_from_its_values(qtbot, digits_project):
    document = _document(digits_project)
    dialog = StudyStartDialog(document.project)
    qtbot.addWidget(dialog)
    defaults = dialog.values()  # the project's defaults: 1,2,4,8 x none,linear, warm-up 0, the CLI's name
    assert study_args(digits_project, defaults) == [
        "study", "batch", os.path.abspath(digits_project), "--workers", "1,2,4,8", "--policy", "linear,none",
        "--warmup", "0", "--tolerance", "0.5", "--parallel", "1", "--study",
        default_study_name(document.project.name)]
    dialog.show()
    _shot(dialog, "start_dialog_defaults.png")
    dialog.workers.setText("4, 1,2")
    dialog.policies["sqrt"].setChecked(True)
    dialog.policies["none"].setChecked(False)
    dialog.warmups.setText("2,0")
    dialog.tolerance.setValue(1.25)
    dialog.epochs.setValue(3)
    dialog.parallel.setValue(2)
    dialog.name.setText("wide")
    dialog.accept()
    assert dialog.result() == QDialog.Accepted
    assert study_args(digits_project, dialog.request) == [
        "study", "batch", os.path.abspath(digits_project), "--workers", "1,2,4", "--policy", "linear,sqrt",
        "--warmup", "0,2", "--tolerance", "1.25", "--parallel", "2", "--epochs", "3", "--study", "wide"]


@pytest.mark.parametrize("field,text,words", [
    ("workers", "2,4", "include 1"), ("workers", "1,3x", "'3x' is not a whole number"),
    ("warmups", "0,-1", "outside 0..1000"), ("name", ".hidden", "--study '.hidden'"), ("policies", "", "tick at least")])
def test_a_bad_value_is_refused_in_the_dialog_which_stays_open(qtbot, digits_project, field, text, words):
    document = _document(digits_project)
    dialog = StudyStartDialog(document.project)
    qtbot.addWidget(dialog)
    dialog.show()
    if field == "policies":
        for box in dialog.policies.values():
            box.setChecked(False)
    else:
        getattr(dialog, field).setText(text)
    dialog.accept()
    assert dialog.isVisible() and dialog.request is None
    assert words in dialog.error.text()
    if field == "workers" and text == "2,4":
        _shot(dialog, "start_dialog_refused.png")


def test_an_unsaved_project_is_saved_then_its_study_runs_and_the_view_follows_it(qtbot, tmp_path, monkeypatch):
    """A real short study (1 epoch, workers 1,2 simulated, policy none): the edit is saved first, the view
    switches from an older study to the new one and shows its points complete, with a recommendation."""
    project = copy_digits(str(tmp_path / "digits"))
    old = study_dir(runs.results_root(project), "aaa-older")  # listed first: the view must leave it for the new one
    write_study(old, BatchStudy(name="aaa-older", project=project, per_worker_batch=32, points=[
        StudyPoint(workers=1, policy="none", warmup_epochs=0.0, logical_batch=32, state="queued")]))
    asked = []
    monkeypatch.setattr(dialogs, "confirm_save", lambda *a, **k: asked.append(a) or True)  # "yes, save"
    document = _document(project)
    page = TrainingPage(document)
    qtbot.addWidget(page)
    view = page.study
    view.resize(1100, 820)
    view.show()
    assert view.choice.currentText() == "aaa-older"
    set_setting(document, "config.max_epoch", 7)  # an unsaved edit: the CLI reads the file
    assert document.modified
    request = StudyRequest(workers=[1, 2], policies=["none"], epochs=1, name="quick")
    assert view.launch.start(request)
    assert len(asked) == 1 and not document.modified and "max_epoch: 7" in open(project).read()
    assert view.launch.stop_button.isEnabled() and not view.launch.start_button.isEnabled()
    wait_until(qtbot, lambda: not view.launch.process.is_running(), 240)
    assert view.launch.progress.text() == "Study complete: every point trained."
    wait_until(qtbot, lambda: len(view.points) == 2 and all(p.state == "complete" for p in view.points), 10)
    assert view.choice.currentText() == "quick"
    assert [(p.workers, p.policy, p.simulated) for p in view.points] == [(1, "none", False), (2, "none", True)]
    assert all(0.0 <= p.validation_error <= 1.0 for p in view.points)
    assert view.table.item(1, 8).text() == "complete" and view.recommendation is not None
    assert view.launch.start_button.isEnabled() and not view.launch.stop_button.isEnabled()
    _shot(view, "study_started_from_view_complete.png")


def test_stop_ends_the_study_as_ctrl_c_does_and_start_again_resumes(qtbot, digits_project):
    document = _document(digits_project)
    view = StudyView(document)
    qtbot.addWidget(view)
    view.resize(1100, 820)
    view.show()
    assert view.launch.start(StudyRequest(workers=[1, 2], policies=["none"], epochs=400, name="long"))
    wait_until(qtbot, lambda: view.study is not None and any(p.state == "running" for p in view.points), 120)
    _shot(view, "study_running.png")
    view.launch.stop_button.click()
    assert not view.launch.stop_button.isEnabled()
    code = view.launch.process.wait(120)
    assert code == ExitCode.STOPPED
    wait_until(qtbot, lambda: not view.launch.process.is_running(), 10)
    assert "Study stopped" in view.launch.progress.text()
    study = read_study(study_dir(runs.results_root(digits_project), "long"))
    assert [p.state for p in study.points] == ["stopped", "queued"]  # resumable: nothing marked complete
    _shot(view, "study_stopped.png")


def test_a_study_the_cli_refuses_shows_the_cli_message(qtbot, digits_project):
    document = _document(digits_project)
    view = StudyView(document)
    qtbot.addWidget(view)
    view.resize(1100, 600)
    view.show()
    assert view.launch.start(StudyRequest(workers=[1, 2], policies=["none"], parallel=512, name="toomany"))
    code = view.launch.process.wait(120)
    wait_until(qtbot, lambda: not view.launch.process.is_running(), 10)
    assert code == ExitCode.BAD_INPUT
    text = view.launch.progress.text()
    assert "Study failed (exit code 2)" in text and "--parallel 512" in text and "device(s)" in text
    _shot(view, "study_refused_by_cli.png")
