"""Repeat blocks on the EDIT canvas: a tinted frame behind the layers of each RepeatStart/RepeatEnd block,
labelled with its count (``x3``), the parameters of all its repetitions and its output shape.

The blocks come from the engine (``nnconsole.engine.network.repeat_blocks``: pairing through the graph, counts
already multiplied by shape inference); Times itself is edited in the RepeatStart's property form like
any other parameter. The frames are rebuilt on every ``NetworkScene.sync`` and follow dragged nodes.
"""
from __future__ import annotations

from typing import Any, Dict, List

from PySide6.QtCore import QRectF
from PySide6.QtGui import QBrush, QColor, QPen
from PySide6.QtWidgets import QGraphicsRectItem, QGraphicsScene, QGraphicsSimpleTextItem

from nnconsole.app.edit import style
from nnconsole.app.widgets.rich_text import plain_tooltip
from nnconsole.engine.layers.groups import GROUP_COLORS

MARGIN_X = 10.0  # frame beside the nodes (each block nested inside adds it again)
MARGIN_Y = 5.0  # above and below: auto-laid-out layers are close together


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

    def sync(self, scene: QGraphicsScene, network: Any, info: Any) -> None:
        """Recreate the frames for ``network``'s blocks (none when it has no repeat layers)."""
        from nnconsole.engine.network.repeat_blocks import block_totals, find_blocks, has_repeats

        for item in list(self.frames.values()) + list(self.labels.values()):
            if item.scene() is scene:
                scene.removeItem(item)
        self.frames, self.labels, self._members, self._depth = {}, {}, {}, {}
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
            frame.setToolTip(plain_tooltip(f"repeat block '{b.start}' … '{b.end}'"))
            scene.addItem(frame)
            times, params, shape = totals.get(b.start, (b.times, 0, None))
            named = network.layer(b.start).params.get("times") if b.start in network.names() else None
            label = QGraphicsSimpleTextItem(block_label(f"{named}={times}" if isinstance(named, str) else times,
                                                        params, shape))  # a count by name: 'xn=3'

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
            box = QRectF(box.left() - grow, box.top() - MARGIN_Y, box.width() + 2 * grow, box.height() + 2 * MARGIN_Y)
            frame.setRect(box)
            self.labels[start].setPos(box.right() + 6, box.top())  # beside the frame: layers sit above and below
