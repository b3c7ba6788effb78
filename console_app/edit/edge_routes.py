"""Routes of long edges around node boxes (Qt-free), so a skip connection never runs through a layer.

The canvas is laid out in rows (``nnconsole.engine.network.layered_layout``): boxes that overlap vertically
form a band, and between two bands lies a gap no box enters. An edge between adjacent bands is the plain
S-curve, which stays inside the gap. An edge that jumps over bands is routed like the layout's dummy nodes:
it runs down from its output pin into the gap below, then, band by band, along a gap to a free column of
the next band (outside every box by ``MARGIN``, as near as possible to where it is) and down through it, and
finally along the gap above its target to the input pin. Horizontal runs are therefore always inside gaps and
vertical runs inside free columns: the route crosses no box. The layout leaves such columns on purpose (a
dummy node's slot); a hand-placed network gets the nearest free ones.

The bands are computed once per arrangement of the nodes (``Obstacles``) and reused by every edge.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

Rect = Tuple[float, float, float, float]  # left, top, right, bottom
Point = Tuple[float, float]

MARGIN = 16.0  # how far a routed edge keeps from a box it passes
CORNER = 10.0  # radius of the rounded bends (used by edge_item)
OUTSIDE = 24.0  # how far above the first row / below the last row an edge back up runs


@dataclass
class Band:
    """Boxes that overlap vertically: one row of the layout."""

    top: float
    bottom: float
    spans: List[Tuple[float, float]] = field(default_factory=list)  # (left, right) of each box, sorted

    def free_x(self, wanted: float, toward: float) -> float:
        """The x nearest ``wanted`` (ties: nearer ``toward``) that keeps MARGIN from every box of the band."""
        blocked: List[Tuple[float, float]] = []
        for left, right in self.spans:
            lo, hi = left - MARGIN, right + MARGIN
            if blocked and lo <= blocked[-1][1]:
                blocked[-1] = (blocked[-1][0], max(blocked[-1][1], hi))
            else:
                blocked.append((lo, hi))
        for lo, hi in blocked:
            if lo < wanted < hi:
                left_d, right_d = wanted - lo, hi - wanted
                if abs(left_d - right_d) < 1e-6:
                    return lo if toward < wanted else hi
                return lo if left_d < right_d else hi
        return wanted


class Obstacles:
    """The node boxes of a scene (by layer name) grouped into bands, top to bottom."""

    def __init__(self, boxes: Dict[str, Rect]) -> None:
        self.boxes = dict(boxes)
        self.bands: List[Band] = []
        self._band_of: Dict[str, int] = {}
        for name, (left, top, right, bottom) in sorted(self.boxes.items(), key=lambda item: item[1][1]):
            if not self.bands or top > self.bands[-1].bottom:
                self.bands.append(Band(top, bottom))
            band = self.bands[-1]
            band.bottom = max(band.bottom, bottom)
            band.spans.append((left, right))
            self._band_of[name] = len(self.bands) - 1
        for band in self.bands:
            band.spans.sort()
        self._tops = [band.top for band in self.bands]

    def band_index(self, name: str) -> Optional[int]:
        return self._band_of.get(name)

    def gap_y(self, above: int) -> float:
        """The middle of the gap under band ``above`` (-1: above the first band; the last: under it)."""
        if above < 0:
            return self.bands[0].top - OUTSIDE
        if above >= len(self.bands) - 1:
            return self.bands[-1].bottom + OUTSIDE
        return (self.bands[above].bottom + self.bands[above + 1].top) / 2

    def route(self, source: str, target: str, start: Point, end: Point) -> Optional[List[Point]]:
        """The bends of the edge ``source`` -> ``target`` from ``start`` (below the source's output pin) to
        ``end`` (above the target's input pin), or None where the plain curve crosses no band (the target is
        in the next band down). An edge back up (a recurrent loop) goes down into the gap under its source,
        up through free columns of every band to the gap over its target, and down into the pin."""
        first, last = self.band_index(source), self.band_index(target)
        if first is None or last is None or last == first + 1:
            return None
        points: List[Point] = [start]
        x = start[0]
        if last > first + 1:
            for k in range(first + 1, last):
                y_above = self.gap_y(k - 1)
                x_new = self.bands[k].free_x(x, end[0])
                points += [(x, y_above), (x_new, y_above)]
                x = x_new
        else:
            y = self.gap_y(first)
            for k in range(first, last - 1, -1):
                x_new = self.bands[k].free_x(x, end[0])
                points += [(x, y), (x_new, y)]
                x, y = x_new, self.gap_y(k - 1)
        y_last = self.gap_y(last - 1)
        points += [(x, y_last), (end[0], y_last), end]
        return _simplified(points)

    def band_at(self, y: float) -> Optional[Band]:
        """The band whose rows hold ``y`` (for tests and hit checks)."""
        k = bisect_right(self._tops, y) - 1
        if 0 <= k < len(self.bands) and self.bands[k].bottom >= y:
            return self.bands[k]
        return None


def _simplified(points: List[Point]) -> List[Point]:
    """Without repeated points and without middle points of straight runs."""
    out: List[Point] = []
    for p in points:
        if out and abs(out[-1][0] - p[0]) < 1e-6 and abs(out[-1][1] - p[1]) < 1e-6:
            continue
        if len(out) >= 2:
            (ax, ay), (bx, by) = out[-2], out[-1]
            if (abs(ax - bx) < 1e-6 and abs(bx - p[0]) < 1e-6) or (abs(ay - by) < 1e-6 and abs(by - p[1]) < 1e-6):
                out[-1] = p
                continue
        out.append(p)
    return out
