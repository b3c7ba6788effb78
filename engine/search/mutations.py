"""NNC's structure-search policy applied to the Main network: candidate networks, each checked before it trains.

A mutation is (rule, site, variant): the rule of the policy (``policy.Rule``), which matching layer it changes
and, where the rule offers several layer types, which. The sampler chooses all three (``space``), so the
search learns which changes pay. Besides NNC's rules there is ``ChangeSize`` (NNC's structure search also
changes the sizes of Convolution and Affine layers): a hidden layer's outmaps or out_shape x 1/4, 1/2 or 2.
Every candidate goes through the engine's shape inference and network checks (``check.validate``); one that
fails is not used. The branch rules, ``Branch`` (a residual connection around a convolution) and
``RemoveUntilJoin`` (one path of a branch removed up to its join), are in ``branches``.
"""
from __future__ import annotations

import copy
from typing import List, Optional, Tuple

from nnconsole.engine.check.validate import check_network
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.project.model import Layer, Network, Project
from nnconsole.engine.project.structure import MAIN_NETWORK, all_networks
from nnconsole.engine.search.branches import PATHS_PER_JOIN, add_branch, branch_sites, join_sites, remove_path
from nnconsole.engine.search.policy import Rule, bare_type

SIZE_FACTORS = (0.25, 0.5, 2.0)
SIZE_RULE = Rule("ChangeSize", ("Convolution", "DepthwiseConvolution", "Affine"),
                 (("ChangeSize", tuple(str(f) for f in SIZE_FACTORS)),))
SIZE_PARAMS = {"Convolution": "outmaps", "Affine": "out_shape"}
LOSS_PREFIXES = ("SoftmaxCrossEntropy", "CategoricalCrossEntropy", "SquaredError", "BinaryCrossEntropy",
                 "SigmoidCrossEntropy", "HuberLoss", "AbsoluteError", "EpsilonInsensitiveLoss", "KLMultinomial")


def sites(network: Network, rule: Rule) -> List[str]:
    """The names of the layers ``rule`` can change, in network order."""
    types = {bare_type(c) for c in rule.conditions}
    kinds = {name for name, _ in rule.actions}
    if "RemoveUntilJoin" in kinds:
        return join_sites(network)
    if "Branch" in kinds:
        return [name for name in branch_sites(network, lambda layer: not _feeds_loss(network, layer))
                if network.layer(name).type in types]
    out = []
    for layer in network.layers:
        if layer.type not in types:
            continue
        removing = bool(kinds & {"RemoveLayer", "RemoveLayers"})
        if removing and len(layer.inputs) != 1:
            continue
        if _feeds_loss(network, layer):
            continue  # the output layer stays as it is: the loss needs its size, and nothing between them
        if rule is SIZE_RULE and layer.type not in SIZE_PARAMS:
            continue
        out.append(layer.name)
    return out


def variants(rule: Rule) -> int:
    """How many different changes one site of ``rule`` allows (the product of its choices)."""
    count = 1
    for name, args in rule.actions:
        count *= PATHS_PER_JOIN if name == "RemoveUntilJoin" else max(1, len(args))
    return count


def mutate(network: Network, rule: Rule, site: str, variant: int) -> Network:
    """A copy of ``network`` with ``rule`` applied at layer ``site``; ``variant`` picks among its layer types."""
    out = copy.deepcopy(network)
    layer = out.layer(site)
    if rule is SIZE_RULE:
        key = SIZE_PARAMS[layer.type]
        factor = SIZE_FACTORS[variant % len(SIZE_FACTORS)]
        old = layer.params[key]
        scale = lambda v: max(1, int(round(v * factor)))  # noqa: E731
        layer.params[key] = [scale(v) for v in old] if isinstance(old, list) else scale(old)
        return out
    kinds = [name for name, _ in rule.actions]
    if kinds[0] == "RemoveUntilJoin":
        remove_path(out, layer, variant)
        return out
    if kinds[0] == "Branch":
        add_branch(out, layer, lambda base: _unique(out, base))
        return out
    if kinds[0] in ("RemoveLayer", "RemoveLayers"):
        _remove(out, layer)
        return out
    after = layer
    for _, types in rule.actions:  # each InsertLayer adds one layer of a chain after the matching layer
        choice = bare_type(types[variant % len(types)]) if types else ""
        variant //= max(1, len(types))
        new = _new_layer(out, choice, layer)
        _insert_after(out, after, new)
        after = new
    return out


