"""What the TRAINING tab shows of one run: the run selected in the history (its curves, log, progress strip and
status), the live run it follows, an empty view for another project, and the
Workers box's note when it differs from CONFIG's setting (issue 28 item 7: the strip always shows the shown run),
and the shown curve saved as CSV or PNG.
"""
from __future__ import annotations

import html
import os

from nnconsole.app.bridge.run_controller import RunController
from nnconsole.app.training import dialogs
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RunStatus


class RunViewMixin:
    """``TrainingPage``'s view of runs (uses its ``curves``, ``progress``, ``log_pane``, ``status``, ``error``,
    ``problems``, ``history``, ``workers``, ``workers_note``, ``document``, ``controller``, ``live_run``,
    ``show_error``, ``_dialog_parent`` and ``_running_changed``)."""

    def _set_primary(self, run_dir: str, records: list) -> None:
        """Show ``run_dir`` as the main run; every run ticked in Compare stays drawn (the run shown before, when
        ticked, becomes an overlay again instead of vanishing while its tick stays)."""
        self.curves.set_primary(run_dir, records)
        self._compare_changed(self.history.checked_runs())

    def _clear_view(self) -> None:
        """Empty curves, progress, status and error: what the previous project left must not stay."""
        self.curves.set_overlays({})
        self.curves.set_primary(None)
        self.progress.reset()
        self.error.hide()
        self.error.clear()
        self.problems.clear()
        self._pending_run = None
        self.log_pane.set_run(None)
        self.status.setText("No run yet.")
        self.status.setToolTip("")

    def _show_live(self, controller: RunController) -> None:
        """Follow the open project's running run: its curves so far, progress, status and Stop."""
        run_dir = controller.run_dir
        records = controller.records_so_far()
        what = "Following" if controller.is_attached() else "Training"
        self.status.setText(f"{what} <b>{html.escape(os.path.basename(run_dir))}</b> &mdash; "
                            f"<code>{html.escape(run_dir)}</code>")
        self.error.hide()
        self.progress.reset("starting...", run_dir)
        self.progress.update_from(records)
        self._set_primary(run_dir, records)
        self.log_pane.set_run(run_dir)
        self.history.select_run(run_dir, emit=False)
        self._running_changed(controller, True)

    def _update_workers_note(self) -> None:
        """'CONFIG: N' beside the Workers box while it differs from the project's multi_gpu.workers (the run
        uses the box; the plan and prediction in CONFIG are for the project's N)."""
        configured = max(1, int(self.document.project.multi_gpu.workers))
        differs = self.workers.value() != configured
        self.workers_note.setText(f"(CONFIG: {configured})" if differs else "")
        self.workers_note.setToolTip(
            f"This run will use {self.workers.value()} worker(s); the project's Multi-GPU setting in CONFIG "
            f"(multi_gpu.workers) is {configured}, which CONFIG's plan and prediction show. Change it there to "
            "keep this choice in the project." if differs else "")
        self.workers_note.setVisible(differs)

    def show_run(self, run_dir: str) -> None:
        """Show a run's curves (all its records so far; a live run keeps updating) and, for a failed
        run, the engine's message."""
        records = self._records_of(run_dir)
        self._set_primary(run_dir, records)
        self.log_pane.set_run(run_dir)
        if self.live_run is not None and os.path.abspath(run_dir) == self.live_run:
            self.progress.reset("starting...", self.live_run)  # back to the live run: its figures so far
            self.progress.update_from(records)
            return
        st = runs.effective_status(run_dir)
        name = html.escape(os.path.basename(run_dir))
        if st is None:
            self.progress.reset("no status", os.path.abspath(run_dir))
            return
        self.progress.show_ended(os.path.abspath(run_dir), st.status, records, st.iteration)
        best = "" if st.best_validation_error is None else f", best validation error {st.best_validation_error:.4f}"
        self.status.setText(f"Showing <b>{name}</b>: {html.escape(st.status)}, N={st.workers}{best}")
        if st.status == RunStatus.FAILED:
            rank = f" on rank {st.failed_rank}" if st.failed_rank is not None else ""
            self.show_error(f"Run {os.path.basename(run_dir)} failed{rank}.\n{st.message}")
        else:
            self.error.hide()

    # ---- export -------------------------------------------------------------------------------
    def _save_csv(self) -> None:
        name = os.path.basename(self.curves.primary or "curve")
        path = dialogs.choose_save_path(self._dialog_parent(), "Save learning curve as CSV", f"{name}.csv",
                                        "CSV (*.csv)")
        if path:
            rows = self.curves.save_csv(path)
            self.status.setText(f"Saved {rows} records to {html.escape(path)}")

    def _save_png(self) -> None:
        name = os.path.basename(self.curves.primary or "curve")
        path = dialogs.choose_save_path(self._dialog_parent(), "Save learning curve as PNG", f"{name}.png",
                                        "PNG image (*.png)")
        if path and self.curves.save_png(path):
            self.status.setText(f"Saved {html.escape(path)}")
