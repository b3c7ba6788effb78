"""The import report dialog (issue 28, item 9): a long report fits the screen, scrolls, and can be copied."""
from __future__ import annotations

from PySide6.QtCore import QRect
from PySide6.QtWidgets import QApplication, QDialog, QMessageBox, QPlainTextEdit

from nnconsole.app.shell import dialogs
from nnconsole.app.shell.report_dialog import ReportDialog
from nnconsole.engine.interop.report import format_report

SHOW_IMPORT_REPORT = dialogs.show_import_report  # the real one (tests/gui/conftest.py guards the module's)
LAPTOP = QRect(0, 0, 1366, 728)  # a 1366x768 screen's free part under a 40 px panel


def _report(n: int = 200) -> str:
    notes = [f"repeat block 'RepeatStart_{i}' x2 (Convolution_{i}, ReLU_{i}) kept as a block: the engine "
             "unrolls it, each repetition with its own weights" for i in range(n)]
    return format_report("imported /data/big.sdcproj", ["layer 'odd' (Odd): nnconsole has no Odd layer"], notes)


def _shown(qtbot, monkeypatch, report: str):
    """The dialog show_import_report opens (its exec replaced, so the test does not block)."""
    seen = []

    def fake_exec(self):
        seen.append(self)
        return 0

    monkeypatch.setattr(QDialog, "exec", fake_exec)
    monkeypatch.setattr(QMessageBox, "exec", fake_exec)
    SHOW_IMPORT_REPORT(None, report)
    assert len(seen) == 1
    return seen[0]


def test_two_hundred_notes_fit_a_laptop_screen_and_scroll(qtbot):
    dialog = ReportDialog(None, "Import report", "imported big.sdcproj", _report())
    qtbot.addWidget(dialog)
    dialog.fit_to(LAPTOP)
    dialog.show()
    qtbot.waitExposed(dialog)
    frame = QRect(dialog.pos(), dialog.size())
    assert LAPTOP.contains(frame), (frame, LAPTOP)
    text = dialog.text
    assert text.verticalScrollBar().maximum() > 0  # what does not fit scrolls
    assert text.toPlainText().count("kept as a block") == 200


def test_show_import_report_opens_a_dialog_within_the_screen(qtbot, monkeypatch):
    dialog = _shown(qtbot, monkeypatch, _report())
    qtbot.addWidget(dialog)
    dialog.show()  # as exec would: a message box takes its size from its text only now
    qtbot.waitExposed(dialog)
    available = QApplication.primaryScreen().availableGeometry()
    assert dialog.width() <= available.width() and dialog.height() <= available.height(), \
        (dialog.size(), available)
    assert dialog.findChild(QPlainTextEdit, "report_text") is not None


def test_the_report_is_selectable_and_copied_whole(qtbot):
    report = _report(5)
    dialog = ReportDialog(None, "Import report", "head", report)
    qtbot.addWidget(dialog)
    assert dialog.text.isReadOnly()
    dialog.text.selectAll()
    assert dialog.text.textCursor().selectedText().replace("\u2029", "\n") == report
    QApplication.clipboard().clear()
    dialog.copy_button.click()
    assert QApplication.clipboard().text() == report


def test_a_short_report_gets_a_small_dialog(qtbot):
    dialog = ReportDialog(None, "Import report", "imported tiny.sdcproj", "notes:\n  - one note")
    qtbot.addWidget(dialog)
    dialog.fit_to(LAPTOP)
    assert dialog.height() < LAPTOP.height() * 0.6
