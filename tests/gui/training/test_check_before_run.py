"""Check before Run (issue 19): the engine's checks run in the GUI before launch; a project with problems
starts no process and makes no run; each problem listed goes to its layer (EDIT), dataset (DATASET) or
field (CONFIG)."""
from __future__ import annotations

import os

import pytest

from tests.gui.support import copy_digits, wait_until

from nnconsole.app.bridge import engine_process
from nnconsole.app.training import preflight
from nnconsole.engine.project.errors import Problem

pytestmark = pytest.mark.gui
TABS = ("edit", "dataset", "config", "training")


def broken_copy(tmp_path, old: str, new: str) -> str:
    project = copy_digits(str(tmp_path / "digits"))
    with open(project) as fh:
        text = fh.read()
    assert old in text
    with open(project, "w") as fh:
        fh.write(text.replace(old, new, 1))
    return project


def run_refused(qtbot, make_window, project, monkeypatch):
    """Open ``project`` in a window, press Run; returns (window, training page) once the check refused it."""
    started = []
    monkeypatch.setattr(engine_process, "start_detached", lambda *a, **k: started.append(a))
    window = make_window(tab_keys=TABS)
    assert window.files.open_path(project, ask_save=False)
    window.show()
    page = window.pages["training"]
    assert page.start_run()
    wait_until(qtbot, lambda: page._pending_run is None, 60)
    assert started == []  # no engine process
    assert not os.path.exists(os.path.join(os.path.dirname(project), "results"))  # no (failed) run
    assert not page.problems.isHidden() and page.run_button.isEnabled()
    assert "Not run" in page.status.text()
    return window, page


def activate(page, index: int = 0) -> None:
    page.problems.list.itemActivated.emit(page.problems.list.item(index))


@pytest.mark.slow  # a main window with four tabs and the digits dataset's full check
def test_a_shape_error_is_listed_and_goes_to_its_layer(qtbot, make_window, tmp_path, monkeypatch):
    project = broken_copy(tmp_path, "kernel: [3, 3], pad: [1, 1]", "kernel: [30, 30], pad: [1, 1]")
    window, page = run_refused(qtbot, make_window, project, monkeypatch)
    first = page.problems.problems[0]
    assert first.path == "network.layers[1]" and "conv1" in first.message
    assert "conv1" in page.problems.list.item(0).text()
    activate(page)
    assert window.tabs.currentWidget() is window.pages["edit"]
    assert window.pages["edit"].selected_layers() == ["conv1"]


@pytest.mark.slow  # a main window with four tabs and the digits dataset's full check
def test_a_dataset_without_the_networks_variable_goes_to_the_dataset(qtbot, make_window, tmp_path, monkeypatch):
    project = broken_copy(tmp_path, "variable: x}", "variable: pixels}")
    window, page = run_refused(qtbot, make_window, project, monkeypatch)
    paths = [p.path for p in page.problems.problems]
    assert "datasets.training" in paths and "pixels" in page.problems.list.item(paths.index("datasets.training")).text()
    activate(page, paths.index("datasets.training"))
    assert window.tabs.currentWidget() is window.pages["dataset"]
    wait_until(qtbot, lambda: window.focusWidget() is window.pages["dataset"].path_edits["training"], 5)


@pytest.mark.slow  # a main window with four tabs and the digits dataset's full check
def test_image_sizes_that_do_not_fit_the_input_are_found_before_the_run(qtbot, make_window, tmp_path, monkeypatch):
    project = broken_copy(tmp_path, "shape: [1, 8, 8]", "shape: [1, 12, 12]")
    _window, page = run_refused(qtbot, make_window, project, monkeypatch)
    problem = next(p for p in page.problems.problems if p.path.startswith("datasets."))
    assert "12" in problem.message, problem


@pytest.mark.slow  # a main window with four tabs and the digits dataset's full check
def test_a_bad_setting_goes_to_its_field(qtbot, make_window, tmp_path, monkeypatch):
    project = broken_copy(tmp_path, "batch_size: 32", "batch_size: 0")
    window, page = run_refused(qtbot, make_window, project, monkeypatch)
    paths = [p.path for p in page.problems.problems]
    assert paths[0] == "config.batch_size"
    activate(page)
    assert window.tabs.currentWidget() is window.pages["config"]
    field = window.pages["config"].findChild(type(window.focusWidget()), "field_config.batch_size")
    wait_until(qtbot, lambda: window.focusWidget() is not None and window.focusWidget() is field, 5)


@pytest.mark.slow  # a main window with four tabs and the digits dataset's full check
def test_a_sound_project_goes_on_to_the_engine(qtbot, make_window, tmp_path, monkeypatch):
    project = copy_digits(str(tmp_path / "digits"))
    calls = []
    window = make_window(tab_keys=TABS)
    assert window.files.open_path(project, ask_save=False)
    page = window.pages["training"]
    monkeypatch.setattr(page.controller, "start_training", lambda path, workers, allow_outside_data=False, **_kw:
                        calls.append((path, workers, allow_outside_data)))
    assert page.start_run()
    assert not page.start_run()  # one check at a time: a second click does not start a second run
    wait_until(qtbot, lambda: bool(calls), 60)
    assert calls == [(os.path.abspath(project), page.workers.value(), False)] and page.problems.isHidden()


def test_targets_of_problem_paths():
    names = ["x", "conv1"]
    assert preflight.target_of(Problem("network.layers[1].params.kernel", "m"), names) == preflight.Target(
        "edit", layer="conv1")
    assert preflight.target_of(Problem("network.layers[9]", "m"), names) == preflight.Target("edit")
    assert preflight.target_of(Problem("network.layers", "m"), names).tab == "edit"
    assert preflight.target_of(Problem("datasets.validation", "m"), names) == preflight.Target(
        "dataset", field="datasets.validation")
    assert preflight.target_of(Problem("optimizer.learning_rate", "m"), names) == preflight.Target(
        "config", field="optimizer.learning_rate")
    assert preflight.target_of(Problem("", "m"), names) == preflight.Target("config")


def test_an_unreadable_project_is_a_problem_not_a_traceback(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("network: [unclosed\n")
    problems = preflight.check_project(str(path))
    assert problems and preflight.blocking(problems)
    assert preflight.blocking(preflight.check_project(str(tmp_path / "missing.yaml")))
