"""The TRAINING tab's log pane: a run's train.log, rank logs and launcher/CLI output, live, with failures
highlighted and the resume command as buttons.

Logs are tailed as they grow with bounded memory: at most ``MAX_LINES`` lines are kept, a file is opened
at its last ``BACKLOG_BYTES`` and one poll reads at most that much (what lies before is marked skipped).
A shrunk file (a resume rewrites it) is read again from its start.
"""
from __future__ import annotations

import os
import re
import shlex
from typing import List, Optional

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QColor, QFont, QGuiApplication, QSyntaxHighlighter, QTextCharFormat
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import LAUNCH_HEADER, LOG_FILE, LOGS_DIR, RESUMABLE_STATUSES
from nnconsole.app.widgets.rich_text import plain_tooltip

MAX_LINES = 5000  # lines kept in the pane
BACKLOG_BYTES = 256 * 1024  # read at most this much of a file at a time
POLL_MS = 500
# A failure: an exception's name or a traceback, an ERROR log level, or words that say a run broke; not the
# metrics lines' "error 0.17" (the error rate).
FAILURE = re.compile(r"\b\w*(Error|Exception)\b|\bERROR\b|(?i:traceback|\bfailed\b|\bfatal\b|\bkilled\b|"
                     r"\bdiverged?\b|\bnan\b|\baborted\b)")
WARNING = re.compile(r"warning", re.IGNORECASE)
EXTRA_LOGS = (os.path.join(LOGS_DIR, "launcher.log"), "cli-errors.log", "cli-output.log")


def log_files(run_dir: str) -> List[str]:
    """The run's logs that exist, relative to it: train.log, the rank logs in rank order, then the
    launcher's and the CLI's output."""
    logs = os.path.join(run_dir, LOGS_DIR)
    ranks = []
    if os.path.isdir(logs):
        found = [n for n in os.listdir(logs) if re.fullmatch(r"rank\d+\.log", n)]
        ranks = [os.path.join(LOGS_DIR, n) for n in sorted(found, key=lambda n: int(n[4:-4]))]
    named = [LOG_FILE] + ranks + list(EXTRA_LOGS)
    return [name for name in named if os.path.isfile(os.path.join(run_dir, name))]


# Runs launched before the entry script (engine/start_module.py) have the multi-line ``-c`` bootstrap program
# in their header: from the header line ending with its first line to the line that starts with its last, and
# the line after that (the program's trailing line break puts the module and the run folder there).
OLD_BOOTSTRAP_FIRST = " -c import os, sys"
OLD_BOOTSTRAP_LAST = "runpy.run_module("
OUTSIDE, IN_COMMAND, LAST_LINE = 0, 1, 2  # where a line stands (the highlighter's block states)


def next_state(line: str, state: int) -> int:
    """Where the line after ``line`` stands, given where ``line`` stands."""
    if state == OUTSIDE:
        starts = line.startswith(LAUNCH_HEADER) and line.rstrip().endswith(OLD_BOOTSTRAP_FIRST)
        return IN_COMMAND if starts else OUTSIDE
    if state == IN_COMMAND:
        return LAST_LINE if line.startswith(OLD_BOOTSTRAP_LAST) else IN_COMMAND
    return OUTSIDE


def is_failure(line: str, in_command: bool = False) -> bool:
    """Whether a log line tells of a failure. A launch's command line (launcher.log's header line, and an older
    run's multi-line bootstrap program after it) never does, whatever words its arguments hold."""
    return not in_command and not line.startswith(LAUNCH_HEADER) and FAILURE.search(line) is not None


def failure_lines(lines: List[str]) -> List[str]:
    """The lines of a log that tell of a failure (command lines left out)."""
    found, state = [], OUTSIDE
    for line in lines:
        if is_failure(line, state != OUTSIDE):
            found.append(line)
        state = next_state(line, state)
    return found


def resume_command(run_dir: str) -> str:
    return f"nnconsole train --resume {shlex.quote(os.path.abspath(run_dir))}"


class FailureHighlighter(QSyntaxHighlighter):
    """Lines that tell of a failure in red and bold; warnings in amber."""

    def __init__(self, document) -> None:
        super().__init__(document)
        self.failure = QTextCharFormat()
        self.failure.setForeground(QColor("#b00000"))
        self.failure.setFontWeight(QFont.Bold)
        self.failure.setBackground(QColor("#fff0f0"))
        self.warning = QTextCharFormat()
        self.warning.setForeground(QColor("#9a5b00"))

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt override
        state = max(self.previousBlockState(), OUTSIDE)  # -1 before the first block
        self.setCurrentBlockState(next_state(text, state))
        if state != OUTSIDE or text.startswith(LAUNCH_HEADER):
            return
        if is_failure(text):
            self.setFormat(0, len(text), self.failure)
        elif WARNING.search(text):
            self.setFormat(0, len(text), self.warning)


