"""The order of a network's layers: topological (each after its inputs) and the cycles that prevent one. Shape
inference, recurrent unrolling and the EDIT canvas's layout read it."""
from __future__ import annotations

import heapq
from collections import deque
from typing import Dict, List, Set, Tuple

from nnconsole.engine.project.model import Network


def topological_order(network: Network) -> Tuple[List[str], List[List[str]]]:
    """Layer names in data-flow order (ties keep file order) and the cycles that block the rest.

    Inputs naming missing layers are ignored here. Each cycle is a list of names a -> b -> ... -> a
    (without repeating a). Layers downstream of a cycle are in neither list.
    """
    index: Dict[str, int] = {}
    for i, layer in enumerate(network.layers):
        index.setdefault(layer.name, i)
    layers = [network.layers[i] for i in sorted(index.values())]
    consumers: Dict[str, List[str]] = {layer.name: [] for layer in layers}
    indeg: Dict[str, int] = {layer.name: 0 for layer in layers}
    for layer in layers:
        for src in layer.inputs:
            if src in consumers:
                consumers[src].append(layer.name)
                indeg[layer.name] += 1
    heap = [(index[n], n) for n, d in indeg.items() if d == 0]
    heapq.heapify(heap)
    order: List[str] = []
    while heap:
        _, name = heapq.heappop(heap)
        order.append(name)
        for c in consumers[name]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(heap, (index[c], c))
    if len(order) == len(layers):
        return order, []
    rest = {n for n in indeg if indeg[n] > 0}
    return order, _cycles(rest, consumers, index)


def _cycles(nodes: Set[str], consumers: Dict[str, List[str]], index: Dict[str, int]) -> List[List[str]]:
    """The cycles among ``nodes``: one per strongly connected component that loops (Tarjan)."""
    counter = [0]
    low: Dict[str, int] = {}
    num: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    comps: List[List[str]] = []

    def edges(n: str) -> List[str]:
        return [c for c in consumers[n] if c in nodes]

    for root in sorted(nodes, key=index.get):
        if root in num:
            continue
        work = [(root, iter(edges(root)))]
        num[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in num:
                    num[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(edges(nxt))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], num[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == num[node]:
                comp = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    comp.append(n)
                    if n == node:
                        break
                if len(comp) > 1 or node in consumers[node]:
                    comps.append(comp)
    cycles = []
    for comp in comps:
        members = set(comp)
        start = min(comp, key=index.get)
        # shortest path start -> ... -> start inside the component (BFS)
        prev: Dict[str, str] = {}
        queue = deque([start])
        seen = {start}
        end = None
        while queue and end is None:
            n = queue.popleft()
            for c in consumers[n]:
                if c == start:
                    end = n
                    break
                if c in members and c not in seen:
                    seen.add(c)
                    prev[c] = n
                    queue.append(c)
        path = [end] if end is not None else [start]
        while path[-1] != start:
            path.append(prev[path[-1]])
        cycles.append(list(reversed(path)))
    cycles.sort(key=lambda c: index[c[0]])
    return cycles
