"""Starting the engine's CLI from the GUI: ``nnconsole ARGS`` exactly as a terminal user types it.

``start_detached`` starts a training (or replay) in its own session with its output in files, so it
outlives the GUI; ``EngineCommand`` runs one short command (evaluate, infer, export, import) in a QProcess, off
the GUI thread, and with ``events=True`` hands on the command's ``--events`` stream (progress, the file it wrote)
as it comes: the one way such a command tells the GUI what it does (its terminal lines are for people);
``new_engine_process`` and ``start_engine`` give a QProcess to a caller that reads its output itself (dataset
create).
``is_engine_launcher`` tells whether a PID from a run's status.json is still an nnconsole launcher.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import List, Optional

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import read_events
from nnconsole.engine.errors import ExitCode

EVENTS_FILE = "events.jsonl"  # in a private folder: the CLI's machine-readable events (--events)
EVENTS_POLL_MS = 200  # how often a command's events file is read while it runs


def engine_program() -> tuple:
    """(program, leading arguments) that run the CLI here: ``python -m nnconsole``, or the frozen app."""
    from nnconsole.engine.helper_processes import cli_command

    argv = cli_command()
    return argv[0], argv[1:]


def is_engine_launcher(pid: Optional[int]) -> bool:
    """Whether ``pid`` is a live ``nnconsole train`` or ``replay`` process.

    The PID in a run's status.json may belong to any program by now (the launcher was killed, the
    machine rebooted): such a process must never be followed or sent a stop signal. Where the
    system has no /proc to tell, a live PID is taken at its word.
    """
    if not runs.pid_alive(pid):
        return False
    if not os.path.isdir("/proc/self"):
        return True
    try:
        with open(f"/proc/{int(pid)}/cmdline", "rb") as fh:
            argv = [a.decode("utf-8", "replace") for a in fh.read().split(b"\0") if a]
    except FileNotFoundError:
        return False
    except OSError:
        return True
    engine = any(a == "nnconsole.engine.cli.main" or os.path.basename(a).startswith("nnconsole") for a in argv)
    return engine and any(a in ("train", "replay") for a in argv)


def _environment() -> QProcessEnvironment:
    env = QProcessEnvironment.systemEnvironment()
    env.insert("PYTHONUNBUFFERED", "1")
    return env


def output_folder(near: str) -> tuple:
    """(folder, folders made for it): a private folder for the CLI's output in ``near`` (the results
    root: the same file system as the run directory, so the files can move there), else in the system's
    temp folder. The folders made are removed again if no run comes of it (``remove_empty``)."""
    made = []
    parent = os.path.abspath(near)
    while parent and not os.path.isdir(parent) and os.path.dirname(parent) != parent:
        made.append(parent)
        parent = os.path.dirname(parent)
    try:
        os.makedirs(near, exist_ok=True)
        return tempfile.mkdtemp(prefix=".starting-", dir=near), made
    except OSError:
        return tempfile.mkdtemp(prefix="nnconsole-run-"), []


def remove_empty(folders: List[str]) -> None:
    """Remove these folders, deepest first, where they are (still) empty."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            return


def start_detached(args: List[str], cwd: Optional[str], folder: str) -> subprocess.Popen:
    """Start ``nnconsole ARGS`` in its own session, stdout and stderr into files in ``folder``.

    Its own session: the GUI's terminal (Ctrl-C, hang-up) and the GUI's exit do not reach it. Files,
    not pipes: nothing breaks when the GUI that reads them is gone.
    """
    program, lead = engine_program()
    with open(os.path.join(folder, "stdout"), "wb") as out, open(os.path.join(folder, "stderr"), "wb") as err:
        return subprocess.Popen([program] + lead + list(args), cwd=cwd or None, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, env=dict(os.environ, PYTHONUNBUFFERED="1"),
                                start_new_session=True, close_fds=True)


