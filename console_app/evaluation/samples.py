"""The per-sample table of an evaluation: thumbnail, label, prediction, probabilities; sortable and filterable.

Rows are ``samples.csv`` as written by ``nnconsole evaluate``. Sorting uses numbers (not text) and
the filter keeps mistakes only, one true class, or one (true, predicted) pair picked in the
confusion matrix.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QBrush, QColor

from nnconsole.app.dataset.preview import is_image_cell
from nnconsole.app.dataset.thumbnails import thumbnail
from nnconsole.app.widgets.rich_text import plain_tooltip

MAX_PROBABILITY_COLUMNS = 20
MISTAKE_BRUSH = QBrush(QColor("#fde7e7"))
SORT_ROLE = Qt.UserRole + 1


def _number(text: str) -> Any:
    try:
        return float(text)
    except (TypeError, ValueError):
        return text


class SamplesModel(QAbstractTableModel):
    """samples.csv rows; classification rows get a confidence column and per-class probabilities."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: List[Dict[str, str]] = []
        self.columns: List[str] = []
        self.headers: List[str] = []
        self.task = "classification"
        self.base = ""

    def set_samples(self, rows: List[Dict[str, str]], task: str, dataset_path: str) -> None:
        self.beginResetModel()
        self.rows = rows
        self.task = task
        self.base = os.path.dirname(os.path.abspath(dataset_path)) if dataset_path else ""
        fields = list(rows[0].keys()) if rows else []
        if task == "classification":
            probs = [f for f in fields if f.startswith("p_")]
            self.columns = ["index", "source", "label", "prediction", "correct", "confidence"]
            self.columns += probs[:MAX_PROBABILITY_COLUMNS]
            self.headers = ["#", "Sample", "Label", "Prediction", "Correct", "Confidence"] + \
                [f"p({f[2:]})" for f in probs[:MAX_PROBABILITY_COLUMNS]]
            for row in rows:
                row["confidence"] = row.get(f"p_{row.get('prediction')}", "")
        else:
            self.columns = fields
            self.headers = ["#" if f == "index" else f.replace("_", " ").capitalize() for f in fields]
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.columns)

    def is_mistake(self, row: int) -> bool:
        return self.task == "classification" and self.rows[row].get("correct") == "0"

    def data(self, index: QModelIndex, role: int = Qt.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        key = self.columns[index.column()]
        text = row.get(key, "")
        if role == Qt.DisplayRole:
            if key == "correct":
                return "\u2714" if text == "1" else "\u2716"
            if key == "confidence" or key.startswith("p_"):
                value = _number(text)
                return f"{value:.3f}" if isinstance(value, float) else text
            return text
        if role == SORT_ROLE:
            return _number(text)
        if role == Qt.DecorationRole and key == "source" and is_image_cell(text):
            pixmap = thumbnail(os.path.join(self.base, text.strip()))
            return pixmap if not pixmap.isNull() else None
        if role == Qt.BackgroundRole and self.is_mistake(index.row()):
            return MISTAKE_BRUSH
        if role == Qt.ForegroundRole and key == "correct":
            return QBrush(QColor("#1e6b1e" if text == "1" else "#b00000"))
        if role == Qt.TextAlignmentRole and key not in ("source",):
            return int(Qt.AlignCenter)
        if role == Qt.ToolTipRole and key == "source":
            path = os.path.join(self.base, text) if self.base else text
            return plain_tooltip(f"{path}\n(click for a larger view)" if is_image_cell(text) else path)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.DisplayRole) -> Any:  # noqa: N802
        if role == Qt.DisplayRole and orientation == Qt.Horizontal and section < len(self.headers):
            return self.headers[section]
        return None


class SamplesFilter(QSortFilterProxyModel):
    """Mistakes only, one true class, or one (true, predicted) pair; numeric sorting."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self.mistakes_only = False
        self.true_class: Optional[int] = None
        self.predicted_class: Optional[int] = None

    def set_filter(self, mistakes_only: bool = False, true_class: Optional[int] = None,
                   predicted_class: Optional[int] = None) -> None:
        begin = getattr(self, "beginFilterChange", None)  # Qt >= 6.9; invalidateFilter is deprecated there
        if begin is not None:
            begin()
        self.mistakes_only = mistakes_only
        self.true_class = true_class
        self.predicted_class = predicted_class
        if begin is not None:
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex) -> bool:  # noqa: N802
        model: SamplesModel = self.sourceModel()
        if model.task != "classification":
            return True
        row = model.rows[source_row]
        if self.mistakes_only and row.get("correct") != "0":
            return False
        if self.true_class is not None and row.get("label") != str(self.true_class):
            return False
        if self.predicted_class is not None and row.get("prediction") != str(self.predicted_class):
            return False
        return True