def candidate_problems(project: Project, network: Network) -> List[str]:
    """Why ``network`` cannot train as the project's Main network ([] when its shapes and layers are sound)."""
    trial = copy.copy(project)
    trial.network = network
    return [str(p) for p in check_network(trial) if p.severity == "error"]


def multiply_adds(project: Project, network: Optional[Network] = None) -> int:
    """The Main network's multiply-adds per sample, as ``nnconsole info`` counts them."""
    trial = copy.copy(project)
    trial.network = network or project.network
    return infer_network(trial.network, all_networks(trial), MAIN_NETWORK).total_macs


def _feeds_loss(network: Network, layer: Layer) -> bool:
    return any(c.type.startswith(LOSS_PREFIXES) for c in network.consumers(layer.name))


def _remove(network: Network, layer: Layer) -> None:
    source = layer.inputs[0]
    for consumer in network.consumers(layer.name):
        consumer.inputs = [source if name == layer.name else name for name in consumer.inputs]
    network.layers.remove(layer)


def _unique(network: Network, base: str) -> str:
    names, n = set(network.names()), 1
    while f"{base}_s{n}" in names:
        n += 1
    return f"{base}_s{n}"


def _new_layer(network: Network, choice: str, near: Layer) -> Layer:
    params: dict = {}
    kind = choice
    if choice == "SmallerAffine":
        kind = "Affine"
        size = near.params.get("out_shape", 16)
        params = {"out_shape": max(1, (size[0] if isinstance(size, list) else int(size)) // 2)}
    elif choice in ("Convolution", "DepthwiseConvolution"):
        params = {"kernel": [3, 3], "pad": [1, 1], "stride": [1, 1]}
        if choice == "Convolution":
            params["outmaps"] = near.params.get("outmaps", 16)
    elif choice in ("MaxPooling", "AveragePooling"):
        params = {"kernel": [2, 2], "stride": [2, 2]}
    return Layer(name=_unique(network, kind.lower()), type=kind, params=params)


def _insert_after(network: Network, layer: Layer, new: Layer) -> None:
    for consumer in network.consumers(layer.name):
        consumer.inputs = [new.name if name == layer.name else name for name in consumer.inputs]
    new.inputs = [layer.name]
    network.layers.insert(network.layers.index(layer) + 1, new)


def describe(rule: Rule, site: str, variant: int) -> str:
    """'InsertActivation at conv1 (variant 2)', for the trial's record."""
    return f"{rule.name} at {site}" + (f" (variant {variant})" if variants(rule) > 1 else "")


def rule_table(rules: List[Rule], network: Optional[Network] = None) -> List[Tuple[str, Rule]]:
    """(name, rule) of the policy's rules plus ``ChangeSize``, in a fixed order the sampler's choices use; with
    ``network``, only the rules that apply to it somewhere (a rule without a site would waste the draw). A
    branch's removal applies also where another rule of the table can make a branch first."""
    table = [(r.name, r) for r in rules] + [(SIZE_RULE.name, SIZE_RULE)]
    if network is None:
        return table
    makes_branch = any(kind == "Branch" for _, r in table for kind, _ in r.actions if sites(network, r))
    return [(name, r) for name, r in table
            if sites(network, r) or (makes_branch and any(kind == "RemoveUntilJoin" for kind, _ in r.actions))]
