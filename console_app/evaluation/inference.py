"""The EVALUATION tab's Inference view: apply the chosen run to a dataset CSV or to images, see and save the results.

Data comes from the buttons (a CSV, image files, a folder) or from files dropped on the view. The
work is ``nnconsole infer RUN DATA`` in a QProcess (``EngineCommand``), exactly as in a terminal; its
``infer_progress`` events (``--events``) drive the progress bar and its ``infer_finished`` event names the results
file. The results CSV lands in the run's
``inference/`` folder under a new name each time (nothing is replaced), the table shows it with
thumbnails (click one for a larger view), and Save CSV copies it where the user wants.
"""
from __future__ import annotations

import csv
import html
import os
import shutil
from typing import Any, Callable, Dict, List, Optional

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSize, QSortFilterProxyModel, Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QProgressBar, QPushButton,
                               QSizePolicy, QTableView, QVBoxLayout, QWidget)

from nnconsole.app.dataset.preview import is_image_cell
from nnconsole.app.dataset.thumbnails import thumbnail
from nnconsole.app.bridge.engine_process import EngineCommand
from nnconsole.app.evaluation.samples import SORT_ROLE, MAX_PROBABILITY_COLUMNS, _number
from nnconsole.app.evaluation.zoom import show_large_image
from nnconsole.engine.atomic import write_via
from nnconsole.engine.rundir.protocol import INFER_FINISHED_EVENT, INFER_PROGRESS_EVENT, INFERENCE_DIR
from nnconsole.engine.errors import ExitCode
from nnconsole.app.widgets.message import command_message, message_label
from nnconsole.app.widgets.rich_text import plain_tooltip

SKIPPED_LISTED = 20  # skipped images named one a line; the rest counted
RESIZE_MODES = (("resize", "stretch"), ("trimming", "crop to fit"), ("padding", "pad to fit"))
DROP_HINT = "Drop a dataset CSV, images or a folder of images here, or pick them with the buttons above."


def results_path(run_dir: str, data: List[str], model: str) -> str:
    """A results file in ``<run>/inference/`` named after the data that does not exist yet (never replaces one)."""
    first = os.path.abspath(data[0]).rstrip(os.sep)
    stem = os.path.splitext(os.path.basename(first))[0] or "data"
    if len(data) > 1:
        stem += f"_and_{len(data) - 1}_more"
    folder = os.path.join(run_dir, INFERENCE_DIR)
    candidate = os.path.join(folder, f"{stem}_{model}.csv")
    number = 2
    while os.path.lexists(candidate):
        candidate = os.path.join(folder, f"{stem}_{model}-{number}.csv")
        number += 1
    return candidate


def inference_data(paths: List[str], allow_csv: bool = True) -> List[str]:
    """The dropped ``paths`` that can be inferred: image files and folders (and one dataset CSV), else []."""
    paths = [p for p in paths if p]
    if allow_csv and len(paths) == 1 and paths[0].lower().endswith(".csv") and os.path.isfile(paths[0]):
        return paths
    if paths and all(os.path.isdir(p) or (is_image_cell(p) and os.path.isfile(p)) for p in paths):
        return paths
    return []


