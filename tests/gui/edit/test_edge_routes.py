"""Routes of long edges around node boxes (console_app/edit/edge_routes.py, Qt-free): hand-placed boxes in
rows; every piece of a route stays out of every box but the edge's own ends, with the router's margin."""
from __future__ import annotations

from nnconsole.app.edit.edge_routes import MARGIN, Obstacles

W, H = 220.0, 52.0


def box(x: float, y: float):
    return (x, y, x + W, y + H)


def clear_of(points, boxes, ends) -> bool:
    """No piece of the polyline (all horizontal or vertical) enters a box other than ``ends``."""
    for (ax, ay), (bx, by) in zip(points, points[1:]):
        assert ax == bx or ay == by, "pieces are horizontal or vertical"
        for name, (left, top, right, bottom) in boxes.items():
            if name in ends:
                continue
            if min(ax, bx) < right and max(ax, bx) > left and min(ay, by) < bottom and max(ay, by) > top:
                return False
    return True


def test_a_skip_edge_goes_beside_the_column_it_jumps():
    boxes = {"a": box(0, 0), "b": box(0, 100), "c": box(0, 200), "d": box(0, 300), "e": box(260, 100)}
    obstacles = Obstacles(boxes)
    start, end = (110.0, 57.0), (73.0, 295.0)
    points = obstacles.route("a", "d", start, end)
    assert points[0] == start and points[-1] == end
    assert clear_of(points, boxes, {"a", "d"})
    # beside b and c by the margin, in the gap left of the column (e takes the right)
    xs = {x for x, _ in points[1:-1]}
    assert -MARGIN in xs


def test_an_edge_to_the_next_row_is_the_plain_curve():
    obstacles = Obstacles({"a": box(0, 0), "b": box(0, 100)})
    assert obstacles.route("a", "b", (110.0, 57.0), (110.0, 95.0)) is None


def test_a_loop_back_up_goes_around_every_box_between():
    boxes = {"in": box(0, 0), "cat": box(0, 100), "f": box(0, 200), "delay": box(0, 300), "side": box(-260, 200)}
    obstacles = Obstacles(boxes)
    points = obstacles.route("delay", "cat", (110.0, 357.0), (165.0, 95.0))
    assert points is not None and clear_of(points, boxes, {"delay", "cat"})
    assert max(y for _, y in points) > 352  # down into the gap under its source first
    assert points[-2][1] < 100  # and into the pin from above


def test_free_columns_between_boxes_of_a_row_are_used():
    boxes = {"a": box(0, 0), "left": box(-300, 100), "right": box(300, 100), "b": box(0, 200)}
    obstacles = Obstacles(boxes)
    points = obstacles.route("a", "b", (110.0, 57.0), (110.0, 195.0))
    assert points is not None and clear_of(points, boxes, {"a", "b"})
    assert {x for x, _ in points} == {110.0}  # the column under a is free: straight down
