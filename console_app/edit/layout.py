"""Where nodes go on the canvas: the top-to-bottom auto-layout and free-spot search (Qt-free).

Positions are the top-left corners of node boxes in scene units, as stored in ``Layer.position``.
"""
from __future__ import annotations

from typing import Dict, Iterable, Optional, Tuple

from nnconsole.engine.project.model import Network
from nnconsole.engine.network import layered_layout as layered

# one place for the canvas's geometry: the layered layout's (the importers lay networks out with it too)
NODE_WIDTH, NODE_HEIGHT = layered.NODE_WIDTH, layered.NODE_HEIGHT
COLUMN = NODE_WIDTH + layered.GAP_X  # horizontal distance between node origins
ROW = 80.0  # vertical distance between node origins where the editor inserts (the templates' spacing)
AUTO_ROW = layered.ROW_STEP  # ... and in the layered auto-layout (room for block labels and edges)

Position = Tuple[float, float]


def auto_layout(network: Network, origin: Position = (0.0, 0.0)) -> Dict[str, Position]:
    """Layered top-to-bottom positions (``nnconsole.engine.network.layered_layout``): the main chain in one
    straight column, branches and skip connections beside it, boxes never touching, long edges given room."""
    return layered.layered_layout(network, origin).positions


def overlaps(a: Position, b: Position) -> bool:
    """True when node boxes at ``a`` and ``b`` would overlap."""
    return abs(a[0] - b[0]) < NODE_WIDTH and abs(a[1] - b[1]) < NODE_HEIGHT


def free_position(wanted: Position, occupied: Iterable[Position]) -> Position:
    """``wanted`` or, when a node is there, the nearest spot one column at a time to the right."""
    taken = list(occupied)
    x, y = wanted
    while any(overlaps((x, y), p) for p in taken):
        x += COLUMN
    return (float(x), float(y))


def below(positions: Dict[str, Position]) -> Position:
    """A spot under everything already placed (left-aligned with the leftmost node)."""
    if not positions:
        return (0.0, 0.0)
    xs = [p[0] for p in positions.values()]
    ys = [p[1] for p in positions.values()]
    return (min(xs), max(ys) + ROW)


def effective_positions(network: Network) -> Dict[str, Position]:
    """Every layer's position: the stored one, or where auto-layout would put a layer without one."""
    stored = {layer.name: (float(layer.position[0]), float(layer.position[1]))
              for layer in network.layers if layer.position is not None and len(layer.position) == 2}
    if len(stored) == len(network.layers):
        return stored
    computed = auto_layout(network)
    missing = [layer.name for layer in network.layers if layer.name not in stored]
    if not stored:
        return {n: computed[n] for n in missing}
    out = dict(stored)
    for name in missing:
        out[name] = free_position(computed.get(name, below(out)), out.values())
    return out


def snap(value: float, step: float = 10.0) -> float:
    """Round a coordinate to the grid so hand-placed nodes line up."""
    return float(round(value / step) * step)


def bounding_box(positions: Dict[str, Position]) -> Optional[Tuple[float, float, float, float]]:
    """(left, top, right, bottom) of the node boxes, or None for an empty network."""
    if not positions:
        return None
    xs = [p[0] for p in positions.values()]
    ys = [p[1] for p in positions.values()]
    return (min(xs), min(ys), max(xs) + NODE_WIDTH, max(ys) + NODE_HEIGHT)