class FileTail:
    """New complete lines of a growing file, read in bounded pieces."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""
        self.started = False

    def read(self) -> List[str]:
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return []
        lines: List[str] = []
        if size < self.offset:  # rewritten (a resume starts it again): from its start
            self.offset, self.partial = 0, b""
            lines.append("[the log was rewritten; reading it from its start]")
        if size - self.offset > BACKLOG_BYTES:
            skipped = size - BACKLOG_BYTES - self.offset
            if self.started or self.offset:
                lines.append(f"[... {skipped:,} bytes skipped ...]")
            else:
                lines.append(f"[the first {skipped:,} bytes are not shown; the whole log: {self.path}]")
            self.offset, self.partial = size - BACKLOG_BYTES, b""
        self.started = True
        if size == self.offset:
            return lines
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read(BACKLOG_BYTES)
        except OSError:
            return lines
        self.offset += len(data)
        data = self.partial + data
        end = data.rfind(b"\n") + 1
        self.partial = data[end:][-BACKLOG_BYTES:]
        lines += data[:end].decode("utf-8", "replace").splitlines()
        return lines


class RunLogPane(QWidget):
    """File chooser, the log text, and Resume / Copy resume command for a stopped or failed run."""

    resume_requested = Signal(str)  # run directory

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("training_log_pane")
        self.run_dir: Optional[str] = None
        self._tail: Optional[FileTail] = None
        self._picked = False  # the user chose a log of this run: new files never change the choice
        self.files = QComboBox()
        self.files.setObjectName("training_log_file")
        self.files.setToolTip("train.log, each rank's log, the launcher's and the CLI's output")
        self.files.currentIndexChanged.connect(self._chosen_by_user)  # the pane's own changes block signals
        self.text = QPlainTextEdit()
        self.text.setObjectName("training_log_text")
        self.text.setReadOnly(True)
        self.text.setMaximumBlockCount(MAX_LINES)
        self.text.setLineWrapMode(QPlainTextEdit.NoWrap)
        self.text.setFont(QFont("monospace"))
        self.highlighter = FailureHighlighter(self.text.document())
        self.resume_button = QPushButton("\u21BB  Resume run...")
        self.resume_button.setObjectName("training_log_resume")
        self.resume_button.clicked.connect(lambda: self.run_dir and self.resume_requested.emit(self.run_dir))
        self.copy_button = QPushButton("Copy resume command")
        self.copy_button.setObjectName("training_log_copy_resume")
        self.copy_button.clicked.connect(self.copy_resume_command)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("<b>Log</b>"))
        bar.addWidget(self.files, 1)
        bar.addWidget(self.resume_button)
        bar.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.text, 1)
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self.poll)
        self._timer.start()
        self.set_run(None)

    def set_run(self, run_dir: Optional[str]) -> None:
        """Show this run's logs (train.log first); None empties the pane."""
        run_dir = os.path.abspath(run_dir) if run_dir else None
        if run_dir == self.run_dir and run_dir is not None:
            self.update_resume()
            return
        self.run_dir = run_dir
        self._picked = False
        self._fill_files()
        self._open_chosen()
        self.update_resume()

    def _fill_files(self) -> None:
        chosen = self.files.currentText()
        names = log_files(self.run_dir) if self.run_dir else []
        if LOG_FILE in names and not self._picked:
            chosen = LOG_FILE  # the run's own log as soon as it exists, not launcher.log's start-up chatter
        if names == [self.files.itemText(i) for i in range(self.files.count())] and chosen == self.files.currentText():
            return
        self.files.blockSignals(True)
        self.files.clear()
        self.files.addItems(names)
        if chosen in names:
            self.files.setCurrentIndex(names.index(chosen))
        self.files.blockSignals(False)

    def _chosen_by_user(self, _index: int) -> None:
        self._picked = True
        self._open_chosen()

    def _open_chosen(self) -> None:
        self.text.clear()
        name = self.files.currentText()
        self._tail = FileTail(os.path.join(self.run_dir, name)) if self.run_dir and name else None
        if self._tail is None:
            self.text.setPlaceholderText("No log yet." if self.run_dir else "Select a run to see its log.")
        self.poll()

    def poll(self) -> None:
        """Append the chosen log's new lines (and list log files that appeared)."""
        if self.run_dir is None:
            return
        if self.files.count() != len(log_files(self.run_dir)):
            had = self.files.currentText()
            self._fill_files()
            if self.files.currentText() != had and self.files.count():
                self._open_chosen()
                return
        if self._tail is None:
            return
        lines = self._tail.read()
        if lines:
            bar = self.text.verticalScrollBar()
            at_end = bar.value() >= bar.maximum() - 2
            self.text.appendPlainText("\n".join(lines))
            if at_end:
                bar.setValue(bar.maximum())

    def update_resume(self) -> None:
        """Resume buttons for a stopped or failed run with a checkpoint (hidden otherwise)."""
        st = runs.effective_status(self.run_dir) if self.run_dir else None
        can = bool(st and st.status in RESUMABLE_STATUSES and runs.latest_checkpoint(self.run_dir))
        self.resume_button.setVisible(can)
        self.copy_button.setVisible(can)
        if can:
            self.resume_button.setToolTip(plain_tooltip(resume_command(self.run_dir) + " (asks for the worker count)"))
            self.copy_button.setToolTip(plain_tooltip(resume_command(self.run_dir)))

    def copy_resume_command(self) -> None:
        if self.run_dir:
            QGuiApplication.clipboard().setText(resume_command(self.run_dir))

    def failure_lines(self) -> List[str]:
        """The lines shown that are highlighted as failures."""
        return failure_lines(self.text.toPlainText().splitlines())
