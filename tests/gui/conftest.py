"""Fixtures for the desktop-console tests (every folder below: one per tab, shell, document, bridge): offscreen
Qt, throwaway settings and autosave folders, dialogs that fail the test unless a test answers them, windows
closed without prompts, and the digits template as a project, a document and one trained run. The functions
the tests share are in ``tests/gui/support.py``.
"""
from __future__ import annotations

import os
import shutil
import uuid

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import nnconsole.app  # noqa: E402,F401 - applies the PySide6 6.12 None-refcount guard first
from PySide6.QtCore import QSettings, QStandardPaths  # noqa: E402

QStandardPaths.setTestModeEnabled(True)  # ~/.qttest/...: never the user's real settings

from nnconsole.app.shell import dialogs  # noqa: E402
from nnconsole.app.shell.settings import Settings  # noqa: E402
from tests.gui.support import copy_digits, train_digits_run  # noqa: E402

DIALOGS = ("ask_save_changes", "ask_open_project", "ask_save_path", "ask_directory", "choose_template",
           "ask_recover_autosave", "show_error", "show_project_error", "show_about", "ask_import_target",
           "show_import_report", "ask_outside_change", "ask_recover_older_autosave")


@pytest.fixture(autouse=True)
def main_thread_gc(qapp):
    """Garbage collection on the GUI thread only, as the app does (nnconsole.app.shell.main_thread_gc): a worker
    thread's collection of an earlier test's Qt wrappers deadlocked a CI run."""
    from nnconsole.app.shell.main_thread_gc import suspended

    with suspended(qapp):
        yield


@pytest.fixture(autouse=True)
def isolated_app(qapp):
    """A fresh organization name per test, so QSettings() and the app data folder start empty."""
    old = qapp.organizationName(), qapp.applicationName()
    qapp.setOrganizationName(f"nnconsole-test-{uuid.uuid4().hex[:10]}")
    qapp.setApplicationName("nnconsole-test")
    data_dir = QStandardPaths.writableLocation(QStandardPaths.AppDataLocation)
    yield
    # Mime data left on the (offscreen) clipboard is destroyed after QApplication at interpreter exit,
    # which segfaults (exit 139 after a green run): leave the clipboard empty.
    qapp.clipboard().clear()
    config_file = QSettings().fileName()
    shutil.rmtree(os.path.dirname(data_dir), ignore_errors=True)  # the per-test organization folder
    shutil.rmtree(os.path.dirname(config_file), ignore_errors=True)
    qapp.setOrganizationName(old[0])
    qapp.setApplicationName(old[1])


@pytest.fixture(autouse=True)
def no_unexpected_dialogs(monkeypatch):
    """Every dialog helper raises unless the test replaces it (a modal dialog would hang the run)."""
    calls = []

    def make(name):
        def unexpected(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"unexpected dialog: dialogs.{name}{args[1:]}")
        return unexpected

    for name in DIALOGS:
        monkeypatch.setattr(dialogs, name, make(name))
    from nnconsole.app.training import dialogs as training_dialogs  # closing during a run asks there

    monkeypatch.setattr(training_dialogs, "ask_quit_during_run", make("ask_quit_during_run"))
    return calls


@pytest.fixture
def settings(tmp_path):
    return Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))


@pytest.fixture
def template_project(tmp_path):
    """A copy of the digits_cnn template's project.yaml (without its 1,800 images, which the
    editor does not read); returns its path."""
    from nnconsole.templates import template_path

    folder = tmp_path / "digits"
    folder.mkdir()
    shutil.copy(template_path("digits_cnn") / "project.yaml", folder / "project.yaml")
    return str(folder / "project.yaml")


def _discard_changes(widget):
    document = getattr(widget, "document", None)
    if document is not None:
        document.undo_stack.setClean()


@pytest.fixture
def make_window(qtbot, settings):
    """Build MainWindows (EDIT tab only by default) that are closed without a save prompt."""
    from nnconsole.app.shell.main_window import MainWindow

    def make(tab_keys=("edit",), settings_=None, document=None):
        window = MainWindow(document=document, settings=settings_ or settings, tab_keys=tab_keys)
        qtbot.addWidget(window, before_close_func=_discard_changes)
        return window

    return make


@pytest.fixture
def window(make_window):
    return make_window()


@pytest.fixture
def page(qtbot):
    """An EDIT page on an empty document."""
    from nnconsole.app.document.project_document import ProjectDocument
    from nnconsole.app.edit.page import EditPage

    document = ProjectDocument()
    page = EditPage(document, None)
    page.resize(1200, 800)
    qtbot.addWidget(page)
    page.show()
    return page


@pytest.fixture
def digits_page(qtbot, template_project):
    """An EDIT page showing a copy of the digits_cnn template."""
    from nnconsole.app.document.project_document import ProjectDocument
    from nnconsole.app.edit.page import EditPage

    document = ProjectDocument()
    document.load(template_project)
    page = EditPage(document, None)
    page.resize(1200, 800)
    qtbot.addWidget(page)
    page.show()
    return page


@pytest.fixture
def digits_project(tmp_path) -> str:
    """A fresh copy of the digits template; returns project.yaml's path."""
    return copy_digits(str(tmp_path / "digits"))


@pytest.fixture
def digits_document(digits_project, qtbot):
    """A ProjectDocument with the copied digits project loaded."""
    from nnconsole.app.document.project_document import ProjectDocument

    document = ProjectDocument()
    document.load(digits_project)
    yield document
    try:  # the undo stack may announce cleanChanged while it is destroyed, after its document
        document.undo_stack.cleanChanged.disconnect()
    except (RuntimeError, TypeError):
        pass


@pytest.fixture(scope="session")
def trained_digits_run(tmp_path_factory) -> tuple:
    """(project path, run directory) of a finished 2-epoch digits run (``nnconsole train`` as a subprocess,
    1 worker), trained once per session; tests that change the run copy it first (``support.copy_run``)."""
    return train_digits_run(str(tmp_path_factory.mktemp("trained") / "digits"))
