"""Help has more than About (issue 28 item 15): the getting-started guide, the layer reference from the
registry, the keyboard shortcuts from the window's actions, and what an error means, linked from every
error dialog."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QPushButton

from nnconsole.app.shell import dialogs, help_pages
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.layers import all_specs

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/shell"


def test_help_menu_pages(window):
    menu_texts = [a.text() for a in window.menuBar().findChild(type(window.recent_menu), "menu_help").actions()]
    assert any("Getting Started" in t for t in menu_texts) and any("Layer Reference" in t for t in menu_texts)
    window.actions_by_name["help_getting_started"].trigger()
    helper = help_pages._WINDOW
    assert helper.page == "getting-started" and "Getting started" in helper.browser.toPlainText()
    window.actions_by_name["help_layers"].trigger()
    text = helper.browser.toPlainText()
    assert all(spec.type in text for spec in all_specs())  # every registered type, from the registry
    window.actions_by_name["help_shortcuts"].trigger()
    text = helper.browser.toPlainText()
    assert "Find Layer" in text and "Ctrl+F" in text and "Save" in text
    helper.grab().save(f"{SHOTS}/help_shortcuts_after.png")
    window.actions_by_name["help_errors"].trigger()
    text = helper.browser.toPlainText()
    assert all(str(int(code)) in text and code.name in text for code in ExitCode)
    helper.grab().save(f"{SHOTS}/help_errors_after.png")
    helper.close()


def test_an_error_dialog_links_to_what_it_means(qtbot):
    box = dialogs.error_box(None, "Cannot open", "Cannot open p.yaml: 1 problem in the file.", "Line 3: ...")
    qtbot.addWidget(box)
    box.show()
    button = box.findChild(QPushButton, "error_help_button")
    assert button is not None and button.text() == "What does this mean?"
    box.grab().save(f"{SHOTS}/error_dialog_after.png")
    button.click()
    assert dialogs.follow_help(box)
    assert help_pages._WINDOW.page == "errors" and help_pages._WINDOW.isVisible()
    help_pages._WINDOW.close()
