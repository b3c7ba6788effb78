"""The GUI's exception hook: an unexpected error is logged to gui-errors.log and shown in a dialog that
says where the log is, from the GUI thread and from background threads; the old hooks come back after."""
from __future__ import annotations

import sys
import threading

import pytest

from nnconsole.app.shell import error_hook


@pytest.fixture
def shown(monkeypatch, tmp_path):
    """The dialogs the hook would show (summary, details, log path), with the log under tmp_path."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    calls = []
    monkeypatch.setattr(error_hook, "show_error_dialog", lambda *args: calls.append(args))
    return calls


def raised(exc: BaseException):
    try:
        raise exc
    except BaseException:
        return sys.exc_info()


def test_an_error_in_the_gui_thread_is_logged_and_shown(qtbot, shown, tmp_path):
    before = sys.excepthook, threading.excepthook
    uninstall = error_hook.install()
    try:
        sys.excepthook(*raised(ValueError("the canvas lost a node")))
        qtbot.waitUntil(lambda: len(shown) == 1)
    finally:
        uninstall()
    summary, details, log_path = shown[0]
    assert summary == "ValueError: the canvas lost a node"
    assert "Traceback" in details and "raise exc" in details
    assert log_path == str(tmp_path / "state" / "nnconsole" / "gui-errors.log")
    logged = open(log_path, encoding="utf-8").read()
    assert "the canvas lost a node" in logged and "unexpected error in the GUI" in logged
    assert (sys.excepthook, threading.excepthook) == before


def test_an_error_in_a_background_thread_is_shown_by_the_gui_thread(qtbot, shown):
    uninstall = error_hook.install()
    try:
        shown_in = []
        error_hook.show_error_dialog = lambda *args: shown_in.append(threading.current_thread()) or shown.append(args)
        worker = threading.Thread(target=lambda: 1 / 0, name="thumbnails")
        worker.start()
        worker.join()
        qtbot.waitUntil(lambda: len(shown) == 1)
    finally:
        uninstall()
    assert shown[0][0].startswith("ZeroDivisionError")
    assert shown_in == [threading.main_thread()]
    assert "background thread thumbnails" in open(shown[0][2], encoding="utf-8").read()


def test_an_unwritable_log_still_shows_the_error(qtbot, shown, monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))  # nnconsole/ cannot be created under a file
    uninstall = error_hook.install()
    try:
        sys.excepthook(*raised(RuntimeError("boom")))
        qtbot.waitUntil(lambda: len(shown) == 1)
    finally:
        uninstall()
    assert shown[0][2] is None


def test_ctrl_c_goes_to_the_previous_hook(qtbot, shown, monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "excepthook", lambda *info: seen.append(info[0]))
    uninstall = error_hook.install()
    try:
        sys.excepthook(*raised(KeyboardInterrupt()))
    finally:
        uninstall()
    assert seen == [KeyboardInterrupt] and shown == []


def test_the_dialog_names_the_log(qtbot, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    boxes = []
    monkeypatch.setattr(QMessageBox, "exec", lambda self: boxes.append((self.text(), self.detailedText())) or 0)
    error_hook.show_error_dialog("ValueError: x", "Traceback ...", "/home/u/.local/state/nnconsole/gui-errors.log")
    text, details = boxes[0]
    assert "ValueError: x" in text and "/home/u/.local/state/nnconsole/gui-errors.log" in text
    assert details == "Traceback ..."


def test_the_console_runs_with_the_hook_installed_and_removes_it_at_exit(qtbot, qapp, monkeypatch):
    """``nnconsole-gui`` (app.main) installs the hook for the life of the window, then restores the old one."""
    from nnconsole.app.shell import application as app_module
    from nnconsole.app import cli
    from nnconsole.app.shell import main_window, qt_libraries

    class FakeWindow:
        def show(self):
            pass

        def start(self, project):
            pass

    seen = []
    monkeypatch.setattr(cli, "has_display", lambda: True)
    monkeypatch.setattr(qt_libraries, "missing_xcb_libraries", lambda: [])
    monkeypatch.setattr(main_window, "MainWindow", FakeWindow)
    monkeypatch.setattr(app_module, "freeze_startup_objects", lambda: 0)
    monkeypatch.setattr(type(qapp), "exec", lambda self: seen.append(sys.excepthook) or 0)
    before = sys.excepthook
    assert app_module.main([]) == 0
    assert len(seen) == 1 and getattr(seen[0], "__module__", None) == error_hook.__name__
    assert sys.excepthook is before
