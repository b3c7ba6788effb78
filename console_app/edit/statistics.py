"""Network statistics as NNC shows them: per-layer horizontal bars of output size, parameters and
multiply-adds (each scaled to its largest layer), with the network's totals.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QMouseEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import QGridLayout, QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from nnconsole.app.edit import style
from nnconsole.app.widgets.rich_text import bounded, esc
from nnconsole.engine.layers import get_spec

METRICS = (("output_size", "Output size", "#4f8fd0"), ("n_params", "Parameters", "#e0903a"),
           ("macs", "Multiply-adds", "#4aa564"))
ROW_HEIGHT = 24
HEADER_HEIGHT = 26


@dataclass(frozen=True)
class StatRow:
    name: str
    type: str
    group: Optional[str]
    output_size: int
    n_params: int
    macs: int


def stat_rows(info: Any) -> List[StatRow]:
    """One row per layer in data-flow order (layers with errors count as 0)."""
    rows = []
    for name in info.order:
        li = info.layers.get(name)
        if li is None:
            continue
        try:
            group = get_spec(li.type).group
        except KeyError:
            group = None
        rows.append(StatRow(name, li.type, group, int(li.output_size), int(li.n_params), int(li.macs)))
    return rows


class BarChart(QWidget):
    """Rows of layers, three columns of bars; click a row to select that layer."""

    row_clicked = Signal(str)

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("statistics_chart")
        self.rows: List[StatRow] = []
        self.selected: Optional[str] = None
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)

    def set_rows(self, rows: List[StatRow]) -> None:
        self.rows = rows
        self.setMinimumHeight(self.sizeHint().height())
        self.updateGeometry()
        self.update()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(420, HEADER_HEIGHT + ROW_HEIGHT * (len(self.rows) + 1) + 8)

    def _columns(self) -> tuple:
        width = self.width()
        name_w = max(70.0, min(120.0, width * 0.2))
        col_w = (width - name_w - 8) / 3
        return name_w, col_w

    def row_at(self, y: float) -> Optional[StatRow]:
        i = int((y - HEADER_HEIGHT) // ROW_HEIGHT)
        return self.rows[i] if 0 <= i < len(self.rows) else None

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        row = self.row_at(event.position().y())
        if row is not None:
            self.row_clicked.emit(row.name)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        row = self.row_at(event.position().y())
        if row is None:
            self.setToolTip("")
            return
        totals = {key: sum(getattr(r, key) for r in self.rows) or 1 for key, _, _ in METRICS}
        lines = [f"<b>{esc(bounded(row.name, 200))}</b> ({esc(bounded(row.type, 200))})"]
        for key, title, _ in METRICS:
            value = getattr(row, key)
            lines.append(f"{title}: {value:,} ({100.0 * value / totals[key]:.1f}% of the network)")
        self.setToolTip("<br>".join(lines))

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        name_w, col_w = self._columns()
        small, bold = style.font(8.5), style.font(8.5, True)
        fm = QFontMetrics(small)
        value_w = fm.horizontalAdvance("888.8k") + 6
        painter.setFont(bold)
        painter.setPen(style.TEXT_MUTED)
        painter.drawText(QRectF(8, 0, name_w - 8, HEADER_HEIGHT), Qt.AlignLeft | Qt.AlignVCenter, "Layer")
        for c, (_, title, color) in enumerate(METRICS):
            x = name_w + c * col_w
            painter.setPen(QColor(color).darker(130))
            painter.drawText(QRectF(x + 4, 0, col_w - 8, HEADER_HEIGHT), Qt.AlignLeft | Qt.AlignVCenter, title)
        maxima = [max([getattr(r, key) for r in self.rows] + [1]) for key, _, _ in METRICS]
        for i, row in enumerate(self.rows + [None]):
            top = HEADER_HEIGHT + i * ROW_HEIGHT
            if row is not None and row.name == self.selected:
                painter.fillRect(QRectF(0, top, self.width(), ROW_HEIGHT), QColor("#d6e6fa"))
                painter.fillRect(QRectF(0, top, 3, ROW_HEIGHT), style.SELECTED_COLOR)
            elif i % 2 == 1:
                painter.fillRect(QRectF(0, top, self.width(), ROW_HEIGHT), QColor("#f3f5f8"))
            if row is None:  # totals
                painter.setPen(QColor("#c9ced6"))
                painter.drawLine(0, top, self.width(), top)
                painter.setFont(bold)
                painter.setPen(style.TEXT)
                painter.drawText(QRectF(8, top, name_w - 8, ROW_HEIGHT), Qt.AlignLeft | Qt.AlignVCenter, "Total")
                for c, (key, _, _) in enumerate(METRICS):
                    total = sum(getattr(r, key) for r in self.rows)
                    painter.drawText(QRectF(name_w + c * col_w + 4, top, col_w - 8, ROW_HEIGHT),
                                     Qt.AlignLeft | Qt.AlignVCenter, f"{total:,}")
                continue
            fill, accent = style.group_colors(row.group)
            painter.setPen(accent)
            painter.setBrush(fill)
            painter.drawRoundedRect(QRectF(8, top + 7, 10, 10), 3, 3)
            painter.setFont(small)
            painter.setPen(style.TEXT)
            painter.drawText(QRectF(24, top, name_w - 28, ROW_HEIGHT), Qt.AlignLeft | Qt.AlignVCenter,
                             fm.elidedText(row.name, Qt.ElideRight, int(name_w - 28)))
            for c, (key, _, color) in enumerate(METRICS):
                x = name_w + c * col_w + 4
                value = getattr(row, key)
                span = max(0.0, col_w - value_w - 10)
                length = span * value / maxima[c] if value else 0.0
                if value:
                    painter.setPen(Qt.NoPen)
                    painter.setBrush(QColor(color))
                    painter.drawRoundedRect(QRectF(x, top + 6, max(2.0, length), ROW_HEIGHT - 12), 2, 2)
                painter.setPen(style.TEXT_MUTED if value else QColor("#a0a7b0"))
                painter.drawText(QRectF(x + length + 4, top, value_w, ROW_HEIGHT), Qt.AlignLeft | Qt.AlignVCenter,
                                 style.fmt_count(value) if value else "0")
        painter.end()


class StatisticsView(QWidget):
    """Totals on top, the per-layer bar chart below (scrolls for long networks)."""

    layer_activated = Signal(str)

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("statistics_view")
        self.totals = {}
        grid = QGridLayout()
        grid.setContentsMargins(10, 10, 10, 4)
        grid.setHorizontalSpacing(12)
        for row, (key, title, color) in enumerate(METRICS + (("layers", "Layers", "#56606b"),)):
            label = QLabel(title)
            label.setStyleSheet(f"color: {QColor(color).darker(125).name()};")
            value = QLabel("0")
            value.setObjectName(f"stat_total_{key}")
            value.setStyleSheet("font-weight: bold;")
            value.setTextInteractionFlags(Qt.TextSelectableByMouse)
            self.totals[key] = value
            grid.addWidget(label, row, 0)
            grid.addWidget(value, row, 1)
        grid.setColumnStretch(2, 1)
        note = QLabel("Per sample. Output size is the number of values a layer outputs; "
                      "bars are scaled to the largest layer of each column.")
        note.setWordWrap(True)
        note.setStyleSheet("color: #56606b;")
        self.chart = BarChart()
        self.chart.row_clicked.connect(self.layer_activated)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.NoFrame)
        holder = QWidget()
        holder_box = QVBoxLayout(holder)
        holder_box.setContentsMargins(0, 0, 0, 0)
        holder_box.addWidget(self.chart)
        holder_box.addStretch(1)
        scroll.setWidget(holder)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(grid)
        box.addWidget(note)
        note.setContentsMargins(10, 0, 10, 4)
        box.addWidget(scroll, 1)

    def set_info(self, info: Any) -> None:
        rows = stat_rows(info)
        self.chart.set_rows(rows)
        self.totals["output_size"].setText(f"{sum(r.output_size for r in rows):,} values")
        self.totals["n_params"].setText(f"{info.total_params:,}")
        self.totals["macs"].setText(f"{info.total_macs:,}")
        self.totals["layers"].setText(str(len(rows)))

    def set_selected(self, name: Optional[str]) -> None:
        self.chart.selected = name
        self.chart.update()
