"""How big a network becomes once its Units and repeat blocks are expanded, counted without building it.

A project states its network compactly: a RepeatStart's ``times`` multiplies the layers of its block, blocks
nest (their counts multiply), and a Unit stands for a whole network, whose own Units and blocks multiply again.
Expanding first and checking afterwards let a few lines take the machine: ``times: 1000000000`` unrolled until
memory ran out, 50 nested blocks of 2 validated with 10^18 parameters, a chain of 500 Units over a doubling unit
network built 16 million layers, and a fan-out 33 levels deep was refused only after 25 s (issue 25 items 8, 27).

``size_problem`` counts arithmetically (each network's expansion once, memoised; nothing is copied) the layers the
expansion would build and how deeply units nest, and names the block or unit that takes the total over
``MAX_EXPANDED_LAYERS`` or ``MAX_UNIT_DEPTH``, with the totals, before anything is built. ``cost_problem`` bounds
the learned parameters and multiply-adds of the expanded network (shape inference counts them per repetition
without unrolling) and names the block or unit holding most of them. Both are reported on the user's own layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from nnconsole.engine.layers.registry import find_spec
from nnconsole.engine.layers.types.unit import parse_arguments
from nnconsole.engine.network.arguments import resolve
from nnconsole.engine.network.repeat_blocks import (END, MAX_EXPANDED_LAYERS, START, enclosing_blocks, find_blocks,
                                                    has_repeats, times_of)

MAX_UNIT_DEPTH = 32  # units inside units: deeper is a mistake (and would exhaust Python's stack)
MAX_EXPANDED_PARAMETERS = 10**10  # 40 GB of float32 weights, 160 GB with gradients and Adam's moments
MAX_EXPANDED_MACS = 10**14  # multiply-adds per sample: days per epoch on any GPU
Problem = Tuple[str, str]


@dataclass
class _Counted:
    """One network expanded as a unit's body: its layers and how deeply its units nest (0: none)."""

    layers: int
    depth: int
    deepest: List[str]  # the chain of networks to the deepest unit, for the message


def count_text(n: int) -> str:
    """A count as a person reads it: '16,384,005', or 'about 10^300' when its digits would fill the line."""
    return f"{n:,}" if n < 10**18 else f"about 10^{len(str(n)) - 1}"


def _params(layer: Any) -> Mapping[str, Any]:
    params = getattr(layer, "params", None)
    return params if isinstance(params, Mapping) else {}


def _left_out_of_a_body(layer: Any) -> bool:
    """Layers a unit's expansion does not keep: its Inputs (the unit's inputs replace them), Arguments, losses."""
    if layer.type == "Argument":
        return True
    spec = find_spec(layer.type)
    return spec is not None and (spec.is_input or spec.is_loss or spec.is_metric)


def _multipliers(layers: Sequence[Any]) -> Tuple[Dict[str, int], Dict[str, str]]:
    """Each layer's repetitions once its blocks are unrolled, and the outermost block holding it (by RepeatStart)."""
    if not has_repeats(layers):
        return {}, {}
    blocks, _ = find_blocks(layers)  # malformed blocks are reported by shape inference; they count once here
    times: Dict[str, int] = {}
    outer: Dict[str, str] = {}
    for name, around in enclosing_blocks(blocks).items():
        n = 1
        for b in around:
            n *= b.times
        times[name] = n
        outer[name] = around[0].start
    return times, outer


def _body(network: Any, arguments: str) -> Any:
    """``network`` as a Unit with ``arguments`` runs it: a repeat count naming an Argument takes its value
    (unchanged when the arguments cannot be read: the expansion reports them)."""
    try:
        return resolve(network, parse_arguments(arguments))[0]
    except (ValueError, TypeError, AttributeError):
        return network


class _Counter:
    """Counts the expansion of the project's networks, each (network, arguments) once."""

    def __init__(self, networks: Mapping[str, Any]) -> None:
        self.networks = networks
        self.memo: Dict[Tuple[str, str], _Counted] = {}
        self.open: set = set()  # networks being counted: a cycle counts 0 here (the expansion names it)

    def unit_body(self, layer: Any, level: int = 1) -> _Counted:
        """The body of the network a Unit uses, ``level`` units deep (counted once per network and arguments)."""
        target = str(_params(layer).get("network", "") or "")
        key = (target, str(_params(layer).get("arguments", "") or ""))
        network = self.networks.get(target)
        if network is None or target in self.open:
            return _Counted(0, 0, [])
        if level > MAX_UNIT_DEPTH:  # deep enough to refuse: the count stops here, so it never recurses further
            return _Counted(0, 1, [target])
        if key not in self.memo:
            self.open.add(target)
            try:
                self.memo[key] = self.count(_body(network, key[1]).layers, target, level)
            finally:
                self.open.discard(target)
        return self.memo[key]

    def count(self, layers: Sequence[Any], name: str, level: int) -> _Counted:
        """A unit's body (``layers`` of network ``name``) as its expansion keeps it, ``level`` units deep."""
        times, _ = _multipliers(layers)
        total, depth, deepest = 0, 0, [name]
        for layer in layers:
            if layer.type in (START, END) or _left_out_of_a_body(layer):
                continue
            n = times.get(layer.name, 1)
            if layer.type == "Unit":
                inner = self.unit_body(layer, level + 1)
                total += n * inner.layers
                if inner.depth + 1 > depth:
                    depth, deepest = inner.depth + 1, [name] + inner.deepest
            else:
                total += n
        return _Counted(total, depth, deepest)


