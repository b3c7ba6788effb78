"""The DATASET tab's "Create dataset..." dialog: NNC's create dataset, run as ``nnconsole dataset create``.

The dialog only collects the options (nnabla_cli's: source, output, size, channels, trimming/padding/
resize, shuffle, file names and split) and runs the same command a terminal user types, in a QProcess,
so a crash in image decoding never reaches the window. Progress and ETA come from the command's event
file (``--events``); Cancel stops the command (SIGTERM), which removes its staging folder: nothing is
written. When it succeeds, ``created(training_csv, validation_csv)`` is emitted.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import List, Optional, Tuple

from PySide6.QtCore import QProcess, QTimer, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout,
                               QLabel, QLineEdit, QPlainTextEdit, QProgressBar, QPushButton, QSpinBox, QVBoxLayout,
                               QWidget)

from nnconsole.app.bridge.engine_process import EVENTS_FILE, new_engine_process, start_engine

from nnconsole.engine.data.create.shaping import MODES
from nnconsole.engine.rundir.protocol import DATASET_CREATED_EVENT, DATASET_PROGRESS_EVENT, format_duration, read_events
from nnconsole.engine.errors import ExitCode

MODE_TEXT = {"trimming": "Trimming (crop the centre)", "padding": "Padding (black borders)",
             "resize": "Resize (stretch)"}
STOP_GRACE_MS = 5000  # after Cancel, the command gets this long to remove its staging folder before a kill


def choose_source(parent: Optional[QWidget], start: str, csv: bool) -> str:
    """Ask for the source folder (or CSV); '' when cancelled. A helper so tests can replace the dialog."""
    if csv:
        return QFileDialog.getOpenFileName(parent, "CSV of image paths", start, "CSV (*.csv);;All files (*)")[0]
    return QFileDialog.getExistingDirectory(parent, "Folder with one sub-folder of images per class", start)


def choose_output(parent: Optional[QWidget], start: str) -> str:
    return QFileDialog.getExistingDirectory(parent, "Folder for the new dataset", start)


class CreateDatasetDialog(QDialog):
    """Options, then progress with Cancel, for ``nnconsole dataset create``."""

    created = Signal(str, str)  # the first CSV, the second ('' when there is none)

    def __init__(self, parent: Optional[QWidget] = None, start_dir: str = "",
                 image_shape: Optional[Tuple[int, int, int]] = None) -> None:
        super().__init__(parent)
        self.setObjectName("create_dataset_dialog")
        self.setWindowTitle("Create dataset")
        self.start_dir = start_dir or os.path.expanduser("~")
        self.process: Optional[QProcess] = None
        self.events_dir = ""
        self.events_offset = 0
        self.output_text = ""
        self.result_files: Tuple[str, str] = ("", "")
        self.timer = QTimer(self)
        self.timer.setInterval(150)
        self.timer.timeout.connect(self._read_progress)
        self._build(image_shape)

    # ---- widgets --------------------------------------------------------------------------------
    def _build(self, image_shape: Optional[Tuple[int, int, int]]) -> None:
        channels, height, width = image_shape or (3, 32, 32)
        self.source = QLineEdit()
        self.source.setObjectName("create_source")
        self.source.setPlaceholderText("folder of class folders (cat/, dog/ ...) or a CSV of image paths")
        folder, table = self.pick_buttons = QPushButton("Folder..."), QPushButton("CSV...")
        folder.clicked.connect(lambda: self._pick_source(False))
        table.clicked.connect(lambda: self._pick_source(True))
        self.output = QLineEdit()
        self.output.setObjectName("create_output")
        self.output.setPlaceholderText("a new folder for the images and CSV files")
        browse = QPushButton("Browse...")
        browse.clicked.connect(self._pick_output)
        self.pick_buttons += (browse,)
        self.source.textChanged.connect(self._suggest_output)
        self.output_chosen = False  # typed or browsed by the user: no longer suggested from the source
        self.output.textEdited.connect(lambda _text: setattr(self, "output_chosen", True))
        self.width_box, self.height_box = self._spin(width, 1, 16384), self._spin(height, 1, 16384)
        self.channels = QComboBox()
        self.channels.addItem("3 (colour)", 3)
        self.channels.addItem("1 (grey)", 1)
        self.channels.setCurrentIndex(1 if channels == 1 else 0)
        self.mode = QComboBox()
        for mode in MODES:
            self.mode.addItem(MODE_TEXT.get(mode, mode), mode)
        self.shuffle = QCheckBox("Shuffle, seed")
        self.shuffle.setChecked(True)
        self.seed = self._spin(0, 0, 2 ** 31 - 1)
        self.file1, self.file2 = QLineEdit("train.csv"), QLineEdit("test.csv")
        self.ratio2 = self._spin(20, 0, 100)
        self.ratio2.setSuffix(" %")
        self.skip_bad = QCheckBox("Leave out images that cannot be read (listed below) instead of stopping")
        self.skip_bad.setChecked(True)
        self.force = QCheckBox("Write into an existing folder (same-named files replaced, others kept)")
        self.use_in_project = QCheckBox("Use the new CSV files as this project's training and validation datasets")
        self.use_in_project.setChecked(True)
        form = QFormLayout()
        form.addRow("Source", self._row(self.source, folder, table))
        form.addRow("Output folder", self._row(self.output, browse))
        form.addRow("Size (W x H)", self._row(self.width_box, QLabel("x"), self.height_box, QLabel("channels"),
                                              self.channels, None))
        form.addRow("Other aspect ratios", self.mode)
        form.addRow("Order", self._row(self.shuffle, self.seed, None))
        form.addRow("Training CSV", self.file1)
        form.addRow("Validation CSV", self._row(self.file2, QLabel("with"), self.ratio2,
                                                QLabel("of the samples (0 %: no second file)")))
        form.addRow("", self.skip_bad)
        form.addRow("", self.force)
        form.addRow("", self.use_in_project)
        self.progress = QProgressBar()
        self.progress.setObjectName("create_progress")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.status = QLabel("Choose a source and an output folder, then Create.")
        self.status.setObjectName("create_status")
        self.status.setWordWrap(True)
        self.log = QPlainTextEdit()
        self.log.setObjectName("create_log")
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(2000)
        self.buttons = QDialogButtonBox()
        self.create_button = self.buttons.addButton("Create", QDialogButtonBox.AcceptRole)
        self.create_button.setObjectName("create_start")
        self.close_button = self.buttons.addButton(QDialogButtonBox.Close)
        self.close_button.setObjectName("create_close")
        self.create_button.clicked.connect(self.start)
        self.close_button.clicked.connect(self._close_or_cancel)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.log, 1)
        layout.addWidget(self.buttons)
        self.resize(760, 560)

    @staticmethod
    def _spin(value: int, low: int, high: int) -> QSpinBox:
        box = QSpinBox()
        box.setRange(low, high)
        box.setValue(value)
        return box

    @staticmethod
    def _row(*widgets: Optional[QWidget]) -> QWidget:
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget in widgets:
            if widget is None:
                layout.addStretch(1)
            else:
                layout.addWidget(widget, 1 if isinstance(widget, QLineEdit) else 0)
        return row

    def _pick_source(self, csv: bool) -> None:
        chosen = choose_source(self, self.start_dir, csv)
        if chosen:
            self.source.setText(chosen)

    def _pick_output(self) -> None:
        chosen = choose_output(self, self.start_dir)
        if chosen:
            self.output_chosen = True
            self.output.setText(chosen)

    def _suggest_output(self, source: str) -> None:
        """An output folder beside the project's data, named after the source, until the user types one."""
        if self.output_chosen or not source.strip():
            return
        name = os.path.splitext(os.path.basename(os.path.normpath(source.strip())))[0] or "dataset"
        self.output.setText(os.path.join(self.start_dir, "data", f"{name}_{self.width_box.value()}x"
                                         f"{self.height_box.value()}"))

    # ---- the command ----------------------------------------------------------------------------
    def arguments(self) -> List[str]:
        """The ``nnconsole`` arguments these options give (what a terminal user would type)."""
        args = ["dataset", "create", "-i", self.source.text().strip(), "-o", self.output.text().strip(),
                "-w", str(self.width_box.value()), "-g", str(self.height_box.value()),
                "-c", str(self.channels.currentData()), "-m", str(self.mode.currentData()),
                "-s", "true" if self.shuffle.isChecked() else "false", "--seed", str(self.seed.value()),
                "-f1", self.file1.text().strip() or "train.csv",
                "--on-error", "skip" if self.skip_bad.isChecked() else "stop"]
        if self.file2.text().strip() and self.ratio2.value():
            args += ["-f2", self.file2.text().strip(), "-r2", str(self.ratio2.value())]
        if self.force.isChecked():
            args.append("--force")
        return args

    def is_running(self) -> bool:
        return self.process is not None

    def start(self) -> None:
        if self.process is not None:
            return
        if not self.source.text().strip() or not self.output.text().strip():
            self._show_status("Choose a source and an output folder first.", error=True)
            return
        self.events_dir = tempfile.mkdtemp(prefix="nnconsole-create-")
        self.events_offset, self.output_text = 0, ""
        self.log.clear()
        self.progress.setRange(0, 0)  # busy until the first count arrives
        # merged: notes, skips and the summary in their order
        process = new_engine_process(self, self.start_dir if os.path.isdir(self.start_dir) else os.getcwd(),
                                     merged=True)
        process.readyReadStandardOutput.connect(self._read_output)
        process.finished.connect(self._finished)
        process.errorOccurred.connect(self._process_error)
        self.process = process
        self._set_running(True)
        self._show_status("Listing the source...")
        start_engine(process, self.arguments() + ["--events", os.path.join(self.events_dir, EVENTS_FILE)])
        self.timer.start()

    def cancel(self) -> None:
        """Stop the command; it removes what it made so far (its staging folder)."""
        if self.process is None:
            return
        self._show_status("Cancelling...")
        self.process.terminate()
        QTimer.singleShot(STOP_GRACE_MS, self._kill_if_running)

    def _kill_if_running(self) -> None:
        if self.process is not None:
            self.process.kill()

    def _close_or_cancel(self) -> None:
        if self.process is not None:
            self.cancel()
        else:
            self.reject()

    def reject(self) -> None:  # Escape and the window's close button cancel a running command first
        if self.process is not None:
            self.cancel()
            return
        super().reject()

    def _set_running(self, running: bool) -> None:
        self.create_button.setEnabled(not running)
        self.close_button.setText("Cancel" if running else "Close")
        for widget in (self.source, self.output, self.width_box, self.height_box, self.channels, self.mode,
                       self.shuffle, self.seed, self.file1, self.file2, self.ratio2, self.skip_bad, self.force,
                       *self.pick_buttons):
            widget.setEnabled(not running)

    def _read_output(self) -> None:
        if self.process is None:
            return
        text = bytes(self.process.readAllStandardOutput()).decode("utf-8", "replace")
        self.output_text += text
        for line in text.splitlines():
            if line.strip() and not line.startswith("converted "):  # progress lines: the bar shows them
                self.log.appendPlainText(line)

    def _read_progress(self) -> None:
        events, self.events_offset = read_events(os.path.join(self.events_dir, EVENTS_FILE), self.events_offset)
        for event in events:
            if event.get("event") == DATASET_PROGRESS_EVENT:
                done, total = int(event.get("done", 0)), max(int(event.get("total", 1)), 1)
                self.progress.setRange(0, total)
                self.progress.setValue(done)
                self._show_status(f"Converted {done:,} of {total:,} images, elapsed "
                                  f"{format_duration(event.get('elapsed'))}, ETA {format_duration(event.get('eta'))}")
            elif event.get("event") == DATASET_CREATED_EVENT:
                files = [str(f) for f in event.get("files", [])] + ["", ""]
                self.result_files = (files[0], files[1])

    def _process_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.FailedToStart and self.process is not None:
            message = self.process.errorString()
            self._end()
            self._show_status(f"Could not start nnconsole: {message}", error=True)

    def _finished(self, code: int, status: QProcess.ExitStatus) -> None:
        if self.process is None:
            return
        self._read_output()
        self._read_progress()
        self._end()
        if status == QProcess.NormalExit and code == ExitCode.OK and self.result_files[0]:
            self.progress.setRange(0, 1)
            self.progress.setValue(1)
            names = ", ".join(os.path.basename(f) for f in self.result_files if f)
            self._show_status(f"Created {names} in {os.path.dirname(self.result_files[0])}.")
            if self.use_in_project.isChecked():
                self.created.emit(*self.result_files)
            return
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        if code == ExitCode.INTERRUPTED or status == QProcess.CrashExit:
            self._show_status("Cancelled: nothing was written.", error=True)
        else:
            last = [line for line in self.output_text.splitlines() if line.startswith("nnconsole ")]
            self._show_status(last[-1] if last else f"nnconsole dataset create failed (exit code {code}); "
                              "see the messages below.", error=True)

    def _end(self) -> None:
        self.timer.stop()
        process, self.process = self.process, None
        if process is not None:
            process.deleteLater()
        self._set_running(False)
        shutil.rmtree(self.events_dir, ignore_errors=True)

    def _show_status(self, text: str, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setStyleSheet("color: #a00000;" if error else "")
