"""Small things of the run menu (issue 28 item 14): the Resume question's title fits its window (a window
manager draws it in a title bar beside its buttons, so the dialog must be wider than the title's text plus
them), and the delete question speaks of one run as "it", not "them"."""
from __future__ import annotations

import pytest
from PySide6.QtGui import QFont, QFontMetrics, QGuiApplication

from nnconsole.app.training import dialogs

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/runs"


@pytest.mark.parametrize("name", ["20240101_000000", "20261128_043519_2"])
def test_the_resume_dialogs_title_fits(qtbot, name):
    dialog = dialogs.workers_dialog(None, name, 2)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    bold = QFont(QGuiApplication.font())
    bold.setBold(True)
    title = QFontMetrics(bold).horizontalAdvance(dialog.windowTitle())
    assert dialog.windowTitle() == f"Resume {name}"
    assert dialog.width() >= title + dialogs.TITLE_BAR_EXTRA  # text, icon and three title-bar buttons
    assert dialog.intValue() == 2 and name in dialog.labelText()
    dialog.grab().save(f"{SHOTS}/item14_resume_dialog_{name}.png")


def test_the_delete_question_speaks_of_one_run_as_it():
    one = dialogs.delete_question(["20240101_000000"])
    assert "Its curves" in one and "go with it;" in one and "Their" not in one and "this run" in one
    two = dialogs.delete_question(["a", "b"])
    assert "Their curves" in two and "these runs" in two