class SizeProblem(tuple):
    """(layer, message) of a network too big to expand: nothing of it was expanded, so its other Units are not
    errors of their own (``units.fold_unit_problems`` leaves them quiet)."""


def expanded_layers(network: Any, networks: Optional[Mapping[str, Any]], name: str = "") -> int:
    """How many layers ``network`` has once its Units and repeat blocks are expanded (counted, not built)."""
    return _count_top(network, networks, name)[0]


def _count_top(network: Any, networks: Optional[Mapping[str, Any]], name: str
               ) -> Tuple[int, Optional[Tuple[Any, int, Optional[_Counted]]], Optional[Problem], Dict[str, str]]:
    """(expanded layers, the (layer, repetitions, unit body) that first takes the total over MAX_EXPANDED_LAYERS,
    a units-too-deep problem, layer -> outermost block)."""
    layers = list(getattr(network, "layers", []) or [])
    if not any(layer.type == "Unit" for layer in layers) and not has_repeats(layers):
        return len(layers), None, None, {}
    layers = list(_body(network, "").layers)  # its own Arguments' values (a repeat count 'n')
    counter = _Counter(networks or {})
    if name:
        counter.open.add(name)  # a unit using this network again is a cycle, which the expansion names
    times, outer = _multipliers(layers)
    total, first = 0, None
    for layer in layers:
        if layer.type in (START, END):
            continue
        n = times.get(layer.name, 1)
        inner = counter.unit_body(layer) if layer.type == "Unit" else None
        if inner is not None and inner.depth + 1 > MAX_UNIT_DEPTH:
            chain = " -> ".join([name or "this network"] + inner.deepest[:3])
            return total, first, (layer.name, f"units nest more than {MAX_UNIT_DEPTH} deep ({chain} -> ...); use "
                                              "fewer levels of units (counted before anything is built)"), outer
        total += n * (inner.layers if inner is not None else 1)
        if first is None and total > MAX_EXPANDED_LAYERS:
            first = (layer, n, inner)  # the block or unit that takes the total over the bound
    return total, first, None, outer


def size_problem(network: Any, networks: Optional[Mapping[str, Any]], name: str = "") -> Optional[SizeProblem]:
    """(layer, message) when expanding ``network``'s Units and repeat blocks would build more than
    MAX_EXPANDED_LAYERS layers or nest units more than MAX_UNIT_DEPTH deep; None when it may be built.
    Counted arithmetically: nothing is expanded. The layer named is the user's own (a RepeatStart or a Unit of
    ``network``) that takes the total over the bound."""
    total, first, too_deep, outer = _count_top(network, networks, name)
    if too_deep:
        return SizeProblem(too_deep)
    if first is None:
        return None
    layer, n, inner = first
    owner = outer.get(layer.name, layer.name) if n > 1 else layer.name
    return SizeProblem((owner, _too_many_layers(layer, n, inner, outer, network.layers, total)))


def _too_many_layers(layer: Any, n: int, inner: Optional[_Counted], outer: Dict[str, str], layers: Sequence[Any],
                     total: int) -> str:
    """Which block or unit (and how it multiplies) makes the expanded network ``total`` layers."""
    parts = []
    if inner is not None:
        target = str(_params(layer).get("network", "") or "")
        parts.append(f"unit '{layer.name}' (network '{target}', {count_text(inner.layers)} layers once its own units and blocks "
                     "are expanded)")
    if n > 1:
        start = outer[layer.name]
        own = next((times_of(x) for x in layers if x.name == start), 0)
        parts.append(f"repeat block '{start}' (times {count_text(own)}" + (f"; with the blocks inside it, '{layer.name}' "
                                                                 f"runs {count_text(n)} times" if n != own else "") + ")")
    what = " in ".join(parts) if parts else f"layer '{layer.name}'"
    return (f"expanding {what} makes the network {count_text(total)} layers, more than {MAX_EXPANDED_LAYERS:,} (the most "
            "nnconsole builds); lower the repeat count or use fewer units (counted before anything is built)")


def cost_problem(info: Any, origin: Mapping[str, str], layers: Sequence[Any]) -> Optional[Problem]:
    """(layer, message) when the expanded network's learned parameters or multiply-adds per sample (``info``,
    shape inference's totals, counted once per repetition) exceed MAX_EXPANDED_PARAMETERS or MAX_EXPANDED_MACS;
    the layer named is the user's block or unit that holds most of them (``origin``: expanded layer -> its Unit)."""
    for total, bound, field, what in ((info.total_params, MAX_EXPANDED_PARAMETERS, "n_params", "learned parameters"),
                                      (info.total_macs, MAX_EXPANDED_MACS, "macs", "multiply-adds per sample")):
        if total <= bound:
            continue
        _, outer = _multipliers(layers)
        shares: Dict[str, int] = {}
        for name, li in info.layers.items():
            owner = origin.get(name, name)
            owner = outer.get(owner, owner)
            shares[owner] = shares.get(owner, 0) + int(getattr(li, field, 0) or 0)
        owner, share = max(shares.items(), key=lambda kv: kv[1])
        kind = {START: "repeat block", "Unit": "unit"}.get(next((x.type for x in layers if x.name == owner), ""),
                                                          "layer")
        return owner, (f"the expanded network has {count_text(total)} {what}, more than {bound:,} (the most nnconsole trains); "
                       f"{kind} '{owner}' holds {count_text(share)} of them: lower its repeat count or sizes")
    return None
