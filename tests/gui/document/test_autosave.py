"""Autosave side files: written on a timer while modified, removed on save, offered back after a
crash (accepted or declined), stale copies ignored, untitled projects too."""
from __future__ import annotations

import os
import time

import pytest

from nnconsole.app.document import autosave
from nnconsole.app.shell import dialogs
from nnconsole.engine.project.io import dumps_project
from nnconsole.engine.check.project_file import load_valid_project

pytestmark = pytest.mark.gui


def test_side_file_is_written_while_modified_and_removed_on_save(window, template_project, qtbot):
    window.files.open_path(template_project)
    side = autosave.autosave_path(template_project)
    assert side == os.path.join(os.path.dirname(template_project), ".project.yaml.autosave")
    window.autosaver.set_interval(0.05)
    qtbot.wait(120)
    assert not os.path.exists(side)  # nothing to save while unmodified
    window.edit_page.editor.add_layer("Dropout", after="relu3")
    qtbot.waitUntil(lambda: os.path.exists(side), timeout=3000)
    with open(side, encoding="utf-8") as fh:
        assert fh.read() == dumps_project(window.document.project)
    assert load_valid_project(template_project, check_datasets=False).network.names() != \
        window.document.project.network.names()  # the project file itself is untouched
    window.actions_by_name["save"].trigger()
    assert not os.path.exists(side)
    window.autosaver.stop()


def crash_leftover(template_project, change):
    """What a crash leaves: the project file plus a newer side file holding unsaved work."""
    project = load_valid_project(template_project, check_datasets=False)
    change(project)
    side = autosave.autosave_path(template_project)
    with open(side, "w", encoding="utf-8") as fh:
        fh.write(dumps_project(project))
    later = time.time() + 5
    os.utime(side, (later, later))
    return project, side


def test_recovery_is_offered_after_a_crash(window, template_project, monkeypatch):
    recovered, side = crash_leftover(template_project,
                                     lambda p: setattr(p.network.layer("fc1"), "params", {"out_shape": [32]}))
    asked = []
    monkeypatch.setattr(dialogs, "ask_recover_autosave", lambda parent, name, when: asked.append(name) or True)
    assert window.files.open_path(template_project)
    assert asked == ["digits/project.yaml"]
    assert window.document.project == recovered and window.document.path == template_project
    assert window.document.modified and window.windowTitle().startswith("digits/project.yaml*")
    assert window.edit_page.scene.node("fc1").shape_text == "32"
    window.files.save()
    assert load_valid_project(template_project, check_datasets=False) == recovered
    assert not os.path.exists(side)


def test_declined_recovery_deletes_the_copy(window, template_project, monkeypatch):
    _, side = crash_leftover(template_project, lambda p: p.network.layers.pop())
    monkeypatch.setattr(dialogs, "ask_recover_autosave", lambda parent, name, when: False)
    window.files.open_path(template_project)
    assert not os.path.exists(side) and not window.document.modified
    assert window.document.project == load_valid_project(template_project, check_datasets=False)


def test_a_copy_holding_the_project_text_is_not_offered(window, template_project):
    """Nothing to recover: the copy is deleted without a question. (A copy older than a project file
    that differs from it is asked about and kept: tests/gui/document/test_outside_changes.py.)"""
    _, side = crash_leftover(template_project, lambda p: None)
    with open(template_project, "rb") as src, open(side, "wb") as dst:
        dst.write(src.read())
    window.files.open_path(template_project)  # ask_recover_autosave would fail the test
    assert not os.path.exists(side) and not window.document.modified


def test_untitled_project_is_autosaved_in_the_app_data_folder(make_window, monkeypatch):
    first = make_window()
    first.edit_page.add_layer("Input")
    side = first.autosaver.save_now()
    assert side == autosave.autosave_path(None) and os.path.isfile(side)
    assert not side.startswith(os.getcwd())
    first.autosaver.stop()
    second = make_window()
    monkeypatch.setattr(dialogs, "ask_recover_autosave", lambda parent, name, when: name == "An untitled project")
    second.start()
    assert second.document.project.network.names() == ["Input"] and second.document.modified
    assert second.document.path is None


def test_a_project_opened_after_a_recovery_is_clean(window, template_project, tmp_path, monkeypatch):
    """Issue 13 item 15: the recovery left the undo stack's clean index at -1, so every project opened
    later showed as modified."""
    crash_leftover(template_project, lambda p: p.network.layers.pop())
    monkeypatch.setattr(dialogs, "ask_recover_autosave", lambda parent, name, when: True)
    window.files.open_path(template_project)
    assert window.document.modified
    other = tmp_path / "other" / "project.yaml"
    other.parent.mkdir()
    other.write_bytes(open(template_project, "rb").read())
    monkeypatch.setattr(dialogs, "ask_save_changes", lambda parent, name: dialogs.DISCARD)
    assert window.files.open_path(str(other))  # the recovered work is discarded when asked
    assert not window.document.modified
    assert window.windowTitle() == "other/project.yaml — nnconsole"
    window.document.load(template_project)  # the plain document load too
    assert not window.document.modified
