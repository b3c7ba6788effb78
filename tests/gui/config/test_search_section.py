"""Issue 29, the CONFIG tab's share: the project's search section edited as the other CONFIG fields (undoable,
saved with the project), the searched values as a table, the K x G prediction from ``nnconsole search --plan``
and the Search button, both through the bridge."""
from __future__ import annotations

import os
import shutil

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QScrollArea

from nnconsole.app.config.page import create_page
from nnconsole.engine.project.io import load_project, save_project
from nnconsole.engine.project.model import Search, SearchParam
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.trials import read_trial
from tests.gui.support import ROOT, open_tab_page, wait_until

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/searchgui"
TEMPLATE = os.path.join(ROOT, "project_templates", "digits_search")


def _digits_search(tmp_path, **search_fields) -> str:
    """A copy of the digits_search template (images linked), its search section changed by ``search_fields``."""
    dest = tmp_path / "digits_search"
    (dest / "data").mkdir(parents=True)
    shutil.copy2(os.path.join(TEMPLATE, "project.yaml"), dest / "project.yaml")
    for name in ("train.csv", "validation.csv"):
        shutil.copy2(os.path.join(TEMPLATE, "data", name), dest / "data" / name)
    os.symlink(os.path.join(TEMPLATE, "data", "images"), dest / "data" / "images")
    path = str(dest / "project.yaml")
    if search_fields:
        project = load_project(path)
        for key, value in search_fields.items():
            setattr(project.search, key, value)
        save_project(project, path, backup=False)
    return path


def _shot(widget, name):
    os.makedirs(SHOTS, exist_ok=True)
    widget.grab().save(os.path.join(SHOTS, name))


def test_the_search_section_is_edited_as_undoable_settings_and_saved(qtbot, digits_project):
    page = open_tab_page(qtbot, create_page, digits_project)
    section, document = page.search_section, page.document
    assert document.project.search is None and not section.enabled.isChecked() and section.body.isHidden()
    section.enabled.setChecked(True)
    assert document.project.search == Search() and not section.body.isHidden()
    section.trials.setValue(7)
    section.trials.setValue(12)  # one field typed twice: one undo step
    section.objectives.setCurrentText("error x multiply-adds")
    section.sampler.setCurrentText("nsga2")
    section.structure.setChecked(True)
    section.timeout.setValue(30.0)
    search = document.project.search
    assert (search.trials, search.objectives, search.sampler, search.structure, search.timeout_minutes) == \
        (12, ["error", "multiply_adds"], "nsga2", True, 30.0)
    for _ in range(4):
        document.undo_stack.undo()
    assert document.project.search.trials == 12 and document.project.search.objectives == ["error"]
    document.undo_stack.undo()
    assert document.project.search.trials == 20 and section.trials.value() == 20  # the form follows the undo
    document.undo_stack.redo()
    assert section.trials.value() == 12
    document.save()
    assert load_project(digits_project).search.trials == 12
    document.undo_stack.undo()
    document.undo_stack.undo()
    assert document.project.search is None and not section.enabled.isChecked()


def test_searched_values_table_commits_rows_that_read_and_marks_a_bad_cell(qtbot, digits_project):
    page = open_tab_page(qtbot, create_page, digits_project)
    section, document = page.search_section, page.document
    section.enabled.setChecked(True)
    section.add_param()
    assert document.project.search.params == [SearchParam("optimizer.learning_rate", "log_float", 1e-5, 1.0)]
    table = section.params
    table.item(0, 2).setText("abc")  # Low: not a number
    assert table.item(0, 2).background().color().name() == "#ffd0d0"
    assert document.project.search.params[0].low == 1e-5  # not committed
    table.item(0, 2).setText("1e-4")
    assert document.project.search.params[0].low == pytest.approx(1e-4)
    assert table.item(0, 2).background().style() == Qt.NoBrush
    section.add_param()
    table.item(1, 0).setText("config.batch_size")
    table.cellWidget(1, 1).setCurrentText("choice")
    table.item(1, 5).setText("16, 32, 64")
    assert document.project.search.params[1] == SearchParam("config.batch_size", "choice", 1e-5, 1.0, 1, [16, 32, 64])
    table.setCurrentCell(0, 0)
    section.remove_param()
    assert [p.target for p in document.project.search.params] == ["config.batch_size"]
    document.undo_stack.undo()
    assert [p.target for p in document.project.search.params] == ["optimizer.learning_rate", "config.batch_size"]
    qtbot.wait(50)
    page.findChild(QScrollArea, "config_forms").ensureWidgetVisible(section)
    _shot(section, "config_search_section.png")


def test_an_unsaved_project_is_neither_planned_nor_searched(qtbot, tmp_path):
    page = open_tab_page(qtbot, create_page, _digits_search(tmp_path))
    launch = page.search_launch
    assert launch.search_button.isEnabled() and launch.plan_button.isEnabled()
    page.search_section.trials.setValue(3)  # now the file on disk differs
    assert not launch.predict() and not launch.start()
    assert "Save the project first" in launch.message.text()
    assert not launch.process.is_running() and not launch.plan_command.is_running()


def test_k_x_g_prediction_comes_from_nnconsole_search_plan(qtbot, tmp_path):
    page = open_tab_page(qtbot, create_page, _digits_search(tmp_path))
    launch = page.search_launch
    assert launch.predict()
    wait_until(qtbot, lambda: not launch.plan_command.is_running(), timeout=120)
    text = launch.output.toPlainText()
    assert "K trials at once" in text and "G workers each" in text and "fastest" in text, text
    assert "20 trials of 5 epochs" in text
    _shot(launch, "config_search_plan.png")


def test_search_button_runs_nnconsole_search_and_its_trial_is_a_tagged_run(qtbot, tmp_path):
    path = _digits_search(tmp_path, trials=1, epochs=1, params=[SearchParam("optimizer.learning_rate", "log_float",
                                                                            1e-3, 1e-2)])
    page = open_tab_page(qtbot, create_page, path)
    launch = page.search_launch
    codes = []
    launch.process.finished.connect(codes.append)
    assert launch.start() and launch.stop_button.isEnabled() and not launch.search_button.isEnabled()
    try:
        wait_until(qtbot, lambda: bool(codes), timeout=300)
    finally:
        launch.process.stop()  # a search left behind by a failure (it is detached) stops with its trial
        launch.process.wait(60)
    assert codes == [0], launch.output.toPlainText()
    assert "study 'digits_search'" in launch.output.toPlainText()
    trials = [read_trial(d) for d in runs.list_runs(runs.results_root(path))]
    assert len(trials) == 1 and trials[0]["trial"] == 0 and trials[0]["state"] == "complete"
    assert 1e-3 <= trials[0]["params"]["optimizer.learning_rate"] <= 1e-2
    assert "budget is spent" in launch.message.text() and launch.search_button.isEnabled()
