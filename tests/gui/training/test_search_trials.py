"""Issue 29, the TRAINING tab's share: a search's trials (ordinary runs tagged by trial.json) in a table with their
parameters, error, multiply-adds and state, on the trade-off graph with the Pareto front as a line, and "Open as
project" for any trial, into a new folder and never over an existing one."""
from __future__ import annotations

import os

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit

from nnconsole.app.training.history import collect_runs
from nnconsole.app.training.page import create_page
from nnconsole.app.training.search_trials import SearchTrials
from nnconsole.engine.project.io import load_project, save_project
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RESOLVED_FILE
from tests.gui.support import fake_run, open_tab_page
from tests.support.runs import search_trial_run

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/searchgui"
LR = "optimizer.learning_rate"


def _trials(project):
    """Five trials of a search and one ordinary run: complete, pruned, killed, recorded running but finished."""
    made = {
        0: search_trial_run(project, 0, {LR: 0.01}, 0.10, 400_000),
        1: search_trial_run(project, 1, {LR: 0.5}, 0.60, 100_000, state="pruned", status="stopped"),
        2: search_trial_run(project, 2, {LR: 0.001}, 0.05, 800_000),
        3: search_trial_run(project, 3, {LR: 0.002}, None, 300_000, state=None, status="running"),  # search killed
        4: search_trial_run(project, 4, {LR: 0.03}, 0.20, 200_000, state="running"),  # ended as the search died
    }
    fake_run(project, "ordinary_run", best_validation_error=0.3, total_macs=150_000)
    return made


def _shot(widget, name):
    os.makedirs(SHOTS, exist_ok=True)
    widget.grab().save(os.path.join(SHOTS, name))


def test_trials_table_lists_each_trial_with_parameters_error_cost_and_state(qtbot, digits_project):
    _trials(digits_project)
    panel = SearchTrials()
    qtbot.addWidget(panel)
    panel.set_rows(collect_runs(runs.results_root(digits_project)))
    table = panel.table
    cells = [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]
    assert [row[0] for row in cells] == ["0", "1", "2", "3", "4"]  # the ordinary run is no trial
    assert cells[0] == ["0", "learning_rate=0.01", "0.1000", "400,000", "complete"]
    assert cells[1][4] == "pruned" and cells[1][2] == "0.6000"
    assert cells[3][4] == "failed" and cells[3][2] == ""  # its run's process is gone: the search was killed
    assert cells[4][4] == "complete"  # recorded running, its run finished: the run's own word
    assert not panel.isHidden() and "5" in panel.summary.text()


def test_a_project_without_trials_shows_no_trials_panel(qtbot, digits_project):
    fake_run(digits_project, "ordinary_run", best_validation_error=0.3, total_macs=150_000)
    page = open_tab_page(qtbot, create_page, digits_project)
    assert page.trials.isHidden() and page.trials.trials == []


def test_trials_are_on_the_tradeoff_graph_with_the_pareto_front_as_a_line(qtbot, digits_project):
    _trials(digits_project)
    page = open_tab_page(qtbot, create_page, digits_project)
    qtbot.waitUntil(lambda: page.trials.table.rowCount() == 5)
    plot = page.tradeoff
    assert "trial 0" in plot.names and "ordinary_run" in plot.names
    front = [plot.names[i] for i in plot.pareto]
    # cost, error: trial 1 (1e5, .6), ordinary (1.5e5, .3), trial 4 (2e5, .2), trial 0 (4e5, .1), trial 2 (8e5, .05)
    assert front == ["trial 1", "ordinary_run", "trial 4", "trial 0", "trial 2"]
    xs, ys = plot.front.getData()
    assert list(xs) == sorted(xs) and len(xs) == 5
    assert plot.front.opts["pen"] is not None and plot.front.opts["pen"].style() != 0  # drawn as a line
    _shot(page, "training_trials.png")


def _snapshot_lr(run_dir, lr):
    path = os.path.join(run_dir, RESOLVED_FILE)
    project = load_project(path)
    project.optimizer.learning_rate = lr
    save_project(project, path, backup=False)


def test_open_as_project_writes_the_trials_project_to_a_new_folder_and_opens_it(qtbot, digits_project, tmp_path):
    made = _trials(digits_project)
    _snapshot_lr(made[2], 0.00123)
    opened = []
    panel = SearchTrials(opened.append)
    qtbot.addWidget(panel)
    panel.set_rows(collect_runs(runs.results_root(digits_project)))
    panel.select(2)
    target = str(tmp_path / "best_trial")
    panel.choose_folder = lambda suggested: target  # the folder dialog is answered in the next test
    path = panel.open_selected()
    assert path == os.path.join(target, "project.yaml") and opened == [path]
    assert load_project(path).optimizer.learning_rate == pytest.approx(0.00123, rel=1e-9)
    # Once more into the same folder: refused, the project there untouched.
    before = open(path, "rb").read()
    panel.select(0)
    assert panel.open_selected() is None and "already exists" in panel.message
    assert open(path, "rb").read() == before and opened == [path]


def test_open_as_project_asks_for_the_folder_in_a_real_dialog(qtbot, digits_project, tmp_path):
    _trials(digits_project)
    opened = []
    panel = SearchTrials(opened.append)
    qtbot.addWidget(panel)
    panel.show()
    panel.set_rows(collect_runs(runs.results_root(digits_project)))
    panel.select(0)
    target = str(tmp_path / "from_dialog")
    answered = []

    def answer():
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QFileDialog):
            QTimer.singleShot(100, answer)
            return
        answered.append(dialog.windowTitle())
        dialog.findChild(QLineEdit, "fileNameEdit").setText(target)  # typed in the dialog's name field
        dialog.accept()

    QTimer.singleShot(100, answer)
    path = panel.open_selected()
    assert answered and "new folder" in answered[0]
    assert path == os.path.join(target, "project.yaml") and os.path.isfile(path) and opened == [path]


def test_a_duplicate_trial_is_listed_as_the_earlier_trial_it_repeats(qtbot, digits_project):
    """The search does not train a candidate it has trained (trial.json's ``duplicates``): the table still lists
    the duplicate's number, with the earlier trial's values, and says whose they are."""
    from nnconsole.engine.rundir.trials import read_trial, write_trial

    made = _trials(digits_project)
    tags = read_trial(made[0])
    write_trial(made[0], dict(tags, duplicates=[5, 7, "x", True, 0]))  # foreign entries and itself are ignored
    panel = SearchTrials()
    qtbot.addWidget(panel)
    panel.set_rows(collect_runs(runs.results_root(digits_project)))
    cells = {panel.table.item(r, 0).text(): [panel.table.item(r, c).text() for c in range(5)]
             for r in range(panel.table.rowCount())}
    assert sorted(cells, key=int) == ["0", "1", "2", "3", "4", "5", "7"]
    assert cells["5"] == ["5", "learning_rate=0.01", "0.1000", "400,000", "complete, as trial 0"]
    assert cells["0"][4] == "complete"
    assert panel.labels()[made[0]] == "trial 0"  # the graph names the run by the trial that trained it
