"""Hostile text on the EDIT canvas (issue 25 items 11 and 25): a note of one unbroken megabyte opens as quickly
as a short one, and names a project chose (layers, types, scopes, networks) are shown in tooltips and the
property header as typed, never rendered as HTML."""
from __future__ import annotations

import copy
import time

import pytest
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QImage, QMouseEvent, QPainter

from nnconsole.app.edit.statistics import HEADER_HEIGHT, ROW_HEIGHT
from nnconsole.app.widgets.rich_text import TOOLTIP_CHARS, plain_tooltip
from nnconsole.engine.project.model import Comment

pytestmark = pytest.mark.gui

HOSTILE = "<img src='x.png'><b>bold&amp;"  # no '/': a layer name may not hold one


def _render(page) -> None:
    image = QImage(800, 600, QImage.Format_ARGB32)
    painter = QPainter(image)
    page.scene.render(painter)
    painter.end()


def test_a_megabyte_note_in_one_word_lays_out_in_bounded_time(digits_page):
    page = digits_page
    word = "x" * 1_000_000
    started = time.monotonic()
    page.document.network.comments = [Comment(word, (400.0, 0.0)), Comment("short", (400.0, 300.0))]
    page.document.network_changed.emit()
    page.flush()
    _render(page)
    seconds = time.monotonic() - started
    assert seconds < 2.0, f"opening a 1 MB note took {seconds:.1f} s"
    item = next(i for i in page.scene.items() if type(i).__name__ == "CommentItem" and i.text == word)
    assert item.clipped and item.text == word  # the model keeps every character; the box shows the start
    tip = item.toolTip()
    assert len(tip) < 2 * TOOLTIP_CHARS and f"({1_000_000 - TOOLTIP_CHARS:,} more characters)" in tip
    assert page.document.network.comments[0].text == word


def test_plain_tooltips_show_markup_as_typed_and_wrap_long_words():
    tip = plain_tooltip(HOSTILE + "\n" + "y" * 500)
    assert "<img" not in tip and "<b>bold" not in tip and "&lt;img src='x.png'&gt;" in tip
    assert "&amp;amp;" in tip  # an entity in the text is shown as typed too
    assert "\u200b" in tip  # the long word may wrap


def test_names_a_project_chose_are_escaped_in_the_canvas_tooltips_and_header(digits_page):
    page = digits_page
    network = page.document.network
    layer = copy.deepcopy(network.layers[-1])
    layer.name, layer.type, layer.position = HOSTILE, "<i>Odd</i>", (900.0, 900.0)
    network.layers.append(layer)
    page.document.network_changed.emit()
    page.flush()
    node = page.scene.node(HOSTILE)
    tip = node.toolTip()
    assert "&lt;img src='x.png'&gt;&lt;b&gt;bold&amp;amp;" in tip and "<img" not in tip
    assert "&lt;i&gt;Odd&lt;/i&gt;" in tip and "<i>Odd" not in tip
    issues = [page.issues.list.topLevelItem(i) for i in range(page.issues.list.topLevelItemCount())]
    mine = [row.toolTip(2) for row in issues if HOSTILE in row.text(2) or "<i>Odd</i>" in row.text(2)]
    assert mine and all("<img" not in t and "<i>Odd" not in t for t in mine)
    page.scene.clearSelection()
    node.setSelected(True)
    page.flush()
    header = page.properties.findChild(type(page.totals), "prop_header")
    assert header is not None and "&lt;i&gt;Odd&lt;/i&gt;" in header.text() and "<i>Odd" not in header.text()


def test_an_undo_step_naming_a_layer_is_escaped(digits_page):
    page = digits_page
    assert page.editor.rename("conv1", HOSTILE) is None
    page.flush()
    undo, _ = page._undo_buttons
    assert HOSTILE in page.document.undo_stack.undoText()
    assert "&lt;img src='x.png'&gt;" in undo.toolTip() and "<img" not in undo.toolTip()
    statistics = page.statistics.chart
    index = next(i for i, r in enumerate(statistics.rows) if r.name == HOSTILE)
    y = HEADER_HEIGHT + ROW_HEIGHT * index + ROW_HEIGHT / 2
    statistics.mouseMoveEvent(QMouseEvent(QEvent.MouseMove, QPointF(20, y), QPointF(20, y), Qt.NoButton,
                                          Qt.NoButton, Qt.NoModifier))
    assert "&lt;b&gt;bold" in statistics.toolTip() and "<img" not in statistics.toolTip()
