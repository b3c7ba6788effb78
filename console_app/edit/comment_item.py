"""Canvas notes (NNC's Comment layer): a pale yellow sticky-note box per ``Network.comments`` entry.

Notes are not layers: they have no ports, are never linked and never enter the graph, the shapes, the
statistics or the property panel. A note's text is always plain text (HTML in it is shown, never
rendered); a note too long for its box is clipped with an ellipsis and the text is in its tooltip. Only
the start of a long note is laid out (``SHOWN_CHARS``, more than the box can show) and the tooltip is
capped too, so a note of a megabyte (one unbroken word, say) opens as quickly as a short one.
A comment without a position is drawn beside the layers' bounding box, never over a layer.
``CommentNotes`` keeps one item per comment of the shown network, rebuilt by ``NetworkScene.sync``.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPainterPath, QPen, QTextDocument, QTextOption
from PySide6.QtWidgets import QGraphicsItem, QGraphicsObject, QGraphicsScene, QStyleOptionGraphicsItem, QWidget

from nnconsole.app.edit import style
from nnconsole.app.edit.layout import bounding_box
from nnconsole.app.widgets.rich_text import plain_tooltip

Position = Tuple[float, float]

COMMENT_WIDTH = 220.0  # a layer box's width: notes line up with the layers
MIN_HEIGHT = 40.0
MAX_HEIGHT = 200.0  # a longer text is clipped (the tooltip has all of it)
PADDING = 8.0
GAP = 40.0  # between the layers' bounding box and the notes placed beside it
FILL = QColor("#fff6bf")
BORDER = QColor("#d9c25c")
FOLD = QColor("#f0e08a")
EMPTY_TEXT = "(empty comment: double-click to write)"
SHOWN_CHARS = 1500  # laid out in the box: several boxes full (a box holds about 14 lines of 35 characters)


def default_positions(comments: Sequence[Any], layer_positions: Dict[str, Position]) -> List[Position]:
    """Each comment's canvas position: its stored one, or stacked to the right of the layers' bounding box
    (so a note without a position never covers a layer)."""
    box = bounding_box(layer_positions)
    x = (box[2] + GAP) if box is not None else 0.0
    y = box[1] if box is not None else 0.0
    out: List[Position] = []
    for comment in comments:
        pos = comment.position
        if pos is not None and len(pos) == 2 and all(isinstance(v, (int, float)) and math.isfinite(v) for v in pos):
            out.append((float(pos[0]), float(pos[1])))
        else:
            out.append((x, y))
            y += MIN_HEIGHT + 20.0
    return out


def tooltip_text(text: str) -> str:
    """The note as a tooltip, escaped so that markup in it is shown as typed, never rendered (capped: a very
    long note's tooltip says how much more there is)."""
    if not text:
        return "An empty comment: double-click to write in it"
    return plain_tooltip(text)


class CommentItem(QGraphicsObject):
    """One note; ``index`` is its place in ``Network.comments`` (the key the scene finds it by)."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index
        self.text: Optional[str] = None
        self._height = MIN_HEIGHT
        self._full_height = MIN_HEIGHT
        self._doc = QTextDocument()
        self._doc.setDocumentMargin(0)
        self._doc.setDefaultFont(style.font(8.5))
        option = QTextOption()
        option.setWrapMode(QTextOption.WrapAtWordBoundaryOrAnywhere)  # a 10,000-letter word wraps too
        self._doc.setDefaultTextOption(option)
        self._doc.setTextWidth(COMMENT_WIDTH - 2 * PADDING)
        self.setFlags(QGraphicsItem.ItemIsMovable | QGraphicsItem.ItemIsSelectable)
        self.setZValue(0.5)  # above the links (0), below the layers (1): a note never hides a layer
        self.setCursor(Qt.SizeAllCursor)
        self.set_text("")

    def set_text(self, text: str) -> None:
        """Show ``text`` (plain text: set through setPlainText, so HTML is never rendered)."""
        if text == self.text:
            return
        self.text = text
        shown = text[:SHOWN_CHARS] if text else EMPTY_TEXT  # the box shows less than this: lay out no more
        self._doc.setPlainText(shown)
        self._full_height = self._doc.size().height() + 2 * PADDING
        if len(text or "") > SHOWN_CHARS:
            self._full_height = max(self._full_height, MAX_HEIGHT + 1.0)  # clipped, whatever the start's height
        self.prepareGeometryChange()
        self._height = max(MIN_HEIGHT, min(MAX_HEIGHT, self._full_height))
        self.setToolTip(tooltip_text(text))
        self.update()

    @property
    def clipped(self) -> bool:
        """True when the text does not fit the box (the box shows its start and an ellipsis)."""
        return self._full_height > MAX_HEIGHT + 0.5

    def box(self) -> QRectF:
        return QRectF(0, 0, COMMENT_WIDTH, self._height)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        return self.box().adjusted(-4, -4, 4, 4)

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        path.addRect(self.box())
        return path

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: Optional[QWidget] = None) -> None:
        painter.setRenderHint(QPainter.Antialiasing)
        rect = self.box()
        if self.isSelected():
            halo = QPainterPath()
            halo.addRoundedRect(rect.adjusted(-4, -4, 4, 4), 4, 4)
            painter.fillPath(halo, style.SELECTED_COLOR.lighter(185))
        fold = 12.0  # the sticky note's turned-down corner (bottom right)
        body = QPainterPath(QPointF(0, 0))
        for point in ((rect.right(), 0), (rect.right(), rect.bottom() - fold), (rect.right() - fold, rect.bottom()),
                      (0, rect.bottom())):
            body.lineTo(QPointF(*point))
        body.closeSubpath()
        painter.fillPath(body, FILL)
        corner = QPainterPath(QPointF(rect.right(), rect.bottom() - fold))
        corner.lineTo(QPointF(rect.right() - fold, rect.bottom() - fold))
        corner.lineTo(QPointF(rect.right() - fold, rect.bottom()))
        corner.closeSubpath()
        painter.fillPath(corner, FOLD)
        painter.setPen(QPen(style.SELECTED_COLOR, 2.0) if self.isSelected() else QPen(BORDER, 1.0))
        painter.drawPath(body)
        inner = rect.adjusted(PADDING, PADDING - 2, -PADDING, -PADDING)
        if self.clipped:  # whole lines only, the last row left for the ellipsis
            line = QFontMetricsF(self._doc.defaultFont()).lineSpacing()
            inner.setHeight(max(line, (inner.height() - 12) // line * line))
        painter.save()
        painter.setClipRect(inner)
        painter.translate(inner.topLeft())
        if not self.text:
            painter.setOpacity(0.6)
        self._doc.drawContents(painter, QRectF(0, 0, inner.width(), inner.height()))
        painter.restore()
        if self.clipped:
            painter.setFont(style.font(9.0, True))
            painter.setPen(style.TEXT_MUTED)
            painter.drawText(QRectF(0, rect.bottom() - 16, rect.right() - fold - 2, 16), Qt.AlignRight | Qt.AlignVCenter,
                             "…")


class CommentNotes:
    """The notes of one scene, one item per comment of the shown network (kept by index)."""

    def __init__(self) -> None:
        self.items: List[CommentItem] = []

    def sync(self, scene: QGraphicsScene, comments: Sequence[Any], layer_positions: Dict[str, Position]) -> None:
        """Show ``comments`` at their positions (or beside the layers when they have none)."""
        if len(self.items) != len(comments):  # indices moved: a kept selection could point at another note
            for item in self.items:
                item.setSelected(False)
        while len(self.items) > len(comments):
            item = self.items.pop()
            if item.scene() is scene:
                scene.removeItem(item)
        while len(self.items) < len(comments):
            item = CommentItem(len(self.items))
            self.items.append(item)
            scene.addItem(item)
        for item, comment, (x, y) in zip(self.items, comments, default_positions(comments, layer_positions)):
            item.set_text(str(comment.text))
            if (item.pos().x(), item.pos().y()) != (x, y) and scene.mouseGrabberItem() is not item:
                item.setPos(x, y)

    def rect(self) -> QRectF:
        """The notes' area in scene coordinates (empty without notes)."""
        rect = QRectF()
        for item in self.items:
            rect = rect.united(item.sceneBoundingRect())
        return rect
