"""Run checks the edits before it writes them (issue 28 item 14): a project made broken in the window is
refused without touching the file on disk, and the edits stay in the window to be fixed."""
from __future__ import annotations

import pytest

from tests.gui.support import copy_digits, wait_until

from nnconsole.app.bridge import engine_process
from nnconsole.app.config.commands import set_setting
from nnconsole.app.document.commands import SetParamCommand
from nnconsole.app.training import dialogs

pytestmark = pytest.mark.gui
TABS = ("edit", "dataset", "config", "training")


@pytest.mark.slow  # a main window with four tabs and the digits dataset's check
def test_a_broken_edit_is_refused_without_writing_the_file(qtbot, make_window, tmp_path, monkeypatch):
    project = copy_digits(str(tmp_path / "digits"))
    before = open(project, "rb").read()
    started = []
    monkeypatch.setattr(engine_process, "start_detached", lambda *a, **k: started.append(a))
    monkeypatch.setattr(dialogs, "confirm_save", lambda *a, **k: True)  # were it asked: "yes, save"
    window = make_window(tab_keys=TABS)
    assert window.files.open_path(project, ask_save=False)
    document = window.document
    document.undo_stack.push(SetParamCommand(document, "conv1", "kernel", [30, 30]))  # wider than the image
    page = window.pages["training"]
    assert page.start_run()
    wait_until(qtbot, lambda: page._pending_run is None, 60)
    assert started == [] and "Not run" in page.status.text()
    assert any("conv1" in p.message for p in page.problems.problems)
    assert open(project, "rb").read() == before  # nothing written
    window.show_tab("training")
    window.grab().save("/work/shots/shell/run_refused_unsaved_after.png")
    assert document.modified and document.project.network.layer("conv1").params["kernel"] == [30, 30]


@pytest.mark.slow
def test_a_sound_edit_is_saved_then_run(qtbot, make_window, tmp_path, monkeypatch):
    project = copy_digits(str(tmp_path / "digits"))
    started = []
    monkeypatch.setattr(engine_process, "start_detached", lambda *a, **k: started.append(a) or 4242)
    monkeypatch.setattr(dialogs, "confirm_save", lambda *a, **k: True)
    window = make_window(tab_keys=TABS)
    assert window.files.open_path(project, ask_save=False)
    set_setting(window.document, "config.max_epoch", 2)
    page = window.pages["training"]
    monkeypatch.setattr(page.controller, "start_training", lambda path, *a, **k: started.append(path))
    assert page.start_run()
    wait_until(qtbot, lambda: page._pending_run is None, 60)
    assert started == [project] and not window.document.modified
    assert "max_epoch: 2" in open(project).read()
