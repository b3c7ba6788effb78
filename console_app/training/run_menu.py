"""The run history's right-click menu: rename/annotate, resume, re-edit, export, evaluate, compare, open
folder, delete, and prune failed and empty runs.

Each action does what the CLI would (``train --resume``, ``export``) through the GUI's engine process;
deleting and pruning go through ``run_manage`` (a trash, never a run in use); the questions are
``dialogs`` functions tests replace.
"""
from __future__ import annotations

import html
import os
from typing import Any, List, Optional

from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QMenu

from nnconsole.app.bridge.engine_process import EngineCommand
from nnconsole.app.training import dialogs, run_manage
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.notes import read_note, write_note
from nnconsole.engine.rundir.protocol import RESOLVED_FILE, RESUMABLE_STATUSES, RunStatus


class RunMenuMixin:
    """The menu's actions on ``TrainingPage`` (uses its ``history``, ``controller``, ``status``, ``progress``,
    ``error``, ``curves``, ``log_pane``, ``window_``, ``rows``, ``refresh_history`` and ``_dialog_parent``)."""

    _export_command: Optional[EngineCommand] = None

    # ---- the menu --------------------------------------------------------------------------------
    def build_run_menu(self, run_dir: str) -> QMenu:
        """The menu for one run; actions that cannot apply now are disabled (their tooltips say why)."""
        st = runs.effective_status(run_dir)
        status = st.status if st else RunStatus.UNKNOWN
        busy = self.controller.is_running()
        finals = any(os.path.isfile(os.path.join(run_dir, n)) for n in run_manage.TRAINED_WEIGHTS)
        menu = QMenu(self)
        menu.setObjectName("run_menu")

        def add(key: str, text: str, slot: Any, enabled: bool = True, tip: str = "") -> None:
            action = menu.addAction(text)
            action.setObjectName(f"run_menu_{key}")
            action.setEnabled(enabled)
            action.setToolTip(tip)
            action.setStatusTip(tip)
            action.triggered.connect(lambda _checked=False: slot(run_dir))

        add("rename", "Rename / annotate...", self.rename_run)
        can_resume = status in RESUMABLE_STATUSES and runs.latest_checkpoint(run_dir) is not None and not busy
        add("resume", "Resume...", self.resume_run, can_resume,
            f"nnconsole train --resume {run_dir} (stopped or failed runs with a checkpoint)")
        add("reedit", "Re-edit in EDIT (trained weights as initial parameters)...", self.reedit_run,
            os.path.isfile(os.path.join(run_dir, RESOLVED_FILE)))
        add("export", "Export NNP / ONNX / nntxt...", self.export_run, finals and self._export_command is None,
            "nnconsole export RUN --format nnp|onnx|nntxt")
        add("evaluate", "Open in EVALUATION", self.evaluate_run, finals)
        checked = run_dir in self.history.checked_runs()
        add("compare", "Remove from comparison" if checked else "Compare (overlay its curves)", self.compare_run)
        add("folder", "Open folder", lambda d: dialogs.open_folder(d, self._dialog_parent()))
        menu.addSeparator()
        add("delete", "Delete (move to trash)...", lambda d: self.delete_runs([d]), status != RunStatus.RUNNING)
        add("prune", "Prune failed and empty runs...", lambda _d: self.prune_runs(),
            any(row.failed_or_empty for row in self.rows))
        menu.setToolTipsVisible(True)
        return menu

    def _show_run_menu(self, run_dir: str, where: QPoint) -> None:
        """Pop the run's menu up (not modal: kept until the next one replaces it)."""
        old, self.run_menu = getattr(self, "run_menu", None), self.build_run_menu(run_dir)
        if old is not None:
            old.deleteLater()
        self.run_menu.popup(where)

    # ---- actions -----------------------------------------------------------------------------------
    def rename_run(self, run_dir: str) -> bool:
        """Ask for the run's title and note and save them in its note.json (no engine file changes)."""
        note = read_note(run_dir)
        answer = dialogs.ask_run_note(self._dialog_parent(), os.path.basename(run_dir), note.title, note.note)
        if answer is None:
            return False
        try:
            write_note(run_dir, *answer)
        except OSError as exc:
            dialogs.tell(self._dialog_parent(), "Rename run", f"Could not save the note of {run_dir}: "
                         f"{exc.strerror or exc}", warning=True)
            return False
        self.refresh_history()
        return True

    def resume_run(self, run_dir: str, workers: Optional[int] = None) -> bool:
        """``nnconsole train --resume RUN_DIR --gpus N`` (asking N, the run's own count by default)."""
        if self.controller.is_running():
            self.status.setText("A run is going; stop it before resuming another.")
            return False
        if workers is None:
            st = runs.read_status(run_dir)
            workers = dialogs.ask_workers(self._dialog_parent(), os.path.basename(run_dir), st.workers if st else 1)
            if workers is None:
                return False
        self.error.hide()
        self.progress.reset("resuming...")
        self.status.setText(f"Resuming {html.escape(os.path.basename(run_dir))} with {workers} worker(s)...")
        self.controller.start_resume(run_dir, workers)
        return True

    def reedit_run(self, run_dir: str) -> Optional[str]:
        """A new project from the run's project with its trained weights as initial parameters, opened in
        EDIT (the open project is closed the usual way: unsaved changes are asked about)."""
        path = dialogs.choose_reedit_path(self._dialog_parent(), run_manage.suggested_reedit_path(run_dir))
        if not path:
            return None
        try:
            path = run_manage.reedit_project(run_dir, path)
        except (OSError, ValueError) as exc:
            dialogs.tell(self._dialog_parent(), "Re-edit", f"Could not make a project from {run_dir}:\n{exc}",
                         warning=True)
            return None
        files = getattr(self.window_, "files", None)
        if files is not None and files.open_path(path):
            show_tab = getattr(self.window_, "show_tab", None)
            if callable(show_tab):
                show_tab("edit")
        else:
            self.status.setText(f"Saved the run's project as <code>{html.escape(path)}</code>")
        return path

    def export_run(self, run_dir: str) -> bool:
        """``nnconsole export RUN --format F -o FILE`` in the engine's process; the status line reports it."""
        if self._export_command is not None:
            return False
        name = os.path.basename(run_dir)
        choice = dialogs.choose_export(self._dialog_parent(), os.path.join(run_dir, f"{name}.nnp"))
        if choice is None:
            return False
        fmt, path = choice
        args = ["export", os.path.abspath(run_dir), "--format", fmt, "--output", os.path.abspath(path)]
        if os.path.isfile(os.path.join(run_dir, "parameters_best.h5")):
            args.append("--best")
        if os.path.exists(path):
            args.append("--force")  # the file dialog asked before replacing it
        command = EngineCommand(self)
        command.command_finished.connect(lambda code, out, err: self._export_finished(path, code, out, err))
        self._export_command = command
        self.status.setText(f"Exporting {html.escape(name)} as {fmt}...")
        command.start(args, cwd=run_dir)
        return True

    def _export_finished(self, path: str, code: int, stdout: str, stderr: str) -> None:
        command, self._export_command = self._export_command, None
        if command is not None:
            command.deleteLater()
        if code == 0:
            self.status.setText(f"Exported <code>{html.escape(path)}</code>")
        else:
            self.show_error(f"Export failed (exit code {code}):\n{(stderr or stdout).strip()}")

    def evaluate_run(self, run_dir: str) -> bool:
        """Show the run in the EVALUATION tab."""
        pages = getattr(self.window_, "pages", {})
        page = pages.get("evaluation") if isinstance(pages, dict) else None
        if page is None or not hasattr(page, "select_run"):
            return False
        if hasattr(page, "refresh_runs"):
            page.refresh_runs()
        page.select_run(run_dir)
        self.window_.show_tab("evaluation")
        return True

    def compare_run(self, run_dir: str) -> None:
        """Tick or untick the run's Compare box: its curves are overlaid on the shown run's."""
        self.history.set_checked(run_dir, run_dir not in self.history.checked_runs())

    def delete_runs(self, run_dirs: List[str], ask: bool = True) -> List[str]:
        """Move runs to the trash after asking; runs in use are kept (and named). Returns those moved."""
        if not run_dirs or (ask and not dialogs.confirm_delete_runs(self._dialog_parent(),
                                                                    [os.path.basename(d) for d in run_dirs])):
            return []
        moved, kept, where = [], [], set()
        for run_dir in run_dirs:
            if self.controller.run_dir and os.path.abspath(run_dir) == self.controller.run_dir \
                    and self.controller.is_running():
                kept.append(f"{os.path.basename(run_dir)}: it is running; stop it first")
                continue
            try:
                where.add(run_manage.delete_run(run_dir))
                moved.append(run_dir)
            except (run_manage.RunInUse, OSError) as exc:
                kept.append(f"{os.path.basename(run_dir)}: {exc}")
        self.refresh_history()
        if self.log_pane.run_dir in moved:  # what was shown of a deleted run goes with it
            self.log_pane.set_run(None)
        if self.curves.primary in moved:
            self.curves.set_primary(None)
        if self.progress.run_dir in moved:  # nor its figures in the progress strip
            self.progress.reset()
        if kept:
            dialogs.tell(self._dialog_parent(), "Runs kept", "These runs were not deleted:\n\n" + "\n".join(kept),
                         warning=True)
        if moved:
            self.status.setText(f"Moved {len(moved)} run(s) to {html.escape(', '.join(sorted(where)))}")
        return moved

    def prune_runs(self) -> List[str]:
        """Move every failed or empty run of the project to the trash (after asking)."""
        return self.delete_runs(run_manage.failed_or_empty(self.rows))
