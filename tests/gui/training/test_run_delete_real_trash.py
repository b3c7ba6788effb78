"""Deleting runs with the desktop's REAL trash (issue 28 item 1): ``QFile.moveToTrash`` is called, not stubbed.

HOME and XDG_DATA_HOME point into the test's folder, so the freedesktop.org trash Qt writes (files/ and
info/) is there, never the machine's own. The run must be gone from the results
folder, whole in the trash's files/, with a .trashinfo that names where it came from.
"""
from __future__ import annotations

import os
from urllib.parse import unquote

import pytest
from PySide6.QtCore import QFile, QStandardPaths

from tests.gui.support import copy_digits, fake_run, open_tab_page

from nnconsole.app.training import dialogs, run_manage
from nnconsole.app.training.page import TrainingPage, create_page
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import METRICS_FILE

pytestmark = pytest.mark.gui


@pytest.fixture
def own_trash(tmp_path, monkeypatch) -> str:
    """The desktop trash of this test, under ``<tmp>``: Qt's data folder + /Trash, where the data folder is
    XDG_DATA_HOME (``<tmp>/data``), or under the GUI tests' QStandardPaths test mode ``$HOME/.qttest/share``
    with HOME at ``<tmp>/home``. Qt does not create that data folder (no trash without it), so it is made."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    data = QStandardPaths.writableLocation(QStandardPaths.GenericDataLocation)
    assert data.startswith(str(tmp_path))  # never the machine's own trash
    os.makedirs(data)
    return os.path.join(data, "Trash")


def in_trash(trash: str, run_dir: str) -> bool:
    """The run's folder is whole in the trash, and its .trashinfo names the folder it came from."""
    name = os.path.basename(run_dir)
    info = os.path.join(trash, "info", name + ".trashinfo")
    if not (os.path.isfile(os.path.join(trash, "files", name, METRICS_FILE)) and os.path.isfile(info)):
        return False
    with open(info) as fh:
        return f"Path={run_dir}" in unquote(fh.read())


def make_page(qtbot, project: str) -> TrainingPage:
    return open_tab_page(qtbot, create_page, project)


def test_the_real_desktop_trash_takes_a_run(tmp_path, own_trash):
    project = copy_digits(str(tmp_path / "digits"))
    run_dir = fake_run(project, "20240101_000000")
    assert run_manage.delete_run(run_dir) == "the trash"  # no stub: QFile.moveToTrash itself
    assert not os.path.exists(run_dir)
    assert in_trash(own_trash, run_dir)
    assert not os.path.exists(os.path.join(runs.results_root(project), run_manage.RUN_TRASH))


@pytest.mark.parametrize("returns", ["bool", "tuple"])
def test_both_signatures_of_move_to_trash_are_read(tmp_path, monkeypatch, returns):
    """PySide6 releases differ: ``moveToTrash(path)`` gives a bool, or ``(bool, path in the trash)``."""
    run_dir = str(tmp_path / "run")
    os.makedirs(run_dir)

    def move(path):
        os.rename(path, path + ".trashed")
        return True if returns == "bool" else (True, path + ".trashed")

    monkeypatch.setattr(QFile, "moveToTrash", staticmethod(move))
    assert run_manage.desktop_trash(run_dir) is True
    monkeypatch.setattr(QFile, "moveToTrash", staticmethod(lambda path: False if returns == "bool" else (False, "")))
    os.makedirs(run_dir)
    assert run_manage.desktop_trash(run_dir) is False  # refused: the caller uses the results root's .trash


def test_delete_from_the_run_menu_moves_the_run_to_the_real_trash(qtbot, tmp_path, monkeypatch, own_trash):
    project = copy_digits(str(tmp_path / "digits"))
    keep = fake_run(project, "20240101_000000")
    gone = fake_run(project, "20240102_000000")
    page = make_page(qtbot, project)
    told = []
    monkeypatch.setattr(dialogs, "confirm_delete_runs", lambda parent, names: names == ["20240102_000000"])
    monkeypatch.setattr(dialogs, "tell", lambda parent, title, text, warning=False: told.append(text))
    page.history.select_run(gone)  # the run shown, as after a right-click on it
    assert page.progress.run_dir == gone and page.progress.bar.format().startswith("finished")
    menu = page.build_run_menu(gone)
    delete = next(a for a in menu.actions() if a.objectName() == "run_menu_delete")
    delete.trigger()  # right-click > Delete (move to trash) > Yes
    assert told == []  # no "Runs kept", no error
    assert not os.path.exists(gone) and in_trash(own_trash, gone) and os.path.isdir(keep)
    assert [r.run_dir for r in page.history.rows] == [keep]
    assert "the trash" in page.status.text()
    assert page.progress.run_dir is None and page.progress.bar.format() == "idle"  # nothing of it stays shown
    assert page.progress.labels["throughput"].text() == "- samples/s"
    page.grab().save("/work/shots/runs/item1_after_delete.png")


def test_prune_moves_failed_and_empty_runs_to_the_real_trash(qtbot, tmp_path, monkeypatch, own_trash):
    project = copy_digits(str(tmp_path / "digits"))
    good = fake_run(project, "20240103_000000", iteration=46)
    failed = fake_run(project, "20240102_000000", status="failed", iteration=12)
    empty = fake_run(project, "20240101_000000", status="stopped", records=[])
    page = make_page(qtbot, project)
    monkeypatch.setattr(dialogs, "confirm_delete_runs", lambda parent, names: True)
    assert sorted(page.prune_runs()) == sorted([failed, empty])
    assert in_trash(own_trash, failed) and in_trash(own_trash, empty)
    assert [r.run_dir for r in page.history.rows] == [good]
