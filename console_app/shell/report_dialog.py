"""A long report in a window that fits the screen: the import report (what was not carried over, notes).

A QMessageBox grows with its text: an import with a few hundred notes made a dialog taller than a laptop
screen, its OK button out of reach and nothing to scroll. This dialog shows the report in a read-only text
box that scrolls, whose text can be selected and copied (Ctrl+A, Ctrl+C, or the Copy button, to paste it
into a bug report), and sizes itself to the text but never beyond the available part of its screen.
"""
from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QRect, QSize
from PySide6.QtGui import QFontMetrics, QGuiApplication
from PySide6.QtWidgets import (QApplication, QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout,
                               QWidget)

SCREEN_SHARE = 0.8  # at most this share of the screen's free width and height
MIN_SIZE = QSize(420, 240)
TEXT_COLUMNS = 140  # characters of the widest line shown without scrolling sideways


class ReportDialog(QDialog):
    """``text`` under a headline, scrollable and selectable, with Copy and OK."""

    def __init__(self, parent: Optional[QWidget], title: str, headline: str, text: str) -> None:
        super().__init__(parent)
        self.setObjectName("report_dialog")
        self.setWindowTitle(title)
        self.setSizeGripEnabled(True)
        layout = QVBoxLayout(self)
        self.headline = QLabel(headline)
        self.headline.setWordWrap(True)
        layout.addWidget(self.headline)
        self.text = QPlainTextEdit()
        self.text.setObjectName("report_text")
        self.text.setReadOnly(True)  # read-only still selects and copies
        self.text.setPlainText(text)  # plain: it names the file's layers, shown, never rendered
        self.text.setLineWrapMode(QPlainTextEdit.WidgetWidth)
        layout.addWidget(self.text, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok)
        self.copy_button = buttons.addButton("Copy", QDialogButtonBox.ActionRole)
        self.copy_button.clicked.connect(self.copy_text)
        buttons.accepted.connect(self.accept)
        layout.addWidget(buttons)
        screen = (parent.screen() if parent is not None else None) or QGuiApplication.primaryScreen()
        self.fit_to(screen.availableGeometry() if screen is not None else QRect(0, 0, 1024, 700))

    def copy_text(self) -> None:
        """The whole report to the clipboard."""
        QApplication.clipboard().setText(self.text.toPlainText())

    def wanted_size(self) -> QSize:
        """What the text would like: its longest line (up to TEXT_COLUMNS) by all its lines, plus the frame."""
        metrics = QFontMetrics(self.text.font())
        lines = self.text.toPlainText().splitlines() or [""]
        widest = max(metrics.horizontalAdvance(line[:TEXT_COLUMNS]) for line in lines)
        width = widest + 60
        height = metrics.lineSpacing() * (len(lines) + 1) + self.headline.sizeHint().height() + 110
        return QSize(max(MIN_SIZE.width(), width), max(MIN_SIZE.height(), height))

    def fit_to(self, available: QRect) -> None:
        """Size to the text, but never beyond SCREEN_SHARE of ``available`` (a screen's free geometry), and
        centre on it; the text box scrolls what does not fit."""
        wanted = self.wanted_size()
        width = min(wanted.width(), int(available.width() * SCREEN_SHARE))
        height = min(wanted.height(), int(available.height() * SCREEN_SHARE))
        self.setMaximumSize(available.size())
        self.resize(width, height)
        self.move(available.x() + (available.width() - width) // 2, available.y() + (available.height() - height) // 2)


def report_parts(report: str) -> tuple:
    """(headline, body) of a report from ``nnconsole.engine.interop.report.format_report``: its first line,
    then the rest."""
    head, _, body = report.partition("\n")
    return head, body or head
