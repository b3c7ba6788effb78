"""How the TRAINING tab answers its run controllers' signals: a run started, records arrived, it finished,
it did not start. Only the open project's controller changes the tab; the others' endings go to the
status bar (runs of other projects train in the background, ``ProjectRuns``).
"""
from __future__ import annotations

import html
import os
from typing import Any, Dict, List

from nnconsole.app.bridge.run_controller import RunController
from nnconsole.app.training.project_runs import project_key, project_name
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RunStatus
from nnconsole.app.widgets.rich_text import plain_tooltip


class RunEventsMixin:
    """The signal handlers of ``TrainingPage`` (which wires them in ``_wire_controller``).

    Uses the page's ``projects``, ``document``, ``window_``, ``run_button``, ``stop_button``, ``workers``,
    ``status``, ``error``, ``progress``, ``curves``, ``log_pane``, ``live_run``, ``refresh_history`` and ``_show_live``.
    """

    def _is_shown(self, controller: RunController) -> bool:
        return controller is self.projects.controllers.get(project_key(self.document.path))

    def _background_message(self, text: str) -> None:
        status_bar = getattr(self.window_, "statusBar", None)
        if callable(status_bar):
            status_bar().showMessage(text, 15000)

    def _running_changed(self, controller: RunController, running: bool) -> None:
        if not self._is_shown(controller):
            return
        self.run_button.setEnabled(not running)
        self.workers.setEnabled(not running)
        self.stop_button.setEnabled(running and controller.run_dir is not None)

    def _run_started(self, controller: RunController, run_dir: str) -> None:
        if not self._is_shown(controller):
            return
        self.refresh_history()
        self._show_live(controller)

    def _records_received(self, controller: RunController, run_dir: str, records: List[Dict[str, Any]]) -> None:
        if not self._is_shown(controller):
            return
        self.curves.add_records(run_dir, records)
        if run_dir == self.live_run and self.progress.run_dir == run_dir:  # the strip shows the selected run only
            self.progress.update_from(records)
            warnings = [r for r in records if r.get("type") == "warning"]
            if warnings:
                message = str(warnings[-1].get("message", ""))
                self.status.setToolTip(plain_tooltip(message))  # the whole text with its advice; the bar shows the first sentence
                self.status.setText(f"<span style='color:#9a5b00'>&#9888; {html.escape(message.split('. ')[0])}"
                                    "</span>")

    def _run_finished(self, controller: RunController, run_dir: str, name: str, code: int) -> None:
        status = RunStatus(name)
        if not self._is_shown(controller):
            self._background_message(f"The run {os.path.basename(run_dir)} of "
                                     f"{project_name(self.projects.key_of(controller))} ended: {status}.")
            return
        st = runs.read_status(run_dir)
        if self.progress.run_dir == run_dir:  # the run's own figure: status.json records where it ended
            self.progress.finish(status, st.iteration if st and status in (RunStatus.STOPPED, RunStatus.FINISHED)
                                 else None)
        name = os.path.basename(run_dir)
        if status == RunStatus.FAILED:
            rank = f" on rank {st.failed_rank}" if st and st.failed_rank is not None else ""
            message = (st.message if st and st.message else "") or controller.stderr_text.strip()
            self.show_error(f"Run {name} failed{rank} (exit code {code}).\n{message}")
            self.status.setText(f"<span style='color:#b00000'>Run {html.escape(name)} failed{rank}.</span>")
        elif status == RunStatus.STOPPED:
            self.status.setText(f"Run <b>{html.escape(name)}</b> stopped with a checkpoint; the log pane's "
                                "<b>Resume</b> continues it")
        else:
            best = f", best validation error {st.best_validation_error:.4f}" if st and st.best_validation_error \
                is not None else ""
            self.status.setText(f"Run <b>{html.escape(name)}</b> {html.escape(status)}{best}.")
        self.refresh_history()
        self.log_pane.set_run(run_dir)
        self.log_pane.update_resume()

    def _launch_failed(self, controller: RunController, message: str) -> None:
        if not self._is_shown(controller):
            self._background_message(f"The run of {project_name(self.projects.key_of(controller))} did not start: "
                                     f"{message.splitlines()[0] if message else ''}")
            return
        self.progress.reset("not started")
        self.show_error(f"The engine did not start the run:\n{message}")
        self.status.setText("<span style='color:#b00000'>The run did not start (see the message).</span>")

    def show_error(self, text: str) -> None:
        self.error.setPlainText(text)
        self.error.show()
