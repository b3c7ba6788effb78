"""Repeat blocks on the EDIT canvas: a tinted frame behind the layers of each RepeatStart/RepeatEnd block,
labelled with its count (``x3``), the parameters of all its repetitions and its output shape. The label sits
inside the frame, in a strip above the block's first layer (elided to the frame's width, whole in the tooltip),
so it never reaches into a column beside the block; the layered layout keeps other columns out of the frame.

The blocks come from the engine (``nnconsole.engine.network.repeat_blocks``: pairing through the graph, counts
already multiplied by shape inference); Times itself is edited in the RepeatStart's property form like
any other parameter. The frames are rebuilt on every ``NetworkScene.sync`` and follow dragged nodes.
"""
from __future__ import annotations

from typing import Any, Dict, List

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFontMetrics, QPen
from PySide6.QtWidgets import QGraphicsRectItem, QGraphicsScene, QGraphicsSimpleTextItem

from nnconsole.app.edit import style
from nnconsole.app.widgets.rich_text import plain_tooltip
from nnconsole.engine.layers.groups import GROUP_COLORS

MARGIN_X = 10.0  # frame beside the nodes (each block nested inside adds it again)
MARGIN_Y = 5.0  # above and below: auto-laid-out layers are close together
LABEL_PAD = 3.0  # around the label in its strip at the top of the frame


def block_label(times: Any, params: int, shape: Any) -> str:
    """'x3 · 2.39k params · out 4×4×4': what a block's frame says (parameters of every repetition)."""
    text = f"x{times} · {style.fmt_count(params)} params"
    if shape is not None:
        text += f" · out {style.fmt_dims([int(s) for s in shape])}"
    return text


class RepeatFrames:
    """The frames of one scene, keyed by RepeatStart name."""

    def __init__(self) -> None:
        self.frames: Dict[str, QGraphicsRectItem] = {}
        self.labels: Dict[str, QGraphicsSimpleTextItem] = {}
        self._members: Dict[str, List[str]] = {}
        self._depth: Dict[str, int] = {}
        self._texts: Dict[str, str] = {}  # each label's whole text (the label itself may be elided)

    def sync(self, scene: QGraphicsScene, network: Any, info: Any) -> None:
        """Recreate the frames for ``network``'s blocks (none when it has no repeat layers)."""
        from nnconsole.engine.network.repeat_blocks import block_totals, find_blocks, has_repeats

        for item in list(self.frames.values()) + list(self.labels.values()):
            if item.scene() is scene:
                scene.removeItem(item)
        self.frames, self.labels, self._members, self._depth, self._texts = {}, {}, {}, {}, {}
        if info is None or not has_repeats(network.layers):
            return
        blocks, _problems = find_blocks(network.layers)
        totals = block_totals(network, info)
        fill, accent = GROUP_COLORS["LoopControl"]
        for b in blocks:
            depth = self._depth_of(b, blocks)
            below = [self._depth_of(o, blocks) - depth for o in blocks if b.start in self._ancestors(o, blocks)]
            self._depth[b.start] = max(below, default=0)  # levels of blocks inside this one
            self._members[b.start] = [b.start] + list(b.body) + [b.end]
            frame = QGraphicsRectItem()
            color = QColor(fill)
            color.setAlpha(110)
            frame.setBrush(QBrush(color))
            frame.setPen(QPen(QColor(accent), 1.5))
            frame.setZValue(-10 + depth)  # behind the nodes and edges, nested frames above their parent
            times, params, shape = totals.get(b.start, (b.times, 0, None))
            named = network.layer(b.start).params.get("times") if b.start in network.names() else None
            text = block_label(f"{named}={times}" if isinstance(named, str) else times, params, shape)  # 'xn=3'
            frame.setToolTip(plain_tooltip(f"repeat block '{b.start}' … '{b.end}': {text}"))
            scene.addItem(frame)
            label = QGraphicsSimpleTextItem(text)
            label.setToolTip(frame.toolTip())
            self._texts[b.start] = text
            label.setFont(style.font(8.5, bold=True))
            label.setBrush(QBrush(QColor(accent).darker(160)))
            label.setZValue(-10 + depth)
            scene.addItem(label)
            self.frames[b.start] = frame
            self.labels[b.start] = label
        self.follow(scene)

    @staticmethod
    def _ancestors(block: Any, blocks: List[Any]) -> List[str]:
        out, parent = [], block.parent
        while parent and parent not in out:
            out.append(parent)
            parent = next((o.parent for o in blocks if o.start == parent), "")
        return out

    def _depth_of(self, block: Any, blocks: List[Any]) -> int:
        return len(self._ancestors(block, blocks))

    def follow(self, scene: Any) -> None:
        """Fit each frame to its layers' nodes where they are now (called after nodes move)."""
        for start, frame in self.frames.items():
            rects = [scene.node(n).sceneBoundingRect() for n in self._members[start] if scene.node(n) is not None]
            if not rects:
                continue
            box = rects[0]
            for r in rects[1:]:
                box = box.united(r)
            grow = MARGIN_X * (1 + self._depth[start])  # outer frames leave room for the inner ones
            label = self.labels[start]
            metrics = QFontMetrics(label.font())
            strip = metrics.height() + 2 * LABEL_PAD  # the label's strip above the first layer
            box = QRectF(box.left() - grow, box.top() - MARGIN_Y - strip, box.width() + 2 * grow,
                         box.height() + 2 * MARGIN_Y + strip)
            frame.setRect(box)
            room = int(box.width() - 4 * LABEL_PAD)
            label.setText(metrics.elidedText(self._texts[start], Qt.ElideRight, max(0, room)))
            label.setPos(box.left() + 2 * LABEL_PAD, box.top() + LABEL_PAD)  # inside: never over another column
