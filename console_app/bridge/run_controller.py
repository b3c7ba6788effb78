"""Runs the engine's CLI as a process and tails the run directory, so the GUI trains exactly as the CLI does.

``RunController`` owns one training (or replay) process: it starts ``nnconsole train PROJECT --gpus N
--quiet --events FILE``, learns the run directory from the CLI's ``run_dir`` event in FILE
(``nnconsole.engine.rundir.protocol``: JSON, never the human text), tails ``metrics.jsonl`` with
``nnconsole.engine.rundir.store.read_metrics`` on a QTimer, and reports the end from ``status.json``. Stop sends SIGTERM,
which the launcher turns into a graceful stop with a checkpoint. A run started elsewhere (the CLI, or
a previous GUI) can be attached to: it is tailed until its process is gone.

The training process is detached from the GUI: it runs in its own session with its output in files
(not pipes), so it survives the GUI when the user leaves it running (``release``), and the next GUI
attaches to it through its status.json (``attach``). The output files start in a private folder in
the results root and move into the run directory once the CLI names it (``cli-output.log``,
``cli-errors.log``): the CLI keeps writing to them there, GUI or not. Starting the CLI as a process is
:mod:`nnconsole.app.bridge.engine_process`'s job.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from typing import List, Optional

from PySide6.QtCore import QObject, QTimer, Signal

from nnconsole.app.bridge import engine_process
from nnconsole.app.bridge.engine_process import EVENTS_FILE, OutputTail, is_engine_launcher, output_folder, remove_empty
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RUN_DIR_EVENT, STOP_FILE, RunStatus, read_events
from nnconsole.engine.errors import ExitCode

POLL_MS = 66  # ~15 Hz: how often metrics.jsonl is read while a run goes
ALIVE_CHECK_TICKS = 15  # attached runs: check the process every ~1 s
OUTPUT_FILES = (("stdout", "cli-output.log"), ("stderr", "cli-errors.log"))  # (started as, name in the run dir)


class RunController(QObject):
    """One training run at a time: start, stop, attach, and the records it writes, as signals."""

    run_started = Signal(str)  # run directory
    records_received = Signal(str, list)  # run directory, new metrics records (dicts)
    run_finished = Signal(str, str, int)  # run directory, status (a RunStatus word), exit code
    launch_failed = Signal(str)  # the engine ended before creating a run directory: its message
    running_changed = Signal(bool)

    def __init__(self, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self._child: Optional[subprocess.Popen] = None
        self._output_dir: Optional[str] = None  # the child's stdout/stderr files
        self._made_dirs: List[str] = []  # results folders made for them (removed if no run comes of it)
        self._tails: List[OutputTail] = []
        self._run_dir: Optional[str] = None
        self._attached_pid: Optional[int] = None
        self._offset = 0
        self._ticks = 0
        self._stdout = ""
        self._stderr = ""
        self._events_offset = 0
        self.stop_requested = False
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self._poll)

    # ---- state ------------------------------------------------------------------------------------
    @property
    def run_dir(self) -> Optional[str]:
        return self._run_dir

    @property
    def output(self) -> str:
        return self._stdout + self._stderr

    @property
    def stderr_text(self) -> str:
        return self._stderr

    def is_running(self) -> bool:
        return self._child is not None or self._attached_pid is not None

    @property
    def launcher_pid(self) -> Optional[int]:
        """The ``nnconsole train`` process of the run (started here or attached to), None when idle."""
        return self._child.pid if self._child is not None else self._attached_pid

    def records_so_far(self) -> List[dict]:
        """The live run's records already emitted (up to the tail offset), to redraw it without duplicates."""
        if self._run_dir is None:
            return []
        records, _ = runs.read_metrics(self._run_dir, 0, until=self._offset)
        return records

    def is_attached(self) -> bool:
        return self._attached_pid is not None

    # ---- starting ---------------------------------------------------------------------------------
    def start_training(self, project_path: str, workers: int, epochs: Optional[int] = None,
                       device: Optional[str] = None, output: Optional[str] = None,
                       allow_outside_data: bool = False, simulate_workers: int = 0) -> None:
        """``nnconsole train PROJECT --gpus N --quiet`` (progress comes from metrics.jsonl, not stdout).

        ``allow_outside_data`` passes ``--allow-outside-data``: only when the user trusts the project.
        ``simulate_workers`` above 1 passes ``--simulate-workers``: with ``--gpus`` the CLI trains real workers
        only unless told, so the project's CONFIG switch (multi_gpu.simulate_workers) must be passed on.
        """
        args = ["train", os.path.abspath(project_path), "--gpus", str(int(workers)), "--quiet"]
        if int(simulate_workers or 0) > 1:
            args += ["--simulate-workers", str(int(simulate_workers))]
        if allow_outside_data:
            args.append("--allow-outside-data")
        if epochs:
            args += ["--epochs", str(int(epochs))]
        if device:
            args += ["--device", device]
        if output:
            args += ["--output", output]
        self._start(args, os.path.dirname(os.path.abspath(project_path)),
                    os.path.abspath(output) if output else runs.results_root(project_path))

    def start_replay(self, run_dir: str) -> None:
        """``nnconsole replay RUN_DIR --quiet``: trains a new run from the snapshot and compares metrics."""
        root = os.path.dirname(os.path.abspath(run_dir))  # the replay's run goes next to the original
        self._start(["replay", os.path.abspath(run_dir), "--quiet"], root, root)

    def start_resume(self, run_dir: str, workers: Optional[int] = None) -> None:
        """``nnconsole train --resume RUN_DIR [--gpus N] --quiet``: the run goes on in its own directory from
        its last checkpoint, with its old worker count or ``workers``."""
        run_dir = os.path.abspath(run_dir)
        args = ["train", "--resume", run_dir, "--quiet"]
        if workers:
            args += ["--gpus", str(int(workers))]
        self._start(args, os.path.dirname(run_dir), os.path.dirname(run_dir))

    def _start(self, args: List[str], cwd: str, results_root: str) -> None:
        if self.is_running():
            raise RuntimeError("a run is already going; stop it first")
        self._reset()
        self._output_dir, self._made_dirs = output_folder(results_root)
        try:
            events = os.path.join(self._output_dir, EVENTS_FILE)
            self._child = engine_process.start_detached(args + ["--events", events], cwd, self._output_dir)
        except OSError as exc:
            self._drop_output()
            program, lead = engine_process.engine_program()
            self.launch_failed.emit(f"could not start the engine ({' '.join([program] + lead)}): "
                                    f"{exc.strerror or exc}")
            return
        self._tails = [OutputTail(os.path.join(self._output_dir, name)) for name, _ in OUTPUT_FILES]
        self.running_changed.emit(True)
        self._timer.start()

    def attach(self, run_dir: str) -> bool:
        """Tail a run another process is training; False when it is not running (anymore)."""
        if self.is_running():
            return False
        status = runs.read_status(run_dir)
        if status is None or status.status != RunStatus.RUNNING or not is_engine_launcher(status.pid):
            return False
        self._reset()
        self._attached_pid = status.pid
        self._run_dir = os.path.abspath(run_dir)
        self.running_changed.emit(True)
        self.run_started.emit(self._run_dir)
        self._timer.start()
        self._poll()
        return True

    def _reset(self) -> None:
        self._run_dir = None
        self._attached_pid = None
        self._offset = 0
        self._ticks = 0
        self._stdout = self._stderr = ""
        self._events_offset = 0
        self.stop_requested = False

    # ---- stopping ---------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the run to stop at the next update: SIGTERM to ``nnconsole train`` (checkpoint kept).

        When the signal cannot be sent (another user's process), the run's STOP file asks the same.
        """
        self.stop_requested = True
        pid = self.launcher_pid
        if not pid:
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        except PermissionError:
            if self._run_dir:
                try:
                    open(os.path.join(self._run_dir, STOP_FILE), "w").close()
                except OSError:
                    pass

    def shutdown(self, wait_ms: int = 15000) -> None:
        """Stop gracefully and wait (blocking, for application exit) so no run is killed mid-write."""
        self._timer.stop()
        if not self.is_running():
            return
        self.stop()
        deadline = time.monotonic() + wait_ms / 1000
        if self._child is not None:
            try:
                self._child.wait(max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                self._child.kill()
                self._child.wait(2)
            self._child = None
            self._drop_output()
        else:
            while runs.pid_alive(self._attached_pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            self._attached_pid = None

    def release(self) -> None:
        """Leave the run going without this GUI (application exit): stop following it, never signal it.

        The process is in its own session and writes to files, so it trains on; a later GUI attaches
        to it through status.json. Its output files are unlinked (it keeps writing to them unseen).
        """
        self._timer.stop()
        self._child = None
        self._attached_pid = None
        self._drop_output()

    def _drop_output(self) -> None:
        folder, self._output_dir = self._output_dir, None
        self._tails = []
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
        if self._run_dir is None:
            remove_empty(self._made_dirs)
        self._made_dirs = []

    # ---- process output ---------------------------------------------------------------------------
    def _read_output(self) -> None:
        """New text of the child's stdout and stderr (for messages), and its events (the run directory)."""
        if not self._tails:
            return
        self._stdout += self._tails[0].read()
        self._stderr += self._tails[1].read()
        if self._run_dir is not None or not self._output_dir:
            return
        events, self._events_offset = read_events(os.path.join(self._output_dir, EVENTS_FILE), self._events_offset)
        for event in events:
            run_dir = event.get("run_dir")
            if event["event"] == RUN_DIR_EVENT and isinstance(run_dir, str) and run_dir:
                self._run_dir = os.path.abspath(run_dir)
                self._move_output(self._run_dir)
                self.run_started.emit(self._run_dir)
                return

    def _move_output(self, run_dir: str) -> None:
        """Move the output files into the run directory (the CLI writes on to them there); the private
        folder goes. Where they cannot move (another file system), they stay until the run ends. A resumed
        run's earlier output is kept, renamed with the time it was replaced (``cli-output.<time>.log``)."""
        folder = self._output_dir
        if not folder or not os.path.isdir(run_dir):
            return
        stamp = time.strftime("%Y%m%d_%H%M%S")
        try:
            for tail, (name, final) in zip(self._tails, OUTPUT_FILES):
                target = os.path.join(run_dir, final)
                if os.path.exists(target):
                    stem, ext = os.path.splitext(final)
                    os.replace(target, os.path.join(run_dir, f"{stem}.{stamp}{ext}"))
                os.replace(os.path.join(folder, name), target)
                tail.path = target
        except OSError:
            return
        self._output_dir = None
        shutil.rmtree(folder, ignore_errors=True)

    def _child_ended(self) -> bool:
        """True when the child exited (its end is then reported)."""
        code = self._child.poll() if self._child is not None else None
        if code is None:
            return False
        self._child = None
        self._read_output()
        self._drop_output()
        self._finish(code)
        return True

    # ---- tailing ----------------------------------------------------------------------------------
    def _poll(self) -> None:
        if self._child is not None:
            self._read_output()
            if self._child_ended():
                return
        if self._run_dir is None:
            return
        records, self._offset = runs.read_metrics(self._run_dir, self._offset)
        if records:
            self.records_received.emit(self._run_dir, records)
        self._ticks += 1
        if self._attached_pid and self._ticks % ALIVE_CHECK_TICKS == 0:
            # The launcher writes its final status before it exits; a vanished process ends it too.
            status = runs.read_status(self._run_dir)
            if (status is not None and status.status != RunStatus.RUNNING) or not runs.pid_alive(self._attached_pid):
                self._attached_pid = None
                self._finish(0, attached=True)

    def _finish(self, code: int, attached: bool = False) -> None:
        self._timer.stop()
        run_dir = self._run_dir
        if run_dir is None:
            self.running_changed.emit(False)
            message = self._stderr.strip() or self._stdout.strip() or f"the engine exited with code {code}"
            self.launch_failed.emit(message)
            return
        records, self._offset = runs.read_metrics(run_dir, self._offset)
        if records:
            self.records_received.emit(run_dir, records)
        status = runs.effective_status(run_dir)
        name = status.status if status else (RunStatus.FINISHED if code == ExitCode.OK else RunStatus.FAILED)
        if attached:  # not our child: no exit code seen, so give the CLI's code for that outcome
            code = {RunStatus.FINISHED: ExitCode.OK, RunStatus.STOPPED: ExitCode.STOPPED}.get(name, ExitCode.FAILED)
        self.running_changed.emit(False)
        self.run_finished.emit(run_dir, name, int(code))