class OutputTail:
    """New text of a file another process appends to (the detached CLI's stdout or stderr)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0

    def read(self) -> str:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return ""
        self.offset += len(data)
        return data.decode("utf-8", "replace")


def new_engine_process(owner: QObject, cwd: Optional[str] = None, merged: bool = False) -> QProcess:
    """A QProcess for ``nnconsole ...`` owned by ``owner`` (unbuffered output; stderr into stdout when
    ``merged``), not started: the owner connects its signals, then calls ``start_engine``."""
    process = QProcess(owner)
    process.setProcessEnvironment(_environment())
    if cwd:
        process.setWorkingDirectory(cwd)
    if merged:
        process.setProcessChannelMode(QProcess.MergedChannels)
    return process


def _engine_process(owner: QObject, cwd: Optional[str], on_stdout, on_stderr, on_finished, on_error) -> QProcess:
    """A QProcess for ``nnconsole ...`` owned by ``owner``, its output and end wired up (not started)."""
    process = new_engine_process(owner, cwd)
    process.readyReadStandardOutput.connect(on_stdout)
    process.readyReadStandardError.connect(on_stderr)
    process.finished.connect(on_finished)
    process.errorOccurred.connect(on_error)
    return process


def start_engine(process: QProcess, args: List[str]) -> None:
    """Start ``nnconsole ARGS`` (the same command a terminal user types) in ``process``."""
    program, lead = engine_program()
    process.start(program, lead + list(args))


class EngineCommand(QObject):
    """One short CLI command in a QProcess (e.g. ``evaluate RUN_DIR``); reports its output when done.

    Started with ``events=True`` it gets ``--events FILE`` (a private temporary file) and emits each event the
    command announces there (``nnconsole.engine.rundir.protocol``), all of them before ``command_finished``.
    """

    command_finished = Signal(int, str, str)  # exit code, stdout, stderr
    event_received = Signal(object)  # one event of the command's --events stream (a dict with "event")

    def __init__(self, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self._process: Optional[QProcess] = None
        self._stdout = ""
        self._stderr = ""
        self._events_dir: Optional[str] = None
        self._events_offset = 0
        self._events_timer = QTimer(self)
        self._events_timer.setInterval(EVENTS_POLL_MS)
        self._events_timer.timeout.connect(self._read_events)

    def is_running(self) -> bool:
        return self._process is not None

    def start(self, args: List[str], cwd: Optional[str] = None, events: bool = False) -> None:
        if self._process is not None:
            raise RuntimeError("a command is already running")
        self._stdout = self._stderr = ""
        args = list(args)
        if events:
            self._events_dir, self._events_offset = tempfile.mkdtemp(prefix="nnconsole-events-"), 0
            args += ["--events", os.path.join(self._events_dir, EVENTS_FILE)]
            self._events_timer.start()
        self._process = _engine_process(self, cwd, self._read, self._read, self._on_finished, self._on_error)
        start_engine(self._process, args)

    def _read_events(self) -> None:
        if self._events_dir is None:
            return
        found, self._events_offset = read_events(os.path.join(self._events_dir, EVENTS_FILE), self._events_offset)
        for event in found:
            self.event_received.emit(event)

    def _end_events(self) -> None:
        """The command ended: hand on the events it wrote last, then remove its events file."""
        self._events_timer.stop()
        self._read_events()
        if self._events_dir is not None:
            shutil.rmtree(self._events_dir, ignore_errors=True)
            self._events_dir = None

    def stop(self) -> None:
        """Ask the running command to end (SIGTERM, which the CLI treats as Ctrl-C); command_finished follows."""
        if self._process is not None:
            self._process.terminate()

    def kill(self) -> None:
        """End the running command at once (SIGKILL), for one that did not end on ``stop``."""
        if self._process is not None:
            self._process.kill()

    def _read(self) -> None:
        if self._process is None:
            return
        self._stdout += bytes(self._process.readAllStandardOutput()).decode("utf-8", "replace")
        self._stderr += bytes(self._process.readAllStandardError()).decode("utf-8", "replace")

    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.FailedToStart and self._process is not None:
            message = self._process.errorString()
            self._process.deleteLater()
            self._process = None
            self._end_events()
            self.command_finished.emit(-1, "", f"could not start the engine: {message}")

    def _on_finished(self, code: int, exit_status: QProcess.ExitStatus) -> None:
        if self._process is None:
            return
        self._read()
        process, self._process = self._process, None
        process.deleteLater()
        self._end_events()
        if exit_status == QProcess.CrashExit and code == ExitCode.OK:
            code = -1
        self.command_finished.emit(int(code), self._stdout, self._stderr)
