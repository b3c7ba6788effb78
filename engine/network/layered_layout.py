"""A layered (Sugiyama) layout of a network's graph, top to bottom, in pure Python.

Why: imported NNC projects and hand-built ones need an arrangement where node boxes never touch,
pins never overlap and a long edge (a skip connection) has free room to pass beside the nodes it
jumps over. The four classic steps, each small enough to follow:

1. **Layers** by longest path from the sources (``ranks``); an input with no producers (a loss's target
   ``Input``) is pulled down beside its first reader, so it does not sit at the top far away.
2. **Dummy nodes** split every edge that spans more than one layer, one per layer passed (``LayeredGraph``):
   they take a slot in the layer's order and a (narrow) width, so the coordinates leave a gap there,
   which is where the edge is drawn.
3. **Crossing reduction** by barycenter sweeps (``order_layers``): down and up, each layer sorted by the
   mean position of its neighbours in the layer just fixed; the order with the fewest crossings is kept.
   The layers of one repeat block are kept side by side in each layer (``blocks``), so its frame can be
   drawn around them without taking in a node of another column.
4. **Coordinates** with the node widths and a gap (``layered_coords``): boxes never touch.

Cycles (a graph a user is still editing) never stop it: an edge that points up or along a layer is left
out of the ordering and the dummies. Sizes are the EDIT canvas's node box, ``NODE_WIDTH`` x ``NODE_HEIGHT``
(scene units; positions are the box's top-left corner, as stored in ``Layer.position``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from nnconsole.engine.network.layer_order import topological_order
from nnconsole.engine.network.layered_coords import assign_x
from nnconsole.engine.network.repeat_blocks import find_blocks
from nnconsole.engine.project.model import Network

NODE_WIDTH = 220.0  # the canvas's node box
NODE_HEIGHT = 52.0
GAP_X = 40.0  # free space between two boxes of one layer (two columns: COLUMN = NODE_WIDTH + GAP_X)
ROW_STEP = 100.0  # distance between two layers' tops: NODE_HEIGHT + room for pins, edges and block labels
DUMMY_WIDTH = 16.0  # the slot a long edge takes in each layer it passes
SWEEPS = 12  # barycenter sweeps (down + up) tried before the best order is kept

Position = Tuple[float, float]


def ranks(network: Network) -> Tuple[List[str], Dict[str, int]]:
    """(topological order, layer index per layer name): longest path from the sources; a source that
    others read is moved down to just above its first reader."""
    order, _cycles = topological_order(network)
    placed = set(order)
    order += [layer.name for layer in network.layers if layer.name not in placed]
    by_name = {layer.name: layer for layer in network.layers}
    rank: Dict[str, int] = {}
    for name in order:
        parents = [rank[s] for s in by_name[name].inputs if s in rank]
        rank[name] = max(parents) + 1 if parents else 0
    for name in order:
        if not by_name[name].inputs:
            readers = [rank[layer.name] for layer in network.consumers(name) if layer.name in rank]
            if readers:
                rank[name] = max(0, min(readers) - 1)
    return order, rank


@dataclass
class LayeredGraph:
    """Layers and dummies by layer index, with the edges between adjacent layers.

    ``up[n]``/``down[n]``: a node's neighbours in the layer above / below (dummies included);
    ``chains[(source, target, pin)]``: the dummies of one long edge, top to bottom; ``width[n]``: box width."""

    layers: List[List[str]] = field(default_factory=list)
    up: Dict[str, List[str]] = field(default_factory=dict)
    down: Dict[str, List[str]] = field(default_factory=dict)
    width: Dict[str, float] = field(default_factory=dict)
    dummies: Dict[str, Tuple[str, str]] = field(default_factory=dict)  # dummy -> (source, target) of its edge
    chains: Dict[Tuple[str, str, int], List[str]] = field(default_factory=dict)

    def add(self, name: str, layer: int, width: float) -> None:
        while len(self.layers) <= layer:
            self.layers.append([])
        self.layers[layer].append(name)
        self.up.setdefault(name, [])
        self.down.setdefault(name, [])
        self.width[name] = width

    def link(self, a: str, b: str) -> None:
        self.down[a].append(b)
        self.up[b].append(a)


def build_graph(network: Network, node_width: float = NODE_WIDTH) -> LayeredGraph:
    """The layered graph of ``network``: its layers in topological order per layer, long edges split."""
    order, rank = ranks(network)
    by_name = {layer.name: layer for layer in network.layers}
    graph = LayeredGraph()
    for name in order:
        graph.add(name, rank[name], node_width)
    for name in order:
        for pin, source in enumerate(by_name[name].inputs):
            if source not in rank or rank[source] >= rank[name]:
                continue  # a missing source or a back edge: drawn, but not laid out
            previous, chain = source, []
            for r in range(rank[source] + 1, rank[name]):
                dummy = f"\0{source}\0{name}\0{pin}\0{r}"
                graph.add(dummy, r, DUMMY_WIDTH)
                graph.dummies[dummy] = (source, name)
                graph.link(previous, dummy)
                chain.append(dummy)
                previous = dummy
            graph.link(previous, name)
            if chain:
                graph.chains[(source, name, pin)] = chain
    return graph


def _crossings(upper: Sequence[str], lower: Sequence[str], down: Dict[str, List[str]]) -> int:
    """Edge crossings between two adjacent layers."""
    at = {n: i for i, n in enumerate(lower)}
    ends = [(i, at[b]) for i, a in enumerate(upper) for b in down[a] if b in at]
    return sum(1 for k, (a1, b1) in enumerate(ends) for a2, b2 in ends[k + 1:] if (a1 - a2) * (b1 - b2) < 0)


def _total_crossings(layers: List[List[str]], down: Dict[str, List[str]]) -> int:
    return sum(_crossings(layers[r], layers[r + 1], down) for r in range(len(layers) - 1))


def _grouped(order: List[str], block_of: Dict[str, Tuple[str, ...]], depth: int = 0) -> List[str]:
    """``order`` with the members of each repeat block next to each other (at their first member's place),
    nested blocks likewise inside their parent."""
    groups: Dict[object, List[str]] = {}
    keys: List[object] = []
    for n in order:
        path = block_of.get(n, ())
        key = path[depth] if len(path) > depth else ("\0node", n)
        if key not in groups:
            groups[key] = []
            keys.append(key)
        groups[key].append(n)
    out: List[str] = []
    for key in keys:
        members = groups[key]
        out += members if isinstance(key, tuple) else _grouped(members, block_of, depth + 1)
    return out


def order_layers(graph: LayeredGraph, block_of: Optional[Dict[str, Tuple[str, ...]]] = None) -> None:
    """Reorder each layer of ``graph`` in place by barycenter sweeps, keeping the order with fewest crossings."""
    block_of = block_of or {}
    layers = [_grouped(list(layer), block_of) for layer in graph.layers]
    best, best_count = [list(layer) for layer in layers], _total_crossings(layers, graph.down)
    for sweep in range(SWEEPS):
        downward = sweep % 2 == 0
        indices = range(1, len(layers)) if downward else range(len(layers) - 2, -1, -1)
        for r in indices:
            fixed = layers[r - 1] if downward else layers[r + 1]
            at = {n: i for i, n in enumerate(fixed)}
            neighbours = graph.up if downward else graph.down

            def barycenter(item: Tuple[int, str]) -> float:
                i, n = item
                seen = [at[m] for m in neighbours[n] if m in at]
                return sum(seen) / len(seen) if seen else float(i) * len(fixed) / max(1, len(layers[r]))

            ranked = sorted(enumerate(layers[r]), key=barycenter)  # stable: ties keep their order
            layers[r] = _grouped([n for _, n in ranked], block_of)
        count = _total_crossings(layers, graph.down)
        if count < best_count:
            best, best_count = [list(layer) for layer in layers], count
        if best_count == 0:
            break
    graph.layers = best


def block_membership(network: Network, graph: LayeredGraph) -> Dict[str, Tuple[str, ...]]:
    """Node (layer or dummy) -> the repeat blocks around it, outermost first (RepeatStart names); a dummy
    belongs to the blocks both ends of its edge are in."""
    from_layers: Dict[str, Tuple[str, ...]] = {}
    if any(layer.type in ("RepeatStart", "RepeatEnd") for layer in network.layers):
        blocks, _problems = find_blocks(network.layers)
        parents = {b.start: b.parent for b in blocks}
        for b in blocks:
            path: List[str] = []
            current = b.start
            while current and current not in path:
                path.insert(0, current)
                current = parents.get(current, "")
            for name in [b.start, *b.body, b.end]:
                if len(path) > len(from_layers.get(name, ())):
                    from_layers[name] = tuple(path)
    out = dict(from_layers)
    for dummy, (source, target) in graph.dummies.items():
        a, b = from_layers.get(source, ()), from_layers.get(target, ())
        common = []
        for x, y in zip(a, b):
            if x != y:
                break
            common.append(x)
        if common:
            out[dummy] = tuple(common)
    return out


@dataclass
class Layout:
    """Where each layer goes (top-left corners) and the route of each long edge (dummy centres, top to bottom)."""

    positions: Dict[str, Position]
    routes: Dict[Tuple[str, str, int], List[Position]]


def layered_layout(network: Network, origin: Position = (0.0, 0.0), node_width: float = NODE_WIDTH,
                   node_height: float = NODE_HEIGHT, gap: float = GAP_X, row_step: float = ROW_STEP) -> Layout:
    """The layered layout of ``network``: every layer's top-left corner, boxes ``gap`` apart in a layer and
    ``row_step`` apart between layers, and each long edge's route through the gaps it was given."""
    graph = build_graph(network, node_width)
    block_of = block_membership(network, graph)
    order_layers(graph, block_of)
    x = assign_x(graph.layers, graph.up, graph.down, graph.width, set(graph.dummies), gap, block_of)
    ox, oy = origin
    left = min(x.values(), default=0.0)
    positions: Dict[str, Position] = {}
    centres: Dict[str, Position] = {}
    for r, layer in enumerate(graph.layers):
        for n in layer:
            px, py = ox + x[n] - left, oy + r * row_step
            if n in graph.dummies:
                centres[n] = (px + graph.width[n] / 2, py + node_height / 2)
            else:
                positions[n] = (px, py)
    routes = {key: [centres[d] for d in chain] for key, chain in graph.chains.items()}
    return Layout(positions=positions, routes=routes)


CLEARANCE = 12.0  # the least free space between two boxes that leaves their pins apart (pins stick out 5)


def crowded(positions: Dict[str, Position], node_width: float = NODE_WIDTH, node_height: float = NODE_HEIGHT,
            clearance: float = CLEARANCE) -> bool:
    """Whether two boxes at ``positions`` (top-left corners) overlap or come closer than ``clearance``: such an
    arrangement (an NNC file's, whose boxes are smaller and closer) is laid out again on import."""
    boxes = sorted(positions.values())
    for i, (ax, ay) in enumerate(boxes):
        for bx, by in boxes[i + 1:]:
            if bx - ax >= node_width + clearance:
                break  # sorted by x: every later box is farther right
            if abs(by - ay) < node_height + clearance:
                return True
    return False
