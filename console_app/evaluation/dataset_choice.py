"""Which data the EVALUATION tab evaluates on: the project's validation set, or any dataset CSV the user picks.

The combo lists the validation set, the CSVs already evaluated for the selected run (found from their
``metrics.json`` under ``<run>/evaluation/``) and "Other dataset CSV...", which asks for a file.
``current_dataset()`` is None for the validation set, else the CSV's absolute path, as
``nnconsole evaluate --dataset`` takes it.
"""
from __future__ import annotations

import os
from typing import List, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QWidget

from nnconsole.engine.metrics.results import EVALUATION_METRICS_FILE
from nnconsole.engine.rundir.protocol import EVALUATION_DIR
from nnconsole.app.widgets.rich_text import plain_tooltip
from nnconsole.engine.rundir import safe_json

VALIDATION = "validation set"
OTHER = "Other dataset CSV..."
_PICK = "\0pick"


def evaluated_datasets(run_dir: Optional[str]) -> List[str]:
    """Dataset CSVs other than the validation set that ``run_dir`` was evaluated on (from their metrics.json)."""
    found: List[str] = []
    folder = os.path.join(run_dir, EVALUATION_DIR) if run_dir else ""
    try:
        names = sorted(os.listdir(folder)) if folder else []
    except OSError:
        return []
    for name in names:
        try:
            with open(os.path.join(folder, name, EVALUATION_METRICS_FILE), "rb") as fh:
                metrics = safe_json.loads(fh.read())
        except (OSError, ValueError):
            continue
        dataset = metrics.get("dataset") if isinstance(metrics, dict) and metrics.get("split") == "dataset" else None
        if isinstance(dataset, str) and dataset not in found:
            found.append(dataset)
    return found


class DatasetChoice(QComboBox):
    """Validation set | evaluated CSVs | Other dataset CSV...; ``dataset_changed`` after every real change."""

    dataset_changed = Signal()

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("evaluation_dataset")
        self.setToolTip("Evaluate on the project's validation set or on any dataset CSV with the network's inputs "
                        "and its label (nnconsole evaluate --dataset)")
        self._current: Optional[str] = None
        self.fill(None)
        self.activated.connect(self._activated)

    def current_dataset(self) -> Optional[str]:
        return self._current

    def fill(self, run_dir: Optional[str]) -> None:
        """List the choices for ``run_dir``, keeping the current dataset."""
        self.blockSignals(True)
        self.clear()
        self.addItem(VALIDATION, None)
        datasets = evaluated_datasets(run_dir)
        if self._current and self._current not in datasets:
            datasets.append(self._current)
        for path in datasets:
            self.addItem(os.path.basename(path), path)
            self.setItemData(self.count() - 1, plain_tooltip(path), Qt.ToolTipRole)
        self.addItem(OTHER, _PICK)
        self.setCurrentIndex(max(0, self.findData(self._current)) if self._current else 0)
        self.blockSignals(False)

    def set_dataset(self, path: Optional[str]) -> None:
        """Choose ``path`` (None: the validation set) as if picked, and say so."""
        self._current = os.path.abspath(path) if path else None
        if self._current and self.findData(self._current) < 0:
            self.blockSignals(True)
            self.insertItem(self.count() - 1, os.path.basename(self._current), self._current)
            self.blockSignals(False)
        self.blockSignals(True)
        self.setCurrentIndex(self.findData(self._current) if self._current else 0)
        self.blockSignals(False)
        self.dataset_changed.emit()

    def _activated(self, index: int) -> None:
        data = self.itemData(index)
        if data == _PICK:
            start = os.path.dirname(self._current) if self._current else os.getcwd()
            path, _ = QFileDialog.getOpenFileName(self, "Dataset CSV to evaluate on", start, "Dataset CSV (*.csv)")
            if path:
                self.set_dataset(path)
            else:  # cancelled: back to what was chosen
                self.blockSignals(True)
                self.setCurrentIndex(self.findData(self._current) if self._current else 0)
                self.blockSignals(False)
            return
        if data != self._current:
            self._current = data
            self.dataset_changed.emit()
