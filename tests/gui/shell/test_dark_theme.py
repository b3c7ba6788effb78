"""Dark palette (issue 28 item 4): the marked cells of the plan and DATASET stay readable, and plots and the
canvas follow the palette; View > Theme switches Light / Dark / System and is remembered.

Readable is WCAG's contrast ratio of a cell's text on its background, >= 4.5 (``theme.contrast_ratio``);
a cell's text is its own foreground, or the view's palette text when it sets none (what Qt paints).
"""
from __future__ import annotations

import pytest
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

from tests.gui.support import copy_digits, wait_until

from nnconsole.app.shell import settings as app_settings
from nnconsole.app.widgets import theme

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/shell"
TABS = ("edit", "dataset", "config", "training")


@pytest.fixture
def restore_palette():
    yield
    theme.apply_theme("system")


def text_on(item, view):
    fg = item.foreground()
    text = fg.color() if fg.style() else view.palette().color(QPalette.Text)
    return text, item.background().color()


def test_marked_cells_plots_and_canvas_follow_a_dark_palette(qtbot, make_window, tmp_path, restore_palette):
    project = copy_digits(str(tmp_path / "digits"))
    window = make_window(tab_keys=TABS)
    assert window.files.open_path(project, ask_save=False)
    window.resize(1300, 720)
    window.show()
    window.actions_by_name["theme_dark"].trigger()
    qtbot.wait(100)  # the widgets get the new palette through posted events
    assert theme.is_dark(QApplication.instance().palette())
    assert window.settings.get(app_settings.THEME) == "dark"

    plan = window.pages["config"].plan_panel.table
    column = next(c for c in range(plan.columnCount()) if "(project)" in plan.horizontalHeaderItem(c).text())
    for row in range(plan.rowCount()):
        text, background = text_on(plan.item(row, column), plan)
        assert theme.contrast_ratio(text, background) >= 4.5, (row, text.name(), background.name())
        assert background.lightness() < 128  # a dark cell in a dark table, not a light stripe

    dataset = window.pages["dataset"]
    wait_until(qtbot, lambda: dataset.variables.rowCount() > 0 and dataset.variables.item(0, 3) is not None, 30)
    table = dataset.variables
    cells = [table.item(r, c) for r in range(table.rowCount()) for c in (3, 4) if table.item(r, c)]
    assert any(cell.text().startswith("\u2714") for cell in cells)
    for cell in cells:
        text, background = text_on(cell, table)
        assert theme.contrast_ratio(text, background) >= 4.5, (cell.text(), text.name(), background.name())

    histogram = dataset.previews["training"].histogram
    assert histogram.backgroundBrush().color().lightness() < 128
    curves = window.pages["training"].curves.view
    assert curves.backgroundBrush().color().lightness() < 128
    edit = window.pages["edit"]
    window.show_tab("edit")
    image = edit.view.viewport().grab().toImage()
    assert image.pixelColor(3, 3).lightness() < 128  # the canvas background, away from the nodes
    for key in ("config", "dataset", "edit"):
        window.show_tab(key)
        window.grab().save(f"{SHOTS}/dark_{key}_after.png")

    window.actions_by_name["theme_light"].trigger()
    qtbot.wait(100)
    assert not theme.is_dark(QApplication.instance().palette())
    assert histogram.backgroundBrush().color().lightness() > 128
    text, background = text_on(plan.item(0, column), plan)
    assert theme.contrast_ratio(text, background) >= 4.5


def test_contrast_ratio_matches_wcag():
    from PySide6.QtGui import QColor

    assert theme.contrast_ratio(QColor("#000000"), QColor("#ffffff")) == pytest.approx(21.0, rel=1e-6)
    assert theme.contrast_ratio(QColor("#777777"), QColor("#ffffff")) == pytest.approx(4.48, abs=0.01)
