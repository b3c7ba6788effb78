"""The EVALUATION tab: evaluate a run's best or final model through ``nnconsole evaluate`` and show it.

The evaluation runs in a QProcess (``EngineCommand``), never on the GUI thread, and writes
``<run>/evaluation/<model>/samples.csv`` and ``metrics.json``; the tab reads only those files, so a
run evaluated from a terminal shows up here as well. While it runs, its ``evaluate_progress`` events
(``--events``) count the samples in the state line, and its ``evaluate_finished`` event names the folder shown. Classifiers get the confusion matrix, per-class
precision/recall/F-measure and the per-sample table; regressions get error statistics and a scatter.
"""
from __future__ import annotations

import html
import os
from typing import Any, Dict, List, Optional

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QHBoxLayout, QHeaderView, QLabel, QPushButton, QSizePolicy,
                               QSplitter, QStackedWidget, QTableView, QTabWidget, QVBoxLayout, QWidget)

from nnconsole.app.widgets.message import command_message, message_label
from nnconsole.app.evaluation.confusion import ConfusionMatrixView
from nnconsole.app.evaluation.curves import LikelihoodView, RocPrView, class_arrays
from nnconsole.app.evaluation.dataset_choice import DatasetChoice
from nnconsole.app.evaluation.inference import InferencePanel, inference_data
from nnconsole.app.evaluation.report import (PerClassTable, RegressionView, TopConfusions, class_label, headline,
                                             with_class_names)
from nnconsole.app.evaluation.samples import SamplesFilter, SamplesModel
from nnconsole.app.evaluation.zoom import show_large_image
from nnconsole.app.dataset.preview import is_image_cell
from nnconsole.app.bridge.engine_process import EngineCommand
from nnconsole.app.training.history import collect_runs
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import EVALUATE_FINISHED_EVENT, EVALUATE_PROGRESS_EVENT
from nnconsole.engine.metrics.results import EVALUATION_METRICS_FILE, MODELS, evaluation_dir, read_evaluation
from nnconsole.engine.errors import ExitCode



