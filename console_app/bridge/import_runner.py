"""Importing an NNC / nnabla file the way training runs: ``nnconsole import`` in a subprocess.

The importers read ``.nntxt``/``.nnp`` with nnabla's protobuf modules, which load nnabla; the GUI process
never does (docs/architecture.md), so File > Open of such a file runs

    nnconsole import SOURCE -o TARGET.yaml --force --events FILE

in a QProcess (``EngineCommand``) behind a modal busy dialog with Cancel, and waits in a local event loop:
the window keeps repainting, and the caller gets the outcome as a return value, as it did when the import
ran in process. The import report (what was not carried over, notes) comes from the command's
``import_finished`` event (``nnconsole.engine.rundir.protocol``), never from its human text; a refusal
(exit code 2) comes with the command's message, which names the file and the fix.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from PySide6.QtCore import QEventLoop, Qt, QTimer
from PySide6.QtWidgets import QProgressDialog, QWidget

from nnconsole.app.bridge.engine_process import EngineCommand
from nnconsole.engine.errors import EXIT_CODE_MEANINGS, ExitCode, exit_code_of
from nnconsole.engine.rundir.protocol import IMPORT_FINISHED_EVENT, read_events

BUSY_DIALOG_DELAY_MS = 300  # a quick import finishes before the busy dialog would flash up
KILL_AFTER_MS = 3000  # Cancel sends SIGTERM; a command still running this much later is killed
EVENTS_NAME = "events.jsonl"
CLI_PREFIX = "nnconsole import: "


@dataclass
class ImportOutcome:
    """What ``nnconsole import`` did: the project written (None when nothing was), or why not."""

    source: str
    project: Optional[str] = None
    cancelled: bool = False
    exit_code: int = ExitCode.OK
    message: str = ""  # the command's error output when it failed
    report: str = ""
    unsupported: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    @property
    def has_report(self) -> bool:
        """Whether the user must be told what the import could not carry over or changed."""
        return bool(self.unsupported or self.notes)

    def error_text(self) -> Tuple[str, str, str]:
        """(text, informative text, details) for the error dialog of a failed import."""
        name = os.path.basename(self.source)
        lines = [line for line in self.message.strip().splitlines() if line.strip()]
        if self.exit_code == ExitCode.BAD_INPUT and lines:
            first = lines[-1]  # the CLI prints its refusal last, after any warnings
            reason = first[len(CLI_PREFIX):] if first.startswith(CLI_PREFIX) else first
            return f"Cannot import {name}.", reason, self.message.strip()
        meaning = EXIT_CODE_MEANINGS[exit_code_of(self.exit_code)]  # every ExitCode has its words
        code = f"exit code {self.exit_code}" if self.exit_code >= 0 else "it did not start"
        return (f"Cannot import {name}: nnconsole import {meaning} ({code}).",
                "This is a bug in nnconsole; the details below help to report it.", self.message.strip())


def import_command(source: str, target: str, events: str) -> List[str]:
    """The CLI arguments: the same command a terminal user types (``--force``: the user chose the target in a
    save dialog, which already asked about replacing it; the old file is kept as a .bak)."""
    return ["import", source, "-o", target, "--force", "--events", events]


def run_import(parent: Optional[QWidget], source: str, target: str) -> ImportOutcome:
    """Import ``source`` into the project file ``target`` with ``nnconsole import``; returns when it ended."""
    folder = tempfile.mkdtemp(prefix="nnconsole-import-")
    events = os.path.join(folder, EVENTS_NAME)
    outcome = ImportOutcome(source=source)
    loop = QEventLoop()
    ended = []
    command = EngineCommand(parent)
    dialog = QProgressDialog(f"Importing {os.path.basename(source)}...", "Cancel", 0, 0, parent)
    dialog.setObjectName("import_progress")
    dialog.setWindowTitle("Import")
    dialog.setWindowModality(Qt.WindowModal if parent is not None else Qt.ApplicationModal)
    dialog.setMinimumDuration(BUSY_DIALOG_DELAY_MS)
    dialog.setAutoClose(False)
    dialog.setAutoReset(False)
    dialog.setValue(0)  # starts the delay (a busy bar never gets other values)

    killer = QTimer(command)  # deleted with the command
    killer.setSingleShot(True)
    killer.timeout.connect(command.kill)

    def cancel() -> None:
        outcome.cancelled = True
        command.stop()
        killer.start(KILL_AFTER_MS)

    def finished(code: int, _stdout: str, stderr: str) -> None:
        outcome.exit_code, outcome.message = code, stderr
        ended.append(code)
        loop.quit()

    dialog.canceled.connect(cancel)
    command.command_finished.connect(finished)
    try:
        command.start(import_command(source, target, events), cwd=os.path.dirname(os.path.abspath(source)))
        if not ended:  # a command that cannot start ends at once
            loop.exec()
        _read_report(events, outcome)
    finally:
        dialog.canceled.disconnect(cancel)
        dialog.close()
        dialog.deleteLater()
        command.deleteLater()
        shutil.rmtree(folder, ignore_errors=True)
    return outcome


def _read_report(events: str, outcome: ImportOutcome) -> None:
    """Fill ``outcome`` from the command's ``import_finished`` event (only a successful import has one)."""
    if outcome.cancelled or outcome.exit_code != ExitCode.OK:
        return
    found = [e for e in read_events(events)[0] if e.get("event") == IMPORT_FINISHED_EVENT]
    if not found:
        outcome.exit_code = ExitCode.FAILED
        outcome.message = (outcome.message + "\nnnconsole import ended without announcing the project it "
                           "wrote").strip()
        return
    event = found[-1]
    outcome.project = str(event.get("project") or "") or None
    outcome.report = str(event.get("report") or "")
    outcome.unsupported = [str(item) for item in event.get("unsupported") or []]
    outcome.notes = [str(item) for item in event.get("notes") or []]
