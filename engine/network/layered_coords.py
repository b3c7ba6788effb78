"""Horizontal coordinates of a layered graph whose layer orders are fixed: boxes never closer than a gap.

Sugiyama's priority method, which keeps a network's main chain straight: sweeping down (then up, a few
times), each node of a layer wants the median x of its neighbours in the layer just placed and moves there
as far as the nodes already moved with a higher priority let it; it pushes lower-priority nodes aside, and
the order of a layer never changes. A layer with many neighbours has a high priority; a dummy node (a slot
of a long edge) has less than a real node with the same links, so the main chain stays straight and the
skip connection bends beside it.

Afterwards each repeat block's members are separated from the nodes beside them (``separate_blocks``): the
canvas draws a frame around a block, and that frame must not take in another column's node or edge.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

SWEEPS = 6
FRAME_MARGIN = 12.0  # room a block frame takes beside its members, per nesting level


def _priority(node: str, neighbours: Sequence[str], dummies: Set[str]) -> float:
    return 10.0 * len(neighbours) + (0.0 if node in dummies else 5.0)


def _median_centre(neighbours: Sequence[str], x: Dict[str, float], width: Dict[str, float]) -> Optional[float]:
    """The lower median of the neighbours' centres (the first input's side wins a tie), or None."""
    centres = sorted(x[n] + width[n] / 2 for n in neighbours if n in x)
    if not centres:
        return None
    return centres[(len(centres) - 1) // 2]


def _place_layer(layer: List[str], x: Dict[str, float], width: Dict[str, float], gap: float,
                 wanted: Dict[str, float], priority: Dict[str, float]) -> None:
    """Move the nodes of one layer to their wanted x (highest priority first), never past a node already
    moved, pushing the others aside; the layer keeps its order and its gaps."""
    fixed: Set[int] = set()
    for i in sorted(range(len(layer)), key=lambda k: (-priority[layer[k]], k)):
        name = layer[i]
        if name not in wanted:
            fixed.add(i)
            continue
        target = wanted[name]
        lo, hi = float("-inf"), float("inf")
        span = 0.0
        for j in range(i - 1, -1, -1):  # the nearest fixed node on the left bounds how far left it goes
            span += width[layer[j]] + gap
            if j in fixed:
                lo = x[layer[j]] + span
                break
        span = width[name] + gap
        for j in range(i + 1, len(layer)):
            if j in fixed:
                hi = x[layer[j]] - span
                break
            span += width[layer[j]] + gap
        x[name] = min(max(target, lo), hi)
        for j in range(i - 1, -1, -1):  # push the free nodes on the left out of the way
            if j in fixed:
                break
            x[layer[j]] = min(x[layer[j]], x[layer[j + 1]] - gap - width[layer[j]])
        for j in range(i + 1, len(layer)):
            if j in fixed:
                break
            x[layer[j]] = max(x[layer[j]], x[layer[j - 1]] + width[layer[j - 1]] + gap)
        fixed.add(i)


def assign_x(layers: List[List[str]], up: Dict[str, List[str]], down: Dict[str, List[str]],
             width: Dict[str, float], dummies: Set[str], gap: float,
             block_of: Optional[Dict[str, Tuple[str, ...]]] = None) -> Dict[str, float]:
    """Left x of every node: each layer packed left to right, then priority sweeps, then blocks separated."""
    x: Dict[str, float] = {}
    for layer in layers:
        left = 0.0
        for n in layer:
            x[n] = left
            left += width[n] + gap
    for sweep in range(SWEEPS):
        downward = sweep % 2 == 0
        indices = range(1, len(layers)) if downward else range(len(layers) - 2, -1, -1)
        for r in indices:
            neighbours = up if downward else down
            wanted, priority = {}, {}
            for n in layers[r]:
                priority[n] = _priority(n, neighbours[n], dummies)
                centre = _median_centre(neighbours[n], x, width)
                if centre is not None:
                    wanted[n] = centre - width[n] / 2
            _place_layer(layers[r], x, width, gap, wanted, priority)
    if block_of:
        separate_blocks(layers, x, width, gap, block_of)
    return x


def _shift_layer_part(layer: List[str], x: Dict[str, float], start: int, stop: int, by: float) -> None:
    for n in layer[start:stop]:
        x[n] += by


def separate_blocks(layers: List[List[str]], x: Dict[str, float], width: Dict[str, float], gap: float,
                    block_of: Dict[str, Tuple[str, ...]]) -> None:
    """Push the nodes beside each repeat block (innermost blocks first) out of the block's frame: in every
    layer the block spans, what lies left of its members ends a gap and a frame margin left of the
    block's leftmost member, and likewise on the right. Members are contiguous in each layer
    (``layered_layout.order_layers`` keeps them so)."""
    blocks = sorted({path[k]: k for path in block_of.values() for k in range(len(path))}.items(),
                    key=lambda item: -item[1])
    for block, depth in blocks:
        inside = [[i for i, n in enumerate(layer) if block in block_of.get(n, ())] for layer in layers]
        rows = [r for r, members in enumerate(inside) if members]
        if not rows:
            continue
        levels = 1 + max((len(block_of.get(n, ())) - depth - 1 for r in rows for n in
                          (layers[r][i] for i in inside[r])), default=0)
        margin = gap + FRAME_MARGIN * (levels + 1)
        for _ in range(3):  # a push on one side can widen the span seen by another layer
            left = min(x[layers[r][inside[r][0]]] for r in rows)
            right = max(x[layers[r][inside[r][-1]]] + width[layers[r][inside[r][-1]]] for r in rows)
            moved = False
            for r in rows:
                layer, first, last = layers[r], inside[r][0], inside[r][-1]
                if first > 0:
                    over = x[layer[first - 1]] + width[layer[first - 1]] - (left - margin)
                    if over > 1e-6:
                        _shift_layer_part(layer, x, 0, first, -over)
                        moved = True
                if last + 1 < len(layer):
                    over = (right + margin) - x[layer[last + 1]]
                    if over > 1e-6:
                        _shift_layer_part(layer, x, last + 1, len(layer), over)
                        moved = True
            if not moved:
                break
