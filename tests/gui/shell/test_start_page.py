"""The start page (issue 19): templates, recent projects and recent runs on first start; File > New
Empty Project; the last project reopened on start when the option is on."""
from __future__ import annotations

import os

import pytest
from PySide6.QtCore import Qt

from nnconsole.app.shell import dialogs
from nnconsole.app.shell import settings as app_settings
from nnconsole.engine.rundir import store as runs

pytestmark = pytest.mark.gui


def _texts(widget):
    return [widget.item(i).text() for i in range(widget.count())]


def _fake_run(project: str, name: str, status: str, started: float, best=None) -> str:
    run_dir = os.path.join(runs.results_root(project), name)
    os.makedirs(run_dir)
    runs.write_status(run_dir, runs.StatusRecord(status=status, started=started, best_validation_error=best))
    return run_dir


def test_first_start_shows_templates_and_empty_recent_lists(window):
    window.start()
    assert window.stack.currentWidget() is window.start_page
    page = window.start_page
    assert page.templates.count() >= 4
    names = [page.templates.item(i).data(Qt.UserRole) for i in range(page.templates.count())]
    assert names[0] == "digits_cnn" and "iris_mlp" in names
    assert "No recent projects" in _texts(page.projects)[0]
    assert "No runs yet" in _texts(page.runs)[0]
    assert page.reopen.isChecked()  # the option's default


def test_recent_projects_and_runs_are_listed_newest_first_and_open(window, template_project, settings):
    older = _fake_run(template_project, "20260101_000000", "finished", 1_000.0, best=0.125)
    newer = _fake_run(template_project, "20260102_000000", "stopped", 2_000.0)
    settings.add_recent_project(template_project)
    settings.set(app_settings.REOPEN_LAST_PROJECT, False)
    window.start()
    page = window.start_page
    assert window.stack.currentWidget() is page and window.document.path is None
    assert _texts(page.projects) == ["digits/project.yaml"]
    rows = _texts(page.runs)
    assert rows[0].startswith("digits / 20260102_000000   stopped")
    assert rows[1].startswith("digits / 20260101_000000   finished, best error 0.1250")
    assert page.runs.item(1).data(Qt.UserRole).run_dir == older
    assert page.open_run(page.runs.item(0).data(Qt.UserRole))
    assert window.document.path == template_project
    assert window.stack.currentWidget() is window.tabs and window.tabs.currentWidget() is window.pages["training"]
    assert newer


def test_last_project_reopens_on_start_unless_the_option_is_off(make_window, template_project, settings):
    settings.add_recent_project(template_project)
    first = make_window()
    first.start()
    assert first.document.path == template_project and first.stack.currentWidget() is first.tabs
    second = make_window()
    second.start_page.reopen.setChecked(False)  # the start page's check box is the setting
    assert settings.get(app_settings.REOPEN_LAST_PROJECT) is False
    second.start()
    assert second.document.path is None and second.stack.currentWidget() is second.start_page


def test_a_vanished_last_project_leaves_the_start_page(make_window, template_project, settings):
    settings.add_recent_project(template_project)
    os.remove(template_project)
    window = make_window()
    window.start()  # show_project_error would fail the test: a vanished file is simply forgotten
    assert window.stack.currentWidget() is window.start_page and settings.recent_projects() == []


def test_new_empty_project_replaces_the_open_one(window, template_project):
    assert window.files.open_path(template_project)
    window.show_start_page()
    window.actions_by_name["new_empty"].trigger()
    assert window.document.path is None and window.document.project.network.layers == []
    assert not window.document.modified and window.windowTitle() == "untitled — nnconsole"
    assert window.stack.currentWidget() is window.tabs and window.tabs.currentWidget() is window.edit_page
    assert not window.edit_page.scene.nodes()


def test_new_empty_project_asks_about_unsaved_changes_first(window, template_project, monkeypatch):
    assert window.files.open_path(template_project)
    window.edit_page.editor.add_layer("ReLU", after="fc2")
    monkeypatch.setattr(dialogs, "ask_save_changes", lambda parent, name: dialogs.CANCEL)
    window.actions_by_name["new_empty"].trigger()
    assert window.document.path == template_project and "ReLU" in window.document.project.network.names()


def test_a_template_on_the_start_page_opens_the_chooser_on_it(window, tmp_path, monkeypatch):
    asked = []

    def choose(parent, start_dir, template=None):
        asked.append(template)
        return template, str(tmp_path / "mine")

    monkeypatch.setattr(dialogs, "choose_template", choose)
    window.start()
    page = window.start_page
    row = next(i for i in range(page.templates.count()) if page.templates.item(i).data(Qt.UserRole) == "iris_mlp")
    page.templates.itemActivated.emit(page.templates.item(row))
    assert asked == ["iris_mlp"]
    assert window.document.path == str(tmp_path / "mine" / "project.yaml")
    assert window.stack.currentWidget() is window.tabs


def test_start_page_is_reachable_from_the_view_menu(window, template_project):
    assert window.files.open_path(template_project)
    window.actions_by_name["start_page"].trigger()
    assert window.stack.currentWidget() is window.start_page
    assert _texts(window.start_page.projects) == ["digits/project.yaml"]  # refreshed when shown
