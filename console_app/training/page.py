"""The TRAINING tab: Run/Stop through the CLI, live learning curves, progress, run history, trade-off graph and
the large-batch study view (``study_view``, beside the curves).

The tab launches exactly what the CLI launches (``nnconsole train PROJECT --gpus N``, a detached
process owned by ``RunController``) and reads only the run-directory files. Selecting a run in the
history shows its curves; ticking Compare overlays more runs; a run still going from an earlier session
or from a terminal is attached to and followed live. A run belongs to its project: the tab shows only
the open project's runs, while runs of other projects go on in the background (``ProjectRuns``).
Run first checks the project in this process (``preflight``); the history's right-click menu manages
runs (``run_menu``); the log pane follows the shown run's logs (``log_pane``).
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from PySide6.QtCore import QCoreApplication, Qt, QTimer
from PySide6.QtWidgets import (QCheckBox, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QSizePolicy, QSpinBox,
                               QSplitter, QTabWidget, QVBoxLayout, QWidget)

from nnconsole.app.dataset.background import BackgroundCall
from nnconsole.app.bridge.run_controller import RunController
from nnconsole.app.training import dialogs
from nnconsole.app.training.curves import LearningCurves
from nnconsole.app.training import preflight
from nnconsole.app.training.history import RunHistory, RunRow, collect_runs
from nnconsole.app.training.log_pane import RunLogPane
from nnconsole.app.training.progress import RunProgress
from nnconsole.app.training.project_runs import ProjectRuns, project_key, project_name
from nnconsole.app.training.run_events import RunEventsMixin
from nnconsole.app.training.run_menu import RunMenuMixin
from nnconsole.app.training.run_view import RunViewMixin
from nnconsole.app.training.search_trials import SearchTrials
from nnconsole.app.training.study_view import StudyView
from nnconsole.app.training.tradeoff import TradeoffPlot
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RunStatus

HISTORY_POLL_MS = 4000  # notice runs started from a terminal
ERROR_STYLE = ("QPlainTextEdit { color: #7a0000; background: #fff4f4; border: 1px solid #e0a0a0; "
               "font-family: monospace; }")


def read_all_metrics(run_dir: str) -> List[Dict[str, Any]]:
    return list(runs.iter_metrics(run_dir))


class TrainingPage(RunEventsMixin, RunMenuMixin, RunViewMixin, QWidget):
    """Toolbar, progress strip, error panel, curves on the left, history and trade-off on the right."""

    def __init__(self, document: Any, window: Any = None, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("training_page")
        self.document = document
        self.window_ = window
        self.projects = ProjectRuns(self._wire_controller, self)
        self._leave_runs_at_exit = False  # the user's answer when closing during a run
        self._shut_down = False
        self.rows: List[RunRow] = []
        self._listing: List[str] = []
        self._pending_run: Optional[tuple] = None  # (check token, project path, workers, outside data allowed)
        self.checker = BackgroundCall()  # no Qt parent: it lives until its thread ends (as the DATASET tab's)
        self.checker.finished.connect(self._checked)

        self.run_button = QPushButton("\u25B6  Run")
        self.run_button.setObjectName("training_run")
        self.run_button.setToolTip("Save the project and train it: nnconsole train PROJECT --gpus N")
        self.stop_button = QPushButton("\u25A0  Stop")
        self.stop_button.setObjectName("training_stop")
        self.stop_button.setToolTip("Stop at the next update and keep a checkpoint (resumable)")
        self.stop_button.setEnabled(False)
        self.workers = QSpinBox()
        self.workers.setObjectName("training_workers")
        self.workers.setRange(1, 4096)
        self.workers.setToolTip("Workers for this run (GPUs, or CPU processes): --gpus N")
        self.workers_note = QLabel()  # says when this run's workers differ from CONFIG's multi_gpu.workers
        self.workers_note.setObjectName("training_workers_note")
        self.workers_note.setStyleSheet("QLabel { color: #9a5b00; }")
        self.workers.valueChanged.connect(lambda _n: self._update_workers_note())
        self.log_scale = QCheckBox("Log scale")
        self.log_scale.setObjectName("training_log_scale")
        self.save_csv_button = QPushButton("Save CSV...")
        self.save_csv_button.setObjectName("training_save_csv")
        self.save_png_button = QPushButton("Save PNG...")
        self.save_png_button.setObjectName("training_save_png")
        self.status = QLabel("No run yet.")
        self.status.setObjectName("training_status")
        self.status.setTextFormat(Qt.RichText)
        self.status.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # long paths must not widen the tab
        bar = QHBoxLayout()
        for w in (self.run_button, self.stop_button, QLabel("Workers:"), self.workers, self.workers_note):
            bar.addWidget(w)
        bar.addSpacing(16)
        for w in (self.log_scale, self.save_csv_button, self.save_png_button):
            bar.addWidget(w)
        bar.addSpacing(16)
        bar.addWidget(self.status, 1)

        self.progress = RunProgress()
        self.error = QPlainTextEdit()
        self.error.setObjectName("training_error")
        self.error.setReadOnly(True)
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setMaximumHeight(170)
        self.error.hide()
        self.problems = preflight.ProblemsPanel()
        self.problems.go_to_requested.connect(preflight.jump_handler(
            lambda: self.window_, lambda: self.document.project.network.names()))
        self.curves = LearningCurves()
        self.log_pane = RunLogPane()
        self.log_pane.resume_requested.connect(self.resume_run)
        self.history = RunHistory()
        self.tradeoff = TradeoffPlot()
        self.trials = SearchTrials(self._open_project)  # a search's trials (issue 29), hidden without any
        right = QSplitter(Qt.Vertical)
        for w in (self.history, self.trials, self.tradeoff):
            right.addWidget(w)
        right.setSizes([300, 220, 300])
        left = QSplitter(Qt.Vertical)
        left.addWidget(self.curves)
        left.addWidget(self.log_pane)
        left.setSizes([600, 200])
        self.study = StudyView(document, self.ensure_saved)  # a large-batch study's points and recommendation (issue 30)
        self.study.run_requested.connect(self._show_study_run)
        self.views = QTabWidget()
        self.views.setObjectName("training_views")
        self.views.addTab(left, "Learning curves")
        self.views.addTab(self.study, "Batch study")
        splitter = QSplitter(Qt.Horizontal)
        splitter.addWidget(self.views)
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setSizes([820, 560])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(bar)
        layout.addWidget(self.progress)
        layout.addWidget(self.error)
        layout.addWidget(self.problems)
        layout.addWidget(splitter, 1)

        self.run_button.clicked.connect(self.start_run)
        self.stop_button.clicked.connect(self.stop_run)
        self.log_scale.toggled.connect(self.curves.set_log_scale)
        self.save_csv_button.clicked.connect(self._save_csv)
        self.save_png_button.clicked.connect(self._save_png)
        self.history.run_selected.connect(self.show_run)
        self.history.compare_changed.connect(self._compare_changed)
        self.history.refresh_requested.connect(self.refresh_history)
        self.history.open_folder_requested.connect(lambda path: dialogs.open_folder(path, self._dialog_parent()))
        self.history.replay_requested.connect(self.replay_run)
        self.history.menu_requested.connect(self._show_run_menu)
        document.settings_changed.connect(self._setting_changed)
        document.reloaded.connect(self._project_changed)
        document.path_changed.connect(self._path_changed)
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)
        self._poll = QTimer(self)
        self._poll.setInterval(HISTORY_POLL_MS)
        self._poll.timeout.connect(self._poll_history)
        self._poll.start()
        status_bar = getattr(window, "statusBar", None)
        if callable(status_bar):
            status_bar().addPermanentWidget(self.projects.indicator)
        self.projects.indicator.linkActivated.connect(self._open_project)
        self._project_changed()

    # ---- project ------------------------------------------------------------------------------
    @property
    def controller(self) -> RunController:
        """The open project's run controller (runs of other projects have their own)."""
        return self.projects.controller(project_key(self.document.path))

    @property
    def live_run(self) -> Optional[str]:
        """The open project's run being followed, if any."""
        controller = self.controller
        return controller.run_dir if controller.is_running() else None

    def _wire_controller(self, controller: RunController) -> None:
        controller.run_started.connect(lambda d, c=controller: self._run_started(c, d))
        controller.records_received.connect(lambda d, r, c=controller: self._records_received(c, d, r))
        controller.run_finished.connect(lambda d, st, code, c=controller: self._run_finished(c, d, st, code))
        controller.launch_failed.connect(lambda m, c=controller: self._launch_failed(c, m))
        controller.running_changed.connect(lambda on, c=controller: self._running_changed(c, on))

    def results_root(self) -> Optional[str]:
        path = self.document.path
        return runs.results_root(path) if path else None

    def _project_changed(self) -> None:
        """A different project: its workers setting and its runs."""
        self.workers.setValue(max(1, int(self.document.project.multi_gpu.workers)))
        self._update_workers_note()
        self._show_project()

    def _path_changed(self, _path: str) -> None:
        """The project was saved to another file: another results folder, the same settings (the
        Workers choice stays)."""
        self._show_project()

    def _show_project(self) -> None:
        """Show the open project's state only: its runs, its live run (if any), nothing of another's."""
        controller = self.projects.show(project_key(self.document.path))
        self._clear_view()
        self._running_changed(controller, controller.is_running())
        was_live = controller.is_running() and controller.run_dir is not None
        self.refresh_history()  # may attach to a run of this project still going (its run_started shows it)
        if was_live:
            self._show_live(controller)
        elif not controller.is_running() and self.rows:
            self.history.select_run(self.rows[0].run_dir, emit=False)  # may be selected already: no signal
            self.show_run(self.rows[0].run_dir)

    def _open_project(self, path: str) -> None:
        """A link of the background-runs line: open that project (its run shows live there)."""
        files = getattr(self.window_, "files", None)
        if files is not None and files.open_path(path):
            show_tab = getattr(self.window_, "show_tab", None)
            if callable(show_tab):
                show_tab("training")  # the link is to the project's run: its TRAINING tab, wherever it was clicked

    def _setting_changed(self, dotted: str) -> None:
        if dotted == "multi_gpu.workers":
            if not self.controller.is_running():
                self.workers.setValue(max(1, int(self.document.project.multi_gpu.workers)))
            self._update_workers_note()

    # ---- run / stop ---------------------------------------------------------------------------
    def _dialog_parent(self) -> QWidget:
        return self.window_ if isinstance(self.window_, QWidget) else self

    def ensure_saved(self, path: Optional[str] = None) -> bool:
        """The engine trains the file on disk: save first (asking when there are unsaved changes). An untitled
        project is saved to ``path`` when given (chosen before the check), else to a path asked for here."""
        doc = self.document
        if not doc.path:
            path = path or dialogs.choose_project_path(self._dialog_parent(),
                                                       f"{doc.project.name or 'project'}.yaml")
            if not path:
                return False
            doc.save(path)
            return True
        if doc.modified:
            if not dialogs.confirm_save(self._dialog_parent(), doc.display_name()):
                return False
            doc.save()
        return True

    def start_run(self) -> bool:
        """Check the project as it is in memory (``preflight``), then save it if needed and start ``nnconsole
        train`` with the chosen number of workers. A project with problems lists them, starts nothing and is
        not written: the file on disk stays as it was, the edits stay in the window to be fixed."""
        workers = self.workers.value()  # the user's choice, read before saving can signal anything
        if self.controller.is_running() or self._pending_run is not None:
            return False
        doc = self.document
        target = doc.path or dialogs.choose_project_path(self._dialog_parent(),
                                                         f"{doc.project.name or 'project'}.yaml")
        if not target:
            return False
        if doc.path and doc.modified and not dialogs.confirm_save(self._dialog_parent(), doc.display_name()):
            return False  # asked first, as before; the save itself waits for the check
        snapshot = doc.project.copy()  # what is checked: the edits as they are, in a thread of its own
        snapshot.path = os.path.abspath(target)
        outside = self.outside_data(snapshot)
        if outside and not dialogs.confirm_outside_data(self._dialog_parent(), outside):
            return False
        self.error.hide()
        self.problems.clear()
        self.run_button.setEnabled(False)
        self.status.setText("Checking the project (network, datasets, files) before the run...")
        self.progress.reset("checking...")
        if doc.path and not doc.modified:  # the file is what the engine trains (it may differ from a stale copy)
            token = self.checker.start(preflight.check_project, doc.path, bool(outside))
        else:
            token = self.checker.start(preflight.check_loaded, snapshot, bool(outside))
        self._pending_run = (token, snapshot.path, workers, bool(outside), doc.path)
        return True

    def _checked(self, token: int, problems: Optional[list], error: Optional[BaseException]) -> None:
        """The check ended: save and train, or list the problems (another project opened meanwhile: nothing)."""
        pending = self._pending_run
        if pending is None or pending[0] != token:
            return
        self._pending_run = None
        _token, path, workers, allow_outside, document_path = pending
        if document_path != self.document.path or self.controller.is_running():
            return
        if error is not None:
            problems = [preflight.Problem("", f"the project could not be checked: {type(error).__name__}: {error}")]
        found = preflight.blocking(problems or [])
        if found:
            self.problems.show_problems(problems)
            self.progress.reset("not started")
            self.status.setText("<span style='color:#b00000'>Not run: fix the problems listed first.</span>")
            self.run_button.setEnabled(True)
            return
        self.run_button.setEnabled(True)
        if self.document.modified or not self.document.path:  # checked and the user said save: write it now
            self.document.save(path)
        path = self.document.path
        self.status.setText(f"Starting {workers} worker(s)...")
        self.progress.reset("starting...")
        self.controller.start_training(path, workers, allow_outside_data=allow_outside,  # CONFIG's simulation too
                                       simulate_workers=self.document.project.multi_gpu.simulate_workers)

    def outside_data(self, project: Optional[Any] = None) -> List[str]:
        """Files the project reads (datasets, initial parameters) outside its folder (the engine asks for consent)."""
        from nnconsole.engine.project.paths import files_outside

        return files_outside(project or self.document.project)

    def stop_run(self) -> None:
        """Stop the open project's run (never another project's)."""
        if self.controller.is_running():
            self.status.setText("Stopping at the next update (a checkpoint is kept)...")
            self.stop_button.setEnabled(False)
            self.controller.stop()

    def replay_run(self, run_dir: str) -> bool:
        """``nnconsole replay RUN_DIR``: a new run from the snapshot, followed live like any other."""
        if self.controller.is_running():
            self.status.setText("A run is going; stop it before replaying another.")
            return False
        self.error.hide()
        self.progress.reset("replaying...")
        self.status.setText(f"Replaying {os.path.basename(run_dir)}...")
        self.controller.start_replay(run_dir)
        return True

    def running_projects(self) -> List[str]:
        """Names of the projects whose runs this window follows (started here or attached to)."""
        return [project_name(key) for key, _ in self.projects.running()]

    def confirm_close(self) -> bool:
        """Closing the window during runs: ask to stop them, leave them running, or cancel (False)."""
        running = self.running_projects()
        if not running:
            return True
        answer = dialogs.ask_quit_during_run(self._dialog_parent(), running)
        if answer == dialogs.CANCEL_QUIT:
            return False
        self._leave_runs_at_exit = answer == dialogs.LEAVE_RUNNING
        return True

    def shutdown(self) -> None:
        """Application exit: stop the runs gracefully (checkpoints kept), or leave them running when the
        user chose so (they are detached; the next start attaches to them)."""
        if self._shut_down:
            return
        self._shut_down = True
        self._poll.stop()
        self.projects.shutdown(stop=not self._leave_runs_at_exit)

    # ---- history ------------------------------------------------------------------------------
    def refresh_history(self) -> None:
        """Re-list the runs; attach to one still going when this window is not running one."""
        root = self.results_root()
        self._listing = runs.list_runs(root) if root else []
        self.rows = collect_runs(root, self._listing) if root else []
        self.history.set_rows(self.rows)
        self.trials.set_rows(self.rows)
        self.tradeoff.set_runs(self.rows, self.trials.labels())
        if not self.controller.is_running():
            for row in self.rows:
                if row.status == RunStatus.RUNNING and self.controller.attach(row.run_dir):
                    break

    def _poll_history(self) -> None:
        root = self.results_root()
        listing = runs.list_runs(root) if root else []
        if listing != self._listing or any(r.status == RunStatus.RUNNING for r in self.rows):
            self.refresh_history()

    def _show_study_run(self, run_dir: str) -> None:
        """A study point's run: its curves and log, in the Learning curves view."""
        self.views.setCurrentIndex(0)
        self.show_run(run_dir)

    def _records_of(self, run_dir: str) -> List[Dict[str, Any]]:
        """All records of a run; for the live run only those already tailed (the rest arrive as signals)."""
        if self.live_run is not None and os.path.abspath(run_dir) == self.live_run:
            return self.controller.records_so_far()
        return read_all_metrics(run_dir)

    def _compare_changed(self, run_dirs: List[str]) -> None:
        """Overlay the ticked runs; only runs not drawn yet are read (set_overlays keeps the others)."""
        shown = set(self.curves.runs)
        self.curves.set_overlays({d: [] if os.path.abspath(d) in shown else self._records_of(d) for d in run_dirs})


def create_page(document: Any, window: Any = None) -> QWidget:
    """Entry point used by the main window: the TRAINING tab for ``document``."""
    return TrainingPage(document, window)
