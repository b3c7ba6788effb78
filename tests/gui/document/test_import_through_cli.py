"""File > Open of an NNC / nnabla file runs ``nnconsole import`` in a subprocess (``bridge.import_runner``):
its report comes from the command's ``import_finished`` event, a refusal shows the command's message in the
error dialog, Cancel stops the command and opens nothing. (The happy path through the window is in
tests/gui/shell/test_main_window.py; that no nnabla reaches the GUI process, in test_gui_process_rule.py.)
"""
from __future__ import annotations

import os
import shutil
import sys
import time

from nnconsole.app.bridge import engine_process, import_runner
from nnconsole.app.shell import dialogs
from nnconsole.engine.rundir.protocol import IMPORT_FINISHED_EVENT, read_events
from tests.gui.support import TEST_DATA

DATA = os.path.join(TEST_DATA, "interop")


def test_the_import_command_announces_its_report_as_an_event(tmp_path):
    from nnconsole.engine.cli.main import main

    shutil.copy(os.path.join(DATA, "nnc_tiny_repeat.nntxt"), tmp_path / "tiny.nntxt")
    out, events = tmp_path / "tiny.yaml", tmp_path / "events.jsonl"
    assert main(["import", str(tmp_path / "tiny.nntxt"), "-o", str(out), "--events", str(events)]) == 0
    [event] = read_events(str(events))[0]
    assert event["event"] == IMPORT_FINISHED_EVENT and event["project"] == str(out)
    assert event["unsupported"] == [] and any("kept as a block" in note for note in event["notes"])
    assert event["report"].splitlines()[0] == f"imported {tmp_path / 'tiny.nntxt'}"


def test_a_refused_import_shows_the_commands_message_and_opens_nothing(window, tmp_path, monkeypatch):
    source = str(tmp_path / "broken.nntxt")
    with open(source, "w") as fh:
        fh.write("this is { not protobuf\n")
    before = window.document.project
    errors = []
    monkeypatch.setattr(dialogs, "ask_open_project", lambda parent, start: source)
    monkeypatch.setattr(dialogs, "ask_import_target", lambda parent, src: str(tmp_path / "broken.yaml"))
    monkeypatch.setattr(dialogs, "show_error", lambda parent, title, *text: errors.append((title, *text)))
    window.actions_by_name["open"].trigger()
    [(title, text, informative, details)] = errors
    assert title == "Cannot import project" and text == "Cannot import broken.nntxt."
    # exit code 2: the CLI's own message, which names the file, the place and the fix
    assert informative.startswith(f"{source}:1:") and "fix the syntax at line 1" in informative
    assert "nnconsole import:" in details
    assert window.document.project is before and not os.path.exists(tmp_path / "broken.yaml")


def test_an_import_that_crashes_is_reported_as_a_bug_with_its_output(qtbot, tmp_path, monkeypatch):
    script = "import sys; sys.stderr.write('Traceback: boom\\n'); sys.exit(1)"
    monkeypatch.setattr(engine_process, "engine_program", lambda: (sys.executable, ["-c", script]))
    outcome = import_runner.run_import(None, str(tmp_path / "x.nntxt"), str(tmp_path / "x.yaml"))
    assert outcome.project is None and not outcome.cancelled and outcome.exit_code == 1
    text, informative, details = outcome.error_text()
    assert text == "Cannot import x.nntxt: nnconsole import failed (exit code 1)."
    assert "bug" in informative and details == "Traceback: boom"


def test_a_command_that_cannot_start_is_reported_and_the_wait_ends(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(engine_process, "engine_program", lambda: (str(tmp_path / "no-such-python"), []))
    outcome = import_runner.run_import(None, str(tmp_path / "x.nntxt"), str(tmp_path / "x.yaml"))
    assert outcome.project is None and outcome.exit_code == -1
    text, _, details = outcome.error_text()
    assert text == "Cannot import x.nntxt: nnconsole import failed (it did not start)."
    assert details.startswith("could not start the engine")


def test_a_command_that_ends_well_without_its_event_is_a_failure(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(engine_process, "engine_program", lambda: (sys.executable, ["-c", "pass"]))
    outcome = import_runner.run_import(None, str(tmp_path / "x.nntxt"), str(tmp_path / "x.yaml"))
    assert outcome.project is None and outcome.exit_code != 0
    assert "without announcing the project" in outcome.error_text()[2]


def test_cancel_in_the_busy_dialog_stops_the_command_and_opens_nothing(window, qtbot, tmp_path, monkeypatch):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QProgressDialog, QPushButton

    started = tmp_path / "started"
    script = f"import time; open({str(started)!r}, 'w').close(); time.sleep(60)"
    monkeypatch.setattr(engine_process, "engine_program", lambda: (sys.executable, ["-c", script]))
    source = str(tmp_path / "slow.nntxt")
    open(source, "w").close()
    before = window.document.project
    monkeypatch.setattr(dialogs, "ask_open_project", lambda parent, start: source)
    monkeypatch.setattr(dialogs, "ask_import_target", lambda parent, src: str(tmp_path / "slow.yaml"))
    messages = []
    window.files.message_posted.connect(messages.append)
    seen = []

    def press_cancel():
        busy = [w for w in QApplication.topLevelWidgets() if isinstance(w, QProgressDialog) and w.isVisible()]
        if not (busy and started.exists()):
            QTimer.singleShot(50, press_cancel)
            return
        seen.append(busy[0].labelText())
        [cancel] = busy[0].findChildren(QPushButton)
        cancel.click()

    QTimer.singleShot(50, press_cancel)
    began = time.monotonic()
    window.actions_by_name["open"].trigger()  # returns once the command has ended
    assert time.monotonic() - began < 30  # the command sleeps 60 s unless Cancel ends it
    assert seen == ["Importing slow.nntxt..."]
    assert window.document.project is before and messages[-1] == f"import of {source} cancelled"
    assert not [w for w in QApplication.topLevelWidgets() if isinstance(w, QProgressDialog) and w.isVisible()]
