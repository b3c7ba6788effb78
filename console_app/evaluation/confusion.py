"""The confusion matrix as a heat map: counts in cells, shaded by the share of each true class.

Rows are true classes, columns predicted ones (as ``metrics.json`` stores it). The diagonal is
shaded green and the confusions red, so both the good and the bad stand out; clicking a cell emits
the pair so the samples table can show exactly those samples.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QHeaderView, QLabel, QTableView, QVBoxLayout, QWidget

from nnconsole.engine.data.labels import class_name


def _mix(share: float, strong: QColor) -> QColor:
    """White blended toward ``strong`` by ``share`` (0..1)."""
    share = max(0.0, min(1.0, share))
    return QColor(int(255 + (strong.red() - 255) * share), int(255 + (strong.green() - 255) * share),
                  int(255 + (strong.blue() - 255) * share))


class ConfusionModel(QAbstractTableModel):
    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.matrix: List[List[int]] = []
        self.row_totals: List[int] = []
        self.names: List[str] = []  # class names (labels.txt); a class without one shows its number

    def set_matrix(self, matrix: List[List[int]], names: Sequence[str] = ()) -> None:
        self.beginResetModel()
        self.names = [str(n) for n in names]
        self.matrix = [list(map(int, r)) for r in matrix]
        self.row_totals = [sum(r) for r in self.matrix]
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self.matrix)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.matrix)

    def share(self, r: int, c: int) -> float:
        total = self.row_totals[r]
        return self.matrix[r][c] / total if total else 0.0

    def data(self, index: QModelIndex, role: int = Qt.DisplayRole) -> Any:
        if not index.isValid():
            return None
        r, c = index.row(), index.column()
        count = self.matrix[r][c]
        if role == Qt.DisplayRole:
            return str(count)
        if role == Qt.TextAlignmentRole:
            return int(Qt.AlignCenter)
        share = self.share(r, c)
        if role == Qt.BackgroundRole:
            if count == 0:
                return QBrush(QColor("#ffffff"))
            strong = QColor("#1b7a3a") if r == c else QColor("#c62828")
            return QBrush(_mix(0.15 + 0.85 * share if r != c else 0.1 + 0.9 * share, strong))
        if role == Qt.ForegroundRole:
            dark = count and (share > 0.45 if r == c else share > 0.35)
            return QBrush(QColor("#ffffff" if dark else ("#222222" if count else "#b0b0b0")))
        if role == Qt.FontRole and r == c:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ToolTipRole:
            return (f"true {self.described(r)} \u2192 predicted {self.described(c)}: {count} "
                    f"sample{'s' if count != 1 else ''} ({share:.1%} of class {self.described(r)})")
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.DisplayRole) -> Any:  # noqa: N802
        if role == Qt.DisplayRole:
            return class_name(self.names, section)
        if role == Qt.ToolTipRole:
            return f"{'predicted' if orientation == Qt.Horizontal else 'true'} class {self.described(section)}"
        return None

    def described(self, index: int) -> str:
        """'3' or, with a name, '3 (cat)'."""
        name = class_name(self.names, index)
        return str(index) if name == str(index) else f"{index} ({name})"


class ConfusionMatrixView(QWidget):
    """A caption and the heat-map table; ``cell_clicked(true, predicted)`` on click."""

    cell_clicked = Signal(int, int)

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("confusion_matrix")
        self.caption = QLabel("<b>Confusion matrix</b> &mdash; rows: true class, columns: predicted class "
                              "(click a cell to list those samples)", self)
        self.caption.setWordWrap(True)
        self.model = ConfusionModel(self)
        self.table = QTableView(self)
        self.table.setObjectName("confusion_matrix_table")
        self.table.setModel(self.model)
        self.table.setShowGrid(True)
        self.table.setSelectionMode(QTableView.SingleSelection)
        for header in (self.table.horizontalHeader(), self.table.verticalHeader()):
            header.setSectionResizeMode(QHeaderView.Stretch)
            header.setMinimumSectionSize(24)
        self.table.clicked.connect(lambda index: self.cell_clicked.emit(index.row(), index.column()))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.table, 1)

    def set_matrix(self, matrix: List[List[int]], names: Sequence[str] = ()) -> None:
        """The counts (rows: true class), and the class names to head them with (labels.txt's)."""
        self.model.set_matrix(matrix, names)

    def total(self) -> int:
        return sum(self.model.row_totals)

    def trace(self) -> int:
        return sum(self.model.matrix[i][i] for i in range(len(self.model.matrix)))
