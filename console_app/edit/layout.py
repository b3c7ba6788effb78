"""Where nodes go on the canvas: the top-to-bottom auto-layout and free-spot search (Qt-free).

Positions are the top-left corners of node boxes in scene units, as stored in ``Layer.position``.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

from nnconsole.engine.project.model import Network
from nnconsole.engine.network.layer_order import topological_order

NODE_WIDTH = 220.0
NODE_HEIGHT = 52.0
COLUMN = 260.0  # horizontal distance between node origins
ROW = 80.0  # vertical distance between node origins (the templates' spacing)

Position = Tuple[float, float]


def _ranks(network: Network) -> Tuple[List[str], Dict[str, int]]:
    """Longest-path layer index per node; sources sit one row above their first consumer."""
    order, cycles = topological_order(network)
    placed = set(order)
    order += [layer.name for layer in network.layers if layer.name not in placed]
    by_name = {layer.name: layer for layer in network.layers}
    rank: Dict[str, int] = {}
    for name in order:
        parents = [rank[s] for s in by_name[name].inputs if s in rank]
        rank[name] = max(parents) + 1 if parents else 0
    for name in order:  # pull inputs (e.g. the label Input) down next to what reads them
        if not by_name[name].inputs:
            consumers = [rank[layer.name] for layer in network.consumers(name) if layer.name in rank]
            if consumers:
                rank[name] = max(0, min(consumers) - 1)
    return order, rank


def auto_layout(network: Network, origin: Position = (0.0, 0.0)) -> Dict[str, Position]:
    """Layered top-to-bottom positions: the main chain in one straight column, branches beside it.

    Each node wants the x of its first input (so chains stay straight); nodes of one row that
    want the same spot are pushed right by one column.
    """
    order, rank = _ranks(network)
    by_name = {layer.name: layer for layer in network.layers}
    rows: Dict[int, List[str]] = {}
    for name in order:
        rows.setdefault(rank[name], []).append(name)
    x: Dict[str, float] = {}
    for r in sorted(rows):
        wanted = []
        for i, name in enumerate(rows[r]):
            inputs = [s for s in by_name[name].inputs if s in x]
            if inputs:
                want = x[inputs[0]]
            else:  # a source: beside the nodes that read it, if they were placed (rarely), else left
                want = 0.0
            wanted.append((want, 0 if inputs else 1, i, name))
        taken: List[float] = []
        for want, _, _, name in sorted(wanted):
            spot = want
            while any(abs(spot - t) < COLUMN - 1e-6 for t in taken):
                spot += COLUMN
            taken.append(spot)
            x[name] = spot
    ox, oy = origin
    return {name: (ox + x[name], oy + rank[name] * ROW) for name in order}


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
