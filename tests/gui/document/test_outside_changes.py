"""Edits made to the project file outside the GUI are noticed and never lost (issue 13 item 6).

Save asks (Overwrite / Reload / Save As / Cancel) when the file changed since the GUI read or wrote
it; overwriting keeps the outside version as ``project.outside-<time>.yaml``, which no later save
replaces; coming back to the window asks too. Crash recovery with a project file newer than its
autosave asks which to keep and keeps both.
"""
from __future__ import annotations

import glob
import os
import time

import pytest

from nnconsole.app.document import autosave
from nnconsole.app.shell import dialogs
from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.engine.project.io import dumps_project, load_project
from nnconsole.engine.check.project_file import load_valid_project

pytestmark = pytest.mark.gui


def edit_outside(path, max_epoch=7):
    """What a text editor does: new text in the file, a later modification time; returns the bytes."""
    project = load_valid_project(path, check_datasets=False)
    project.config.max_epoch = max_epoch
    data = ("# edited in a text editor\n" + dumps_project(project)).encode("utf-8")
    with open(path, "wb") as fh:
        fh.write(data)
    later = time.time() + 3
    os.utime(path, (later, later))
    return data


def copies(path, label):
    folder, name = os.path.split(path)
    stem = os.path.splitext(name)[0]
    return sorted(glob.glob(os.path.join(folder, f"{stem}.{label}-*.yaml")))


def read(path):
    with open(path, "rb") as fh:
        return fh.read()


def answer_outside_change(monkeypatch, answer):
    asked = []
    monkeypatch.setattr(dialogs, "ask_outside_change",
                        lambda parent, name: asked.append(name) or answer)
    return asked


@pytest.fixture
def edited_window(window, template_project):
    """The digits project open in the window with an unsaved GUI edit (a Dropout layer)."""
    assert window.files.open_path(template_project)
    window.edit_page.editor.add_layer("Dropout", after="relu3")
    assert window.document.modified
    return window


def test_overwrite_asks_and_keeps_the_outside_version_through_later_saves(edited_window, template_project,
                                                                        monkeypatch):
    outside = edit_outside(template_project)
    asked = answer_outside_change(monkeypatch, dialogs.OVERWRITE)
    edited_window.actions_by_name["save"].trigger()
    assert asked == ["digits/project.yaml"]
    saved = load_valid_project(template_project, check_datasets=False)
    assert "Dropout" in " ".join(saved.network.names()) and saved.config.max_epoch != 7
    kept = copies(template_project, "outside")
    assert len(kept) == 1 and read(kept[0]) == outside
    assert not edited_window.document.modified
    assert edited_window.statusBar().currentMessage() == (f"saved {template_project}; the version changed "
                                                          f"outside nnconsole is kept beside it as "
                                                          f"{os.path.basename(kept[0])}")
    # a second save (the .bak now holds the first save): the outside edit survives, and nobody asks
    edited_window.edit_page.editor.add_layer("ReLU", after="fc2")
    edited_window.actions_by_name["save"].trigger()
    assert asked == ["digits/project.yaml"]
    assert copies(template_project, "outside") == kept and read(kept[0]) == outside
    assert read(template_project + ".bak") != outside


def test_reload_shows_the_outside_version(edited_window, template_project, monkeypatch):
    outside = edit_outside(template_project)
    answer_outside_change(monkeypatch, dialogs.RELOAD)
    assert not edited_window.files.save()
    assert read(template_project) == outside
    assert edited_window.document.project.config.max_epoch == 7
    assert "Dropout" not in " ".join(edited_window.document.project.network.names())
    assert not edited_window.document.modified
    assert edited_window.windowTitle() == "digits/project.yaml — nnconsole"


def test_save_as_leaves_the_changed_file_alone(edited_window, template_project, tmp_path, monkeypatch):
    outside = edit_outside(template_project)
    answer_outside_change(monkeypatch, dialogs.SAVE_AS)
    other = str(tmp_path / "digits" / "mine.yaml")
    monkeypatch.setattr(dialogs, "ask_save_path", lambda parent, suggested: other)
    assert edited_window.files.save()
    assert read(template_project) == outside
    assert "Dropout" in " ".join(load_valid_project(other, check_datasets=False).network.names())
    assert edited_window.document.path == other


def test_cancel_writes_nothing(edited_window, template_project, monkeypatch):
    outside = edit_outside(template_project)
    answer_outside_change(monkeypatch, dialogs.CANCEL)
    assert not edited_window.files.save()
    assert read(template_project) == outside and edited_window.document.modified
    assert not copies(template_project, "outside")


def test_a_touched_file_with_the_same_text_saves_without_asking(edited_window, template_project):
    later = time.time() + 3
    os.utime(template_project, (later, later))  # ask_outside_change would fail the test
    assert edited_window.files.save()
    assert not copies(template_project, "outside")


def test_closing_with_save_asks_too(edited_window, template_project, monkeypatch):
    outside = edit_outside(template_project)
    asked = answer_outside_change(monkeypatch, dialogs.CANCEL)
    monkeypatch.setattr(dialogs, "ask_save_changes", lambda parent, name: dialogs.SAVE)
    assert not edited_window.files.maybe_save()  # cancelled: the window stays open
    assert asked and read(template_project) == outside


