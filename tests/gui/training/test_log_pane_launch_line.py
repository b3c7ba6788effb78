"""The log pane without false alarms (issue 28 item 8): launcher.log's command line (its header line) is never
a failure, whatever its arguments say, and during a run the pane shows train.log as soon as it exists, not
launcher.log's start-up output, unless the user chose another log."""
from __future__ import annotations

import os

import pytest

from tests.gui.support import copy_digits, fake_run

from nnconsole.app.training.log_pane import RunLogPane
from nnconsole.engine.rundir.protocol import LAUNCH_HEADER

pytestmark = pytest.mark.gui

# launcher.log as an older nnconsole wrote it: the ``-c`` bootstrap program was the command line's middle
OLD_HEADER = (f"{LAUNCH_HEADER} 2026-01-01 10:00:00: /venv/bin/python -c import os, sys\ntry:\n"
              "    here = os.path.realpath(os.getcwd())\nexcept OSError:  # the working folder was deleted\n"
              "    here = None\n")


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as fh:
        fh.write(text)


def red_lines(pane: RunLogPane) -> list:
    out = []
    block = pane.text.document().begin()
    while block.isValid():
        if any(r.format.foreground().color().name() == "#b00000" for r in block.layout().formats()):
            out.append(block.text())
        block = block.next()
    return out


def pane_for(qtbot, run_dir: str) -> RunLogPane:
    pane = RunLogPane()
    qtbot.addWidget(pane)
    pane.resize(900, 300)
    pane.set_run(run_dir)
    return pane


def test_a_launch_command_line_is_not_a_failure(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"))
    run_dir = fake_run(project, "20240101_000000")
    launcher_log = os.path.join(run_dir, "logs", "launcher.log")
    write(launcher_log, f"{LAUNCH_HEADER} 2026-01-02 10:00:00: /venv/bin/python /venv/nnconsole/engine/"
                        f"start_module.py nnconsole.engine.train.worker {run_dir}/ERROR_failed_killed_Error\n"
                        "2026-01-02 10:00:01,000 [nnabla][INFO]: Initializing CPU extension...\n"
                        "Traceback (most recent call last):\nValueError: bad value\n")
    pane = pane_for(qtbot, run_dir)
    assert pane.files.currentText() == "logs/launcher.log"  # the only log there is
    pane.show()
    qtbot.waitExposed(pane)
    assert red_lines(pane) == ["Traceback (most recent call last):", "ValueError: bad value"]
    assert pane.failure_lines() == ["Traceback (most recent call last):", "ValueError: bad value"]
    pane.grab().save("/work/shots/runs/item8_launch_line_not_red.png")


def test_an_older_runs_multi_line_bootstrap_command_is_not_a_failure(qtbot, tmp_path):
    """Runs launched before the entry script have the ``-c`` program in launcher.log's header, over several lines
    ('except OSError:' among them): all of it is the command line, and the job's output after it is judged."""
    project = copy_digits(str(tmp_path / "digits"))
    run_dir = fake_run(project, "20240101_000000")
    write(os.path.join(run_dir, "logs", "launcher.log"), OLD_HEADER + "runpy.run_module(sys.argv.pop(1), "
          "run_name='__main__', alter_sys=True)\n"
          f" nnconsole.engine.train.worker {run_dir}/failed_once\n"
          "[nnabla][INFO]: Initializing CPU extension...\nRuntimeError: rank 1 failed\n")
    pane = pane_for(qtbot, run_dir)
    pane.show()
    qtbot.waitExposed(pane)
    assert pane.failure_lines() == ["RuntimeError: rank 1 failed"]
    assert red_lines(pane) == ["RuntimeError: rank 1 failed"]


def test_during_a_run_the_pane_moves_to_train_log_when_it_appears(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"))
    run_dir = fake_run(project, "20240101_000000", status="running")
    write(os.path.join(run_dir, "logs", "launcher.log"), "[nnabla][INFO]: Initializing CPU extension...\n")
    pane = pane_for(qtbot, run_dir)
    assert pane.files.currentText() == "logs/launcher.log"
    write(os.path.join(run_dir, "train.log"), "epoch 1 iteration 10 loss 0.5\n")
    pane.poll()
    assert pane.files.currentText() == "train.log"
    assert pane.text.toPlainText() == "epoch 1 iteration 10 loss 0.5"


def test_a_log_the_user_chose_is_kept_when_train_log_appears(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"))
    run_dir = fake_run(project, "20240101_000000", status="running")
    write(os.path.join(run_dir, "logs", "rank0.log"), "rank 0\n")
    write(os.path.join(run_dir, "logs", "launcher.log"), "launcher\n")
    pane = pane_for(qtbot, run_dir)
    pane.files.setCurrentIndex(pane.files.findText("logs/launcher.log"))  # as a click in the list does
    write(os.path.join(run_dir, "train.log"), "epoch 1\n")
    pane.poll()
    assert pane.files.currentText() == "logs/launcher.log" and pane.text.toPlainText() == "launcher"
    # another run starts from train.log again
    other = fake_run(project, "20240102_000000", status="running")
    write(os.path.join(other, "logs", "launcher.log"), "launcher\n")
    write(os.path.join(other, "train.log"), "epoch 1\n")
    pane.set_run(other)
    assert pane.files.currentText() == "train.log"
