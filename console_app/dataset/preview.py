"""One dataset's preview: the first rows with image thumbnails, the row count, and the label histogram."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSize, Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QSplitter, QTableView, QVBoxLayout, QWidget

from nnconsole.app.dataset.thumbnails import thumbnail
from nnconsole.app.widgets.plots import TRAIN_COLOR, make_plot_widget
from nnconsole.engine.data.labels import class_name
from nnconsole.engine.data.loading import IMAGE_EXTENSIONS
from nnconsole.app.widgets.rich_text import bounded, esc, plain_tooltip

PREVIEW_ROWS = 200
MAX_COLUMNS = 40  # wide numeric CSVs (784 pixel columns) show their first columns only
ERROR_STYLE = "QLabel { color: #a00000; background: #fff0f0; border: 1px solid #e0a0a0; padding: 4px; }"


def is_image_cell(text: str) -> bool:
    return os.path.splitext(text.strip())[1].lower() in IMAGE_EXTENSIONS


class CsvTableModel(QAbstractTableModel):
    """Rows of a CSV preview; image cells get a thumbnail (paths relative to the CSV's folder)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.columns: List[str] = []
        self.rows: List[List[str]] = []
        self.base = ""

    def set_preview(self, columns: List[str], rows: List[List[str]], base: str) -> None:
        self.beginResetModel()
        self.columns = list(columns[:MAX_COLUMNS])
        self.rows = [r[:MAX_COLUMNS] for r in rows]
        self.base = base
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index: QModelIndex, role: int = Qt.DisplayRole) -> Any:
        if not index.isValid():
            return None
        text = self.rows[index.row()][index.column()]
        if role == Qt.DisplayRole:
            return text
        if role == Qt.ToolTipRole:  # a cell of someone's CSV: shown as typed, never rendered
            return plain_tooltip(text)
        if role == Qt.DecorationRole and is_image_cell(text):
            pixmap = thumbnail(os.path.join(self.base, text.strip()))
            return pixmap if not pixmap.isNull() else None
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.DisplayRole) -> Any:  # noqa: N802
        if role != Qt.DisplayRole:
            return None
        if orientation == Qt.Horizontal:
            return self.columns[section] if section < len(self.columns) else None
        return str(section + 1)


class DatasetPreview(QWidget):
    """Header line, error line, the row table and the histogram of one dataset CSV."""

    def __init__(self, name: str, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"preview_{name}")
        self.info = QLabel(self)
        self.info.setObjectName(f"preview_{name}_info")
        self.info.setWordWrap(True)
        self.error = QLabel(self)
        self.error.setObjectName(f"preview_{name}_error")
        self.error.setWordWrap(True)
        self.error.setTextFormat(Qt.PlainText)  # it quotes the CSV's cells: shown, never rendered
        self.error.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.hide()
        self.model = CsvTableModel(self)
        self.table = QTableView(self)
        self.table.setObjectName(f"preview_{name}_table")
        self.table.setModel(self.model)
        self.table.setIconSize(QSize(32, 32))
        self.table.verticalHeader().setDefaultSectionSize(36)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Interactive)
        self.table.horizontalHeader().setDefaultSectionSize(140)
        self.table.setAlternatingRowColors(True)
        self.histogram = make_plot_widget("Class histogram", "class", "samples", legend=False)
        self.histogram.setObjectName(f"preview_{name}_histogram")
        self.histogram.setMouseEnabled(x=False, y=False)
        self.histogram_counts: Dict[Any, int] = {}
        splitter = QSplitter(Qt.Horizontal, self)
        splitter.addWidget(self.table)
        splitter.addWidget(self.histogram)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setSizes([700, 500])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.info)
        layout.addWidget(self.error)
        layout.addWidget(splitter, 1)

    def clear(self, message: str = "") -> None:
        self.model.set_preview([], [], "")
        self.info.setText(message)
        self.show_error("")
        self.show_histogram({}, "")

    def show_preview(self, preview: Any, kinds: Optional[Dict[str, str]] = None) -> None:
        """Show a ``nnconsole.engine.data.loading.CsvPreview`` (first rows; image cells as thumbnails)."""
        base = os.path.dirname(os.path.abspath(preview.path))
        self.model.set_preview(preview.columns, preview.rows, base)
        for c in range(self.model.columnCount()):
            if any(is_image_cell(r[c]) for r in self.model.rows[:5]):
                self.table.setColumnWidth(c, 190)
        shown = f"first {len(preview.rows):,}" if len(preview.rows) < preview.row_count else "all"
        cols = (f"; first {MAX_COLUMNS} of {len(preview.columns)} columns shown"
                if len(preview.columns) > MAX_COLUMNS else "")
        variables = ", ".join(f"{v} ({kinds[v]})" if kinds and v in kinds else v for v in preview.variables)
        self.info.setText(f"<b>{preview.row_count:,}</b> samples &middot; variables: {esc(bounded(variables, 500))} "
                          f"&middot; {shown} rows shown{cols} &middot; <code>{esc(preview.path)}</code>")

    def show_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(bool(text))

    def show_histogram(self, counts: Dict[Any, int], variable: str, names: Sequence[str] = ()) -> None:
        """Bars of samples per class (``nnconsole.engine.data.loading.class_histogram``), each named from
        ``names`` (the project's labels.txt, ``engine.data.labels``) or by its number where it has no name."""
        self.histogram_counts = dict(counts)
        item = self.histogram.getPlotItem()
        item.clear()
        item.setTitle(f"Class histogram ({variable})" if variable else "Class histogram", color="#222222",
                      size="10pt")
        item.setLabel("bottom", f"class ({variable})" if variable else "class")
        if not counts:
            return
        xs = np.array(list(counts.keys()), dtype=float)
        ys = np.array(list(counts.values()), dtype=float)
        item.addItem(pg.BarGraphItem(x=xs, height=ys, width=0.7, brush=TRAIN_COLOR, pen=pg.mkPen("#174a7c")))
        item.getAxis("bottom").setTicks([[(x, class_name(list(names), int(x))) for x in xs]] if len(xs) <= 30
                                        else None)
        item.setYRange(0, float(ys.max()) * 1.12, padding=0)
        item.setXRange(float(xs.min()) - 0.6, float(xs.max()) + 0.6, padding=0)

    def show_value_histogram(self, values: np.ndarray, variable: str, bins: int = 30) -> None:
        """Distribution of a regression target (no classes)."""
        self.histogram_counts = {}
        item = self.histogram.getPlotItem()
        item.clear()
        item.getAxis("bottom").setTicks(None)
        item.setTitle(f"Target distribution ({variable})", color="#222222", size="10pt")
        item.setLabel("bottom", variable)
        values = np.asarray(values, dtype=float).ravel()
        if values.size == 0:
            return
        counts, edges = np.histogram(values, bins=bins)
        item.addItem(pg.BarGraphItem(x0=edges[:-1], x1=edges[1:], height=counts, brush=TRAIN_COLOR,
                                     pen=pg.mkPen("#174a7c")))
        item.enableAutoRange()