def read_results(path: str) -> List[Dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


class ResultsModel(QAbstractTableModel):
    """Rows of an inference results CSV: thumbnail and source, prediction with its name, confidence, top classes."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: List[Dict[str, str]] = []
        self.columns: List[str] = []
        self.headers: List[str] = []

    def set_rows(self, rows: List[Dict[str, str]]) -> None:
        self.beginResetModel()
        self.rows = rows
        fields = list(rows[0]) if rows else []
        if "prediction" in fields:  # a classifier
            tops = sorted({int(f[3:-2]) for f in fields if f.startswith("top") and f.endswith("_p")})
            for row in rows:
                row["top_classes"] = ", ".join(
                    f"{row.get(f'top{k}_name') or row.get(f'top{k}')} {_percent(row.get(f'top{k}_p'))}" for k in tops)
            probs = [f for f in fields if f.startswith("p_")][:MAX_PROBABILITY_COLUMNS]
            named = "prediction_name" in fields
            self.columns = ["index", "source"] + (["label"] if "label" in fields else []) + ["prediction"] + \
                (["prediction_name"] if named else []) + ["confidence", "top_classes"] + probs
            self.headers = ["#", "Sample"] + (["Label"] if "label" in fields else []) + ["Prediction"] + \
                (["Class name"] if named else []) + ["Confidence", "Top classes"] + [f"p({f[2:]})" for f in probs]
        else:
            self.columns = fields
            self.headers = ["#" if f == "index" else f.replace("_", " ").capitalize() for f in fields]
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index: QModelIndex, role: int = Qt.DisplayRole) -> Any:
        if not index.isValid():
            return None
        key = self.columns[index.column()]
        text = self.rows[index.row()].get(key, "")
        if role == Qt.DisplayRole:
            if key == "source":
                return os.path.basename(text) if is_image_cell(text) else text
            if key == "confidence" or key.startswith("p_"):
                value = _number(text)
                return f"{value:.3f}" if isinstance(value, float) else text
            return text
        if role == SORT_ROLE:
            return _number(text)
        if role == Qt.DecorationRole and key == "source" and is_image_cell(text):
            pixmap = thumbnail(text)
            return pixmap if not pixmap.isNull() else None
        if role == Qt.ToolTipRole and key == "source":
            return plain_tooltip(f"{text}\n(click for a larger view)" if is_image_cell(text) else text)
        if role == Qt.TextAlignmentRole and key not in ("source", "top_classes"):
            return int(Qt.AlignCenter)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.DisplayRole) -> Any:  # noqa: N802
        if role == Qt.DisplayRole and orientation == Qt.Horizontal and section < len(self.headers):
            return self.headers[section]
        return None


def _percent(text: Optional[str]) -> str:
    value = _number(text or "")
    return f"({value:.1%})" if isinstance(value, float) else ""


class InferencePanel(QWidget):
    """Pick or drop data, Infer with the page's run and model, watch progress, read and save the results."""

    inference_loaded = Signal(str)  # the results CSV
    inference_failed = Signal(str)  # the engine's message

    def __init__(self, run_source: Callable[[], Optional[str]], model_source: Callable[[], str],
                 parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("inference_panel")
        self.setAcceptDrops(True)
        self.run_source = run_source
        self.model_source = model_source
        self.data: List[str] = []
        self.results: Optional[str] = None
        self._written: Optional[str] = None  # the results file the command's infer_finished event named
        self._stopping = False
        self._skipped: List[str] = []  # the images the command's infer_finished event says it left out
        self.command = EngineCommand(self)
        self.command.command_finished.connect(self._finished)
        self.command.event_received.connect(self._event)

        self.csv_button = QPushButton("Dataset CSV...")
        self.images_button = QPushButton("Images...")
        self.folder_button = QPushButton("Folder...")
        self.resize_box = QCheckBox("Fit images to the network's input:")
        self.resize_box.setObjectName("inference_resize")
        self.resize_box.setToolTip("nnconsole infer --resize: otherwise images of another size are refused")
        self.resize_mode = QComboBox()
        self.resize_mode.setObjectName("inference_resize_mode")
        for mode, text in RESIZE_MODES:
            self.resize_mode.addItem(text, mode)
        self.resize_mode.setToolTip("As DATASET's create dataset: stretch, crop the centre to the input's aspect "
                                    "ratio, or add black bands")
        self.resize_mode.setEnabled(False)
        self.resize_box.toggled.connect(self.resize_mode.setEnabled)
        self.skip_box = QCheckBox("Skip images of another size")
        self.skip_box.setObjectName("inference_skip_other_sizes")
        self.skip_box.setToolTip("Leave out the images whose size is not the network input's and list them, "
                                 "instead of stopping at the first one (not with Fit images)")
        self.resize_box.toggled.connect(lambda on: self.skip_box.setEnabled(not on))
        self.infer_button = QPushButton("Infer")
        self.infer_button.setObjectName("inference_start")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("inference_stop")
        self.stop_button.setToolTip("End the inference; no results file is written")
        self.save_button = QPushButton("Save CSV...")
        self.save_button.setObjectName("inference_save")
        self.save_button.setEnabled(False)
        bar = QHBoxLayout()
        for w in (QLabel("Data:"), self.csv_button, self.images_button, self.folder_button, self.resize_box,
                  self.resize_mode, self.skip_box):
            bar.addWidget(w)
        bar.addStretch(1)
        bar.addWidget(self.infer_button)
        bar.addWidget(self.stop_button)
        bar.addWidget(self.save_button)
        self.data_label = QLabel(DROP_HINT)
        self.data_label.setObjectName("inference_data")
        self.data_label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.progress = QProgressBar()
        self.progress.setObjectName("inference_progress")
        self.progress.hide()
        self.state = QLabel()
        self.state.setObjectName("inference_state")
        self.state.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.error = message_label("inference_error")  # plain text: the engine's message as it wrote it
        self.skipped_note = message_label("inference_skipped", error=False)  # the images left out, listed
        self.model = ResultsModel(self)
        self.sorter = QSortFilterProxyModel(self)
        self.sorter.setSortRole(SORT_ROLE)
        self.sorter.setSourceModel(self.model)
        self.table = QTableView()
        self.table.setObjectName("inference_results")
        self.table.setModel(self.sorter)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.AscendingOrder)
        self.table.setIconSize(QSize(32, 32))
        self.table.verticalHeader().setDefaultSectionSize(36)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Interactive)
        self.table.horizontalHeader().setResizeContentsPrecision(40)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.data_label)
        layout.addWidget(self.progress)
        layout.addWidget(self.error)
        layout.addWidget(self.skipped_note)
        layout.addWidget(self.state)
        layout.addWidget(self.table, 1)

        self.csv_button.clicked.connect(self._pick_csv)
        self.images_button.clicked.connect(self._pick_images)
        self.folder_button.clicked.connect(self._pick_folder)
        self.infer_button.clicked.connect(self.infer)
        self.stop_button.clicked.connect(self.stop)
        self.save_button.clicked.connect(self._pick_save)
        self.table.clicked.connect(self._clicked)
        self._update_buttons()

    # ---- data ---------------------------------------------------------------------------------
    def set_data(self, paths: List[str]) -> None:
        """Use ``paths`` (one CSV, or image files and folders) as the data to infer."""
        self.data = [os.path.abspath(p) for p in paths if p]
        if not self.data:
            self.data_label.setText(DROP_HINT)
            self.data_label.setToolTip("")
        else:
            shown = ", ".join(os.path.basename(p.rstrip(os.sep)) or p for p in self.data[:3])
            more = f" and {len(self.data) - 3} more" if len(self.data) > 3 else ""
            self.data_label.setText(f"Data: <b>{html.escape(shown)}</b>{more}")
            self.data_label.setToolTip(plain_tooltip("\n".join(self.data[:50])))
        self._update_buttons()

    def _start_dir(self) -> str:
        return os.path.dirname(self.data[0]) if self.data else (self.run_source() or os.getcwd())

    def _pick_csv(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Dataset CSV to infer", self._start_dir(), "Dataset CSV (*.csv)")
        if path:
            self.set_data([path])

    def _pick_images(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Images to infer", self._start_dir(),
                                                "Images (*.png *.jpg *.jpeg *.bmp)")
        if paths:
            self.set_data(paths)

    def _pick_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Folder of images to infer", self._start_dir())
        if path:
            self.set_data([path])

    def dragEnterEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        if inference_data([u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]):
            event.acceptProposedAction()

    def dropEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        paths = inference_data([u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()])
        if paths:
            self.set_data(paths)
            event.acceptProposedAction()

    # ---- running ------------------------------------------------------------------------------
    def _update_buttons(self) -> None:
        running = self.command.is_running()
        self.infer_button.setEnabled(bool(self.data) and bool(self.run_source()) and not running)
        for button in (self.csv_button, self.images_button, self.folder_button):
            button.setEnabled(not running)
        self.save_button.setEnabled(self.results is not None and not running)
        self.stop_button.setEnabled(running)

    def run_changed(self) -> None:
        """The page's run or model changed: the shown results belonged to the previous one."""
        if not self.command.is_running():
            self.clear()
        self._update_buttons()

    def project_changed(self) -> None:
        """Another project is open: its inference starts afresh (no data, results or box of the previous one);
        an inference still running for the previous project is stopped."""
        self.stop()
        self.set_data([])
        self.resize_box.setChecked(False)
        self.resize_mode.setCurrentIndex(0)
        self.skip_box.setChecked(False)
        self.clear()

    def clear(self) -> None:
        self.results = None
        self.model.set_rows([])
        self.state.setText("")
        self.error.hide()
        self.skipped_note.hide()
        self._update_buttons()

    def infer(self) -> bool:
        """Start ``nnconsole infer RUN DATA -o <new file in RUN/inference>`` in a QProcess."""
        run_dir = self.run_source()
        if not run_dir or not self.data or self.command.is_running():
            return False
        model = self.model_source()
        args = ["infer", run_dir, *self.data, "--model", model, "-o", results_path(run_dir, self.data, model)]
        if self.resize_box.isChecked():
            args += ["--resize", "--resize-mode", self.resize_mode.currentData()]
        elif self.skip_box.isChecked():
            args += ["--skip-other-sizes"]
        self.error.hide()
        self.skipped_note.hide()
        self._skipped = []
        self.progress.setRange(0, 0)  # busy until the first progress event says how many
        self.progress.show()
        self.state.setText(f"Inferring with the {model} model of {os.path.basename(run_dir)}...")
        self._written = None
        self.command.start(args, cwd=run_dir, events=True)
        self._update_buttons()
        return True

    def stop(self) -> bool:
        """End a running inference (the CLI removes its unfinished file); False when none runs."""
        if not self.command.is_running():
            return False
        self._stopping = True
        self.state.setText("Stopping...")
        self.command.stop()
        return True

    def _event(self, event: Dict[str, Any]) -> None:
        if event["event"] == INFER_PROGRESS_EVENT:
            self.progress.setRange(0, max(1, int(event.get("total") or 0)))
            self.progress.setValue(int(event.get("done") or 0))
        elif event["event"] == INFER_FINISHED_EVENT and isinstance(event.get("output"), str):
            self._written = event["output"]
            skipped = event.get("skipped")
            self._skipped = [str(p) for p in skipped] if isinstance(skipped, list) else []

    def _finished(self, code: int, stdout: str, stderr: str) -> None:
        output, self._written = self._written, None
        stopped, self._stopping = self._stopping, False
        self.progress.hide()
        if stopped and code != ExitCode.OK:
            self.state.setText("Stopped: no results written.")
            self._update_buttons()
            self.inference_failed.emit("stopped")
            return
        if code != ExitCode.OK or output is None or not os.path.isfile(output):
            message = command_message(stdout, stderr, f"nnconsole infer exited with code {code}")
            self.error.setText(message)
            self.error.show()
            self.state.setText("Inference failed.")
            self._update_buttons()
            self.inference_failed.emit(message)
            return
        self.load(output)
        if self._skipped:
            shown = self._skipped[:SKIPPED_LISTED]
            more = len(self._skipped) - len(shown)
            self.skipped_note.setText(f"Skipped {len(self._skipped)} image(s) of another size than the network's "
                                      "input:\n" + "\n".join(shown) + (f"\n... and {more} more" if more else ""))
            self.skipped_note.show()

    def load(self, path: str) -> None:
        """Show the results CSV at ``path``."""
        try:
            rows = read_results(path)
        except (OSError, ValueError, csv.Error) as exc:
            self.error.setText(f"cannot read {path}: {exc}")
            self.error.show()
            return
        self.results = path
        self.model.set_rows(rows)
        self.table.resizeColumnsToContents()
        self.state.setText(f"{len(rows):,} samples &mdash; {html.escape(path)}")
        self.state.setTextFormat(Qt.RichText)
        self._update_buttons()
        self.inference_loaded.emit(path)

    # ---- saving and zooming -------------------------------------------------------------------
    def _pick_save(self) -> None:
        if not self.results:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save the inference results", os.path.basename(self.results),
                                              "CSV (*.csv)")
        if path:
            self.save_as(path)

    def save_as(self, path: str) -> bool:
        """Copy the results CSV to ``path`` atomically (the file dialog asked before replacing a file)."""
        if not self.results:
            return False
        try:
            write_via(path, lambda tmp: shutil.copyfile(self.results, tmp))
        except OSError as exc:
            self.error.setText(f"cannot save {path}: {exc.strerror or exc}")
            self.error.show()
            return False
        self.state.setText(f"Saved {html.escape(path)}")
        return True

    def _clicked(self, index: QModelIndex) -> None:
        source = self.sorter.mapToSource(index)
        if self.model.columns[source.column()] != "source":
            return
        path = self.model.rows[source.row()].get("source", "")
        if is_image_cell(path):
            rect = self.table.visualRect(index)
            show_large_image(path, self, self.table.viewport().mapToGlobal(rect.bottomLeft()))