def test_coming_back_to_the_window_asks_once(edited_window, template_project, monkeypatch):
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    edit_outside(template_project)
    asked = answer_outside_change(monkeypatch, dialogs.CANCEL)
    QApplication.sendEvent(edited_window, QEvent(QEvent.WindowActivate))
    assert asked == ["digits/project.yaml"]
    QApplication.sendEvent(edited_window, QEvent(QEvent.WindowActivate))
    assert asked == ["digits/project.yaml"]  # "decide later": not asked at every activation
    assert not edited_window.files.save()  # but a save over it asks again
    assert len(asked) == 2


def test_coming_back_reloads_an_unmodified_project_when_asked(window, template_project, monkeypatch):
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    window.files.open_path(template_project)
    edit_outside(template_project, max_epoch=9)
    answer_outside_change(monkeypatch, dialogs.RELOAD)
    QApplication.sendEvent(window, QEvent(QEvent.WindowActivate))
    assert window.document.project.config.max_epoch == 9 and not window.document.modified


def test_every_document_save_keeps_an_outside_version(template_project):
    """The guarantee sits in ProjectDocument.save, so saves that do not ask (the TRAINING tab's
    save before a run) cannot lose an outside edit either."""
    document = ProjectDocument()
    document.load(template_project)
    outside = edit_outside(template_project)
    document.set_setting("config.max_epoch", 3)
    document.save()
    kept = copies(template_project, "outside")
    assert len(kept) == 1 and read(kept[0]) == outside
    assert os.stat(kept[0]).st_mode == os.stat(template_project + ".bak").st_mode
    document.set_setting("config.max_epoch", 4)
    document.save()
    assert copies(template_project, "outside") == kept


# ---- crash recovery with a project file newer than its autosave ------------------------------------
def older_autosave(template_project):
    """A crash left an autosave (a layer removed); the project file was edited later outside."""
    project = load_valid_project(template_project, check_datasets=False)
    project.network.layers.pop()
    side = autosave.autosave_path(template_project)
    with open(side, "w", encoding="utf-8") as fh:
        fh.write(dumps_project(project))
    earlier = time.time() - 60
    os.utime(side, (earlier, earlier))
    outside = edit_outside(template_project)
    return project, side, read(side), outside


def answer_older_recovery(monkeypatch, answer):
    asked = []
    monkeypatch.setattr(dialogs, "ask_recover_older_autosave",
                        lambda parent, name, autosaved_at, file_at: asked.append(name) or answer)
    return asked


def test_newer_file_kept_and_the_autosave_too(window, template_project, monkeypatch):
    _, side, autosaved, outside = older_autosave(template_project)
    asked = answer_older_recovery(monkeypatch, dialogs.KEEP_FILE)
    assert window.files.open_path(template_project)
    assert asked == ["digits/project.yaml"]
    assert window.document.project.config.max_epoch == 7 and not window.document.modified
    assert not os.path.exists(side)  # not offered again at the next open...
    kept = copies(template_project, "autosave")
    assert len(kept) == 1 and read(kept[0]) == autosaved  # ...but kept, openable
    assert window.statusBar().currentMessage().endswith(f"kept beside it as {os.path.basename(kept[0])}")
    assert read(template_project) == outside


def test_autosave_recovered_and_the_newer_file_kept(window, template_project, monkeypatch):
    recovered, side, _, outside = older_autosave(template_project)
    answer_older_recovery(monkeypatch, dialogs.RECOVER)
    assert window.files.open_path(template_project)
    assert window.document.project == recovered and window.document.modified
    kept = copies(template_project, "outside")
    assert len(kept) == 1 and read(kept[0]) == outside
    assert window.files.save()  # no question: the user chose, and the file's version is kept
    assert load_project(template_project) == recovered
    assert read(kept[0]) == outside and not os.path.exists(side)


def test_cancelled_recovery_opens_nothing_and_deletes_nothing(window, template_project, monkeypatch):
    _, side, autosaved, outside = older_autosave(template_project)
    answer_older_recovery(monkeypatch, dialogs.CANCEL)
    assert not window.files.open_path(template_project)
    assert window.document.path is None
    assert read(side) == autosaved and read(template_project) == outside


def test_the_questions_read_well(qtbot, tmp_path):
    """The real message boxes, built without exec(): their buttons, as a user sees them."""
    box, buttons = dialogs.outside_change_box(None, "digits/project.yaml")
    qtbot.addWidget(box)
    assert [b.text() for b in buttons] == ["Overwrite", "Reload (discard mine)", "Save As…", "Cancel"]
    assert "changed outside nnconsole" in box.text()
    box.show()
    box.grab().save(str(tmp_path / "outside_change.png"))
    box2, buttons2 = dialogs.older_autosave_box(None, "digits/project.yaml", "2026-11-25 02:00:00",
                                                "2026-11-25 02:05:00")
    qtbot.addWidget(box2)
    assert [b.text() for b in buttons2] == ["Open the newer file", "Recover the autosave", "Cancel"]
    assert "kept" in box2.informativeText()
    box2.show()
    box2.grab().save(str(tmp_path / "older_autosave.png"))
