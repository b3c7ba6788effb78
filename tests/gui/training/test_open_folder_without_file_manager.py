"""'Open folder' where no file manager opens it (issue 28 item 10): the user is told, and gets the path to copy.

One test makes QDesktopServices.openUrl answer False (no file manager); one makes the real call and checks
that the dialog appears exactly when the real call says nothing opened the folder.
"""
from __future__ import annotations

import os

import pytest
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QApplication, QDialog, QLabel, QLineEdit, QPushButton

from tests.gui.support import copy_digits, fake_run, open_tab_page

from nnconsole.app.training import dialogs
from nnconsole.app.training.page import create_page

pytestmark = pytest.mark.gui


def path_dialogs() -> list:
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, QDialog)
            and w.objectName() == "folder_path_dialog" and w.isVisible()]


@pytest.fixture
def no_dialogs_left():
    yield
    for dialog in path_dialogs():
        dialog.close()


def test_without_a_file_manager_the_path_is_shown_to_copy(qtbot, tmp_path, monkeypatch, no_dialogs_left):
    project = copy_digits(str(tmp_path / "digits"))
    run_dir = fake_run(project, "20240101_000000")
    page = open_tab_page(qtbot, create_page, project)
    asked = []
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: asked.append(url) or False))
    menu = page.build_run_menu(run_dir)
    next(a for a in menu.actions() if a.objectName() == "run_menu_folder").trigger()
    assert [u.toLocalFile() for u in asked] == [run_dir]
    shown = path_dialogs()
    assert len(shown) == 1
    field = shown[0].findChild(QLineEdit, "folder_path")
    assert field.text() == run_dir and field.isReadOnly() and field.selectedText() == run_dir
    assert any("No file manager" in label.text() for label in shown[0].findChildren(QLabel))
    shown[0].grab().save("/work/shots/runs/item10_path_dialog.png")
    shown[0].findChild(QPushButton, "folder_path_copy").click()
    assert QGuiApplication.clipboard().text() == run_dir
    # the history's own button goes the same way
    page.history.select_run(run_dir)
    shown[0].close()
    page.history.open_button.click()
    assert len(asked) == 2 and len(path_dialogs()) == 1


def test_a_file_manager_that_opens_it_gets_no_dialog(qtbot, tmp_path, monkeypatch, no_dialogs_left):
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: True))
    assert dialogs.open_folder(str(tmp_path)) is True
    assert path_dialogs() == []


def test_the_real_open_url_call_and_the_dialog_agree(qtbot, tmp_path, monkeypatch, no_dialogs_left):
    """No stub: whatever this machine has (offscreen, usually no file manager), the user is never left without
    either a file manager or the path."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # no xdg-open to start a real file manager here
    opened = dialogs.open_folder(str(tmp_path))
    assert opened is False or path_dialogs() == []
    if not opened:
        assert [d.findChild(QLineEdit, "folder_path").text() for d in path_dialogs()] == [os.path.abspath(tmp_path)]