class EvaluationPage(QWidget):
    """Run and model choosers, Evaluate, the headline, the class views and the samples table."""

    evaluation_loaded = Signal(str)  # folder with metrics.json and samples.csv
    evaluation_failed = Signal(str)  # the engine's message

    def __init__(self, document: Any, window: Any = None, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("evaluation_page")
        self.document = document
        self.window_ = window
        self.command = EngineCommand(self)
        self.command.command_finished.connect(self._command_finished)
        self.command.event_received.connect(self._event)
        self.metrics: Optional[Dict[str, Any]] = None
        self.folder: Optional[str] = None
        self._pending: Optional[str] = None  # where the running evaluation writes (whose project it belongs to)
        self._evaluated: Optional[str] = None  # the folder its evaluate_finished event named
        self._doing = ""  # the state line while it runs
        self._loaded_stamp: Optional[int] = None

        self.run_combo = QComboBox()
        self.run_combo.setObjectName("evaluation_run")
        self.run_combo.setMinimumContentsLength(50)
        self.run_combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.model_combo = QComboBox()
        self.model_combo.setObjectName("evaluation_model")
        self.model_combo.addItems(list(MODELS))
        self.dataset_choice = DatasetChoice()
        self.evaluate_button = QPushButton("Evaluate")
        self.evaluate_button.setObjectName("evaluation_start")
        self.evaluate_button.setToolTip("nnconsole evaluate RUN_DIR --model best|final")
        self.refresh_button = QPushButton("Refresh runs")
        self.refresh_button.setObjectName("evaluation_refresh")
        self.state = QLabel()
        self.state.setObjectName("evaluation_state")
        self.state.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # long paths must not widen the tab
        bar = QHBoxLayout()
        for w in (QLabel("Run:"), self.run_combo, QLabel("Model:"), self.model_combo, QLabel("Data:"),
                  self.dataset_choice, self.evaluate_button, self.refresh_button):
            bar.addWidget(w)
        bar.addWidget(self.state, 1)
        self.summary = QLabel()
        self.summary.setObjectName("evaluation_summary")
        self.summary.setTextFormat(Qt.RichText)
        self.summary.setWordWrap(True)
        self.error = message_label("evaluation_error")  # plain text: the engine's message as it wrote it

        self.confusion = ConfusionMatrixView()
        self.per_class = PerClassTable()
        self.confusions = TopConfusions()
        lower = QSplitter(Qt.Horizontal)
        lower.addWidget(self.per_class)
        lower.addWidget(self.confusions)
        lower.setSizes([430, 300])
        classes = QSplitter(Qt.Vertical)
        classes.addWidget(self.confusion)
        classes.addWidget(lower)
        classes.setSizes([440, 300])
        self.likelihood = LikelihoodView()
        self.roc_pr = RocPrView()
        self.class_views = QTabWidget()
        self.class_views.setObjectName("evaluation_class_views")
        self.class_views.addTab(classes, "Confusion matrix")
        self.class_views.addTab(self.likelihood, "Likelihood")
        self.class_views.addTab(self.roc_pr, "ROC / PR")
        self.regression = RegressionView()
        self.left = QStackedWidget()
        self.left.addWidget(self.class_views)
        self.left.addWidget(self.regression)

        self.samples = SamplesModel(self)
        self.filter = SamplesFilter(self)
        self.filter.setSourceModel(self.samples)
        self.table = QTableView()
        self.table.setObjectName("evaluation_samples")
        self.table.setModel(self.filter)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.AscendingOrder)  # Qt starts descending; samples read best in order
        self.table.setIconSize(QSize(32, 32))
        self.table.verticalHeader().setDefaultSectionSize(36)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.Interactive)
        header.setResizeContentsPrecision(40)  # size columns from the first rows, not all of them
        self.mistakes_only = QCheckBox("Mistakes only")
        self.mistakes_only.setObjectName("evaluation_mistakes_only")
        self.class_filter = QComboBox()
        self.class_filter.setObjectName("evaluation_class_filter")
        self.shown = QLabel()
        self.shown.setObjectName("evaluation_shown")
        filters = QHBoxLayout()
        filters.addWidget(QLabel("<b>Samples</b>"))
        filters.addWidget(self.mistakes_only)
        filters.addWidget(QLabel("True class:"))
        filters.addWidget(self.class_filter)
        filters.addStretch(1)
        filters.addWidget(self.shown)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addLayout(filters)
        right_layout.addWidget(self.table, 1)
        body = QSplitter(Qt.Horizontal)
        body.addWidget(self.left)
        body.addWidget(right)
        body.setSizes([740, 640])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(bar)
        evaluation = QWidget()
        evaluation_layout = QVBoxLayout(evaluation)
        evaluation_layout.setContentsMargins(0, 0, 0, 0)
        evaluation_layout.addWidget(self.error)
        evaluation_layout.addWidget(self.summary)
        evaluation_layout.addWidget(body, 1)
        self.inference = InferencePanel(self.selected_run, self.model_combo.currentText)
        self.views = QTabWidget()
        self.views.setObjectName("evaluation_views")
        self.views.addTab(evaluation, "Evaluation")
        self.views.addTab(self.inference, "Inference")
        self.views.setTabToolTip(1, "Apply the run to a dataset CSV or to images (nnconsole infer)")
        layout.addWidget(self.views, 1)

        self.evaluate_button.clicked.connect(self.evaluate)
        self.refresh_button.clicked.connect(self.refresh_runs)
        self.run_combo.currentIndexChanged.connect(lambda _i: self.dataset_choice.fill(self.selected_run()))
        self.run_combo.currentIndexChanged.connect(lambda _i: self.show_existing())
        self.dataset_choice.dataset_changed.connect(self.show_existing)
        self.table.clicked.connect(self._sample_clicked)
        self.model_combo.currentIndexChanged.connect(lambda _i: self.show_existing())
        self.run_combo.currentIndexChanged.connect(lambda _i: self.inference.run_changed())
        self.model_combo.currentIndexChanged.connect(lambda _i: self.inference.run_changed())
        self.mistakes_only.toggled.connect(lambda _on: self._apply_filter())
        self.class_filter.currentIndexChanged.connect(lambda _i: self._apply_filter())
        self.confusion.cell_clicked.connect(self._cell_clicked)
        document.path_changed.connect(lambda _p: self._project_changed())
        document.reloaded.connect(self._project_changed)
        self.refresh_runs()

    # ---- runs ---------------------------------------------------------------------------------
    def _project_changed(self) -> None:
        """Another project (or file): nothing of the previous one's evaluations stays on screen."""
        self.error.hide()
        self.inference.project_changed()
        self.clear()
        self.refresh_runs()

    def _results_root(self) -> Optional[str]:
        path = self.document.path
        return os.path.abspath(runs.results_root(path)) if path else None

    def selected_run(self) -> Optional[str]:
        return self.run_combo.currentData()

    def refresh_runs(self) -> None:
        """List the project's runs that have saved parameters, newest first; keep the selection."""
        current = self.selected_run()
        path = self.document.path
        rows = collect_runs(runs.results_root(path)) if path else []
        self.run_combo.blockSignals(True)
        self.run_combo.clear()
        for row in rows:
            if not any(os.path.isfile(os.path.join(row.run_dir, f"parameters_{m}.h5")) for m in MODELS):
                continue
            best = "" if row.best_error is None else f", best error {row.best_error:.4f}"
            self.run_combo.addItem(f"{row.label} ({row.status}, N={row.workers}{best})", row.run_dir)
        index = self.run_combo.findData(current) if current else 0
        self.run_combo.setCurrentIndex(max(index, 0))
        self.run_combo.blockSignals(False)
        self.evaluate_button.setEnabled(self.run_combo.count() > 0 and not self.command.is_running())
        if not self.run_combo.count():
            self.state.setText("No trained run yet: train one in the TRAINING tab.")
        if self.selected_run() != current:
            self.inference.run_changed()
        self.dataset_choice.fill(self.selected_run())
        self.show_existing()

    def select_run(self, run_dir: str) -> bool:
        index = self.run_combo.findData(os.path.abspath(run_dir))
        if index >= 0:
            self.run_combo.setCurrentIndex(index)
        return index >= 0

    def show_run(self, run_dir: str, view: str = "evaluation") -> bool:
        """Select ``run_dir`` (listed again first) and show its 'evaluation' or 'inference' view; False if not listed."""
        self.refresh_runs()
        if not self.select_run(run_dir):
            return False
        self.views.setCurrentIndex(1 if view == "inference" else 0)
        return True

    def dropped_data(self, paths: List[str]) -> List[str]:
        """What of files dropped on the main window the Inference view takes: images, folders, a CSV on this tab."""
        return inference_data(paths, allow_csv=self.isVisibleTo(self.window()))  # its tab is the current one

    def infer_dropped(self, paths: List[str]) -> bool:
        """Files dropped on the main window: image files or folders become the Inference view's data."""
        data = self.dropped_data(paths)
        if not data:
            return False
        self.views.setCurrentWidget(self.inference)
        self.inference.set_data(data)
        return True

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt override: new runs may have finished meanwhile
        super().showEvent(event)
        self.refresh_runs()

    # ---- evaluating ---------------------------------------------------------------------------
    def evaluate(self) -> bool:
        """Start ``nnconsole evaluate RUN --model M`` in a QProcess."""
        run_dir = self.selected_run()
        if not run_dir or self.command.is_running():
            return False
        model = self.model_combo.currentText()
        dataset = self.dataset_choice.current_dataset()
        self._pending = evaluation_dir(run_dir, model, dataset)
        self.error.hide()
        self.evaluate_button.setEnabled(False)
        self._doing, self._evaluated = f"Evaluating the {model} model of {os.path.basename(run_dir)}...", None
        self.state.setText(self._doing)
        self.command.start(["evaluate", run_dir, "--model", model] + (["--dataset", dataset] if dataset else []),
                           cwd=run_dir, events=True)
        return True

    def _event(self, event: Dict[str, Any]) -> None:
        if event["event"] == EVALUATE_PROGRESS_EVENT and self.command.is_running():
            self.state.setText(f"{self._doing} {int(event.get('done') or 0):,}/{int(event.get('total') or 0):,} "
                               "samples")
        elif event["event"] == EVALUATE_FINISHED_EVENT and isinstance(event.get("output"), str):
            self._evaluated = event["output"]

    def _command_finished(self, code: int, stdout: str, stderr: str) -> None:
        self.evaluate_button.setEnabled(self.run_combo.count() > 0)
        folder, self._pending = self._pending, None
        written, self._evaluated = self._evaluated, None
        root = self._results_root()
        if folder is None or root is None or os.path.commonpath([root, os.path.abspath(folder)]) != root:
            return  # an evaluation of a project no longer open: its files are there when it is opened again
        if code != ExitCode.OK:
            message = command_message(stdout, stderr, f"nnconsole evaluate exited with code {code}")
            self.show_error(message)
            self.state.setText("Evaluation failed.")
            self.evaluation_failed.emit(message)
            return
        if written is None:
            message = f"nnconsole evaluate ended without naming its evaluation folder (expected {folder})"
            self.show_error(message)
            self.state.setText("Evaluation failed.")
            self.evaluation_failed.emit(message)
            return
        self.load(written)

    def show_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.show()

    # ---- showing ------------------------------------------------------------------------------
    def show_existing(self) -> None:
        """Show the saved evaluation of the selected run and model, if there is one."""
        run_dir = self.selected_run()
        folder = evaluation_dir(run_dir, self.model_combo.currentText(), self.dataset_choice.current_dataset()) \
            if run_dir else None
        metrics_file = os.path.join(folder, EVALUATION_METRICS_FILE) if folder else ""
        if folder and os.path.isfile(metrics_file):
            stamp = os.stat(metrics_file).st_mtime_ns
            if folder != self.folder or stamp != self._loaded_stamp:
                self.load(folder)
        else:
            self.clear()
            if run_dir:
                self.state.setText("Not evaluated yet: press Evaluate.")

    def clear(self) -> None:
        """Show no evaluation: every view of the previous one is emptied."""
        self.metrics, self.folder, self._loaded_stamp = None, None, None
        self.summary.setText("")
        self.samples.set_samples([], "classification", "")
        self.confusion.set_matrix([])
        self.per_class.setRowCount(0)
        self.confusions.list.clear()
        self.regression.clear()
        self.likelihood.clear()
        self.roc_pr.clear()
        self.left.setCurrentIndex(0)
        self.class_filter.blockSignals(True)
        self.class_filter.clear()
        self.class_filter.blockSignals(False)
        self.shown.setText("")

    def load(self, folder: str) -> None:
        """Read metrics.json and samples.csv from ``folder`` and fill every view."""
        try:
            metrics, rows = read_evaluation(folder)
        except (OSError, ValueError, KeyError) as exc:
            self.show_error(f"cannot read the evaluation in {folder}: {exc}")
            return
        metrics = with_class_names(metrics)
        self.metrics, self.folder = metrics, folder
        try:
            self._loaded_stamp = os.stat(os.path.join(folder, EVALUATION_METRICS_FILE)).st_mtime_ns
        except OSError:
            self._loaded_stamp = None
        self.error.hide()
        task = metrics.get("task", "classification")
        self.summary.setText(headline(metrics))
        self.samples.set_samples(rows, task, metrics.get("dataset", ""))
        self.class_filter.blockSignals(True)
        self.class_filter.clear()
        self.class_filter.addItem("all", None)
        if task == "classification":
            self.left.setCurrentIndex(0)
            self.confusion.set_matrix(metrics["confusion_matrix"], metrics.get("class_names") or [])
            try:
                probs, labels = class_arrays(rows)
            except (KeyError, ValueError):  # a samples.csv edited by hand: the tables still show
                probs, labels = None, None
            if probs is not None and probs.size:
                self.likelihood.set_data(probs, labels)
                self.roc_pr.set_data(probs, labels, metrics.get("class_names") or [])
            self.per_class.set_metrics(metrics)
            self.confusions.set_metrics(metrics)
            for c in range(int(metrics.get("num_classes", 0))):
                self.class_filter.addItem(class_label(metrics, c), c)
        else:
            self.left.setCurrentIndex(1)
            self.regression.set_data(metrics, rows)
        self.class_filter.blockSignals(False)
        self.mistakes_only.setEnabled(task == "classification")
        self.class_filter.setEnabled(task == "classification")
        self._apply_filter()
        self.table.resizeColumnsToContents()
        self.state.setText(f"{os.path.basename(metrics.get('run_dir', ''))}: {task}, {metrics.get('model')} model "
                           f"&mdash; {html.escape(folder)}")
        self.state.setTextFormat(Qt.RichText)
        self.evaluation_loaded.emit(folder)

    def _apply_filter(self, predicted: Optional[int] = None) -> None:
        self.filter.set_filter(self.mistakes_only.isChecked(), self.class_filter.currentData(), predicted)
        self._update_shown()

    def _cell_clicked(self, true_class: int, predicted: int) -> None:
        self.mistakes_only.blockSignals(True)
        self.mistakes_only.setChecked(False)
        self.mistakes_only.blockSignals(False)
        self.class_filter.blockSignals(True)
        self.class_filter.setCurrentIndex(self.class_filter.findData(true_class))
        self.class_filter.blockSignals(False)
        self._apply_filter(predicted)

    def _sample_clicked(self, index: Any) -> None:
        """A click on a sample's thumbnail opens a larger view of its image."""
        source = self.filter.mapToSource(index)
        if self.samples.columns[source.column()] != "source":
            return
        text = self.samples.rows[source.row()].get("source", "")
        if is_image_cell(text):
            rect = self.table.visualRect(index)
            show_large_image(os.path.join(self.samples.base, text.strip()), self,
                             self.table.viewport().mapToGlobal(rect.bottomLeft()))

    def _update_shown(self) -> None:
        total = self.samples.rowCount()
        shown = self.filter.rowCount()
        pair = f" (true {self.filter.true_class} \u2192 predicted {self.filter.predicted_class})" \
            if self.filter.predicted_class is not None else ""
        self.shown.setText(f"{shown:,} of {total:,} samples shown{pair}")

    def shown_rows(self) -> List[Dict[str, str]]:
        """The sample rows the table shows, in its order (tests)."""
        return [self.samples.rows[self.filter.mapToSource(self.filter.index(r, 0)).row()]
                for r in range(self.filter.rowCount())]


def create_page(document: Any, window: Any = None) -> QWidget:
    """Entry point used by the main window: the EVALUATION tab for ``document``."""
    return EvaluationPage(document, window)
