"""TRAINING log pane (issue 19): train.log and rank logs live, bounded memory, failures highlighted, and
the resume command as buttons."""
from __future__ import annotations

import os

import pytest

from tests.gui.support import copy_digits, fake_run, open_tab_page, wait_until

from PySide6.QtGui import QGuiApplication

from nnconsole.app.training import dialogs, log_pane
from nnconsole.app.training.log_pane import RunLogPane
from nnconsole.app.training.page import create_page
from nnconsole.engine.rundir import store as runs

pytestmark = pytest.mark.gui


def write(path: str, text: str, mode: str = "a") -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as fh:
        fh.write(text)


def red_lines(pane: RunLogPane) -> list:
    """Lines the highlighter formats as failures (by their format's colour, as drawn)."""
    out = []
    block = pane.text.document().begin()
    while block.isValid():
        if any(r.format.foreground().color().name() == "#b00000" for r in block.layout().formats()):
            out.append(block.text())
        block = block.next()
    return out


def test_the_log_is_tailed_live_and_failures_are_highlighted(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"))
    run_dir = fake_run(project, "20240101_000000", status="running")
    log = os.path.join(run_dir, "train.log")
    write(log, "epoch 1: validation loss 0.94 error 0.1722 (best)\n")
    write(os.path.join(run_dir, "logs", "rank1.log"), "rank 1 here\n")
    write(os.path.join(run_dir, "logs", "rank0.log"), "rank 0 here\n")
    pane = RunLogPane()
    qtbot.addWidget(pane)
    pane.set_run(run_dir)
    assert [pane.files.itemText(i) for i in range(pane.files.count())] == ["train.log", "logs/rank0.log",
                                                                             "logs/rank1.log"]
    assert pane.text.toPlainText() == "epoch 1: validation loss 0.94 error 0.1722 (best)"
    write(log, "iteration 10 loss 0.5\nhalf a li")
    wait_until(qtbot, lambda: "iteration 10" in pane.text.toPlainText(), 5)  # its own timer
    assert "half a li" not in pane.text.toPlainText()  # a line is shown once complete
    write(log, "ne\nTraceback (most recent call last):\nValueError: bad value\nwarning: slow\n"
               "2026-01-01 ERROR rank 1 ended\nloss nan at iteration 12\n")
    pane.poll()
    assert pane.text.toPlainText().splitlines()[-6:] == ["half a line", "Traceback (most recent call last):",
                                                          "ValueError: bad value", "warning: slow",
                                                          "2026-01-01 ERROR rank 1 ended", "loss nan at iteration 12"]
    assert red_lines(pane) == ["Traceback (most recent call last):", "ValueError: bad value",
                               "2026-01-01 ERROR rank 1 ended", "loss nan at iteration 12"]  # not the error rate
    pane.files.setCurrentIndex(2)
    assert pane.text.toPlainText() == "rank 1 here"
    write(os.path.join(run_dir, "logs", "launcher.log"), "mpiexec said\n")
    pane.poll()  # a log that appears is listed
    assert "logs/launcher.log" in [pane.files.itemText(i) for i in range(pane.files.count())]
    assert pane.files.currentText() == "logs/rank1.log"
    assert pane.resume_button.isHidden()  # a running run: nothing to resume


@pytest.mark.slow  # writes a 5.5 MB log
def test_memory_stays_bounded_however_large_the_log(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(log_pane, "BACKLOG_BYTES", 64 * 1024)
    run_dir = fake_run(copy_digits(str(tmp_path / "digits")), "20240101_000000", status="running")
    log = os.path.join(run_dir, "train.log")
    write(log, "".join(f"line {i:07d} {'x' * 80}\n" for i in range(60_000)))  # ~5.5 MB
    pane = RunLogPane()
    qtbot.addWidget(pane)
    pane.set_run(run_dir)
    text = pane.text.toPlainText()
    assert len(text) < 70 * 1024 and text.splitlines()[-1].startswith("line 0059999")
    assert "not shown" in text.splitlines()[0] and log in text.splitlines()[0]
    for chunk in range(5):  # it keeps growing: lines kept never exceed MAX_LINES
        write(log, "".join(f"more {chunk} {i}\n" for i in range(3000)))
        pane.poll()
    assert pane.text.document().blockCount() <= log_pane.MAX_LINES
    assert pane.text.toPlainText().splitlines()[-1] == "more 4 2999"
    write(log, "rewritten\n", mode="w")  # a resume that starts the file again
    pane.poll()
    assert pane.text.toPlainText().splitlines()[-1] == "rewritten"


def test_a_stopped_run_offers_resume_as_buttons(qtbot, tmp_path, monkeypatch):
    project = copy_digits(str(tmp_path / "digits"))
    stopped = fake_run(project, "20240102_000000", status="stopped")
    os.makedirs(runs.checkpoint_dir(stopped))
    open(os.path.join(runs.checkpoint_dir(stopped), "ckpt-20.json"), "w").close()
    finished = fake_run(project, "20240101_000000")
    page = open_tab_page(qtbot, create_page, project)
    page.history.table.selectRow(page.history.row_of(stopped))
    assert page.log_pane.run_dir == stopped
    assert page.log_pane.resume_button.isVisible() and page.log_pane.copy_button.isVisible()
    page.log_pane.copy_button.click()
    assert QGuiApplication.clipboard().text() == f"nnconsole train --resume {stopped}"
    resumed = []
    monkeypatch.setattr(dialogs, "ask_workers", lambda parent, name, workers: resumed.append(name) and None)
    page.log_pane.resume_button.click()
    assert resumed == ["20240102_000000"]  # the page's resume (asks the worker count; cancelled here)
    page.history.table.selectRow(page.history.row_of(finished))
    assert page.log_pane.run_dir == finished and not page.log_pane.resume_button.isVisible()
