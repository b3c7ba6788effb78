"""Which layers share weights in the EDIT tab: layers whose parameter scopes (NNC's ParameterScope,
default the layer's name) are the same read one set of weights. The rule itself lives in
``nnconsole.engine.network.shared_params.weight_scope_of``; this module only groups layers by it.
"""
from __future__ import annotations

from typing import Dict, List

from nnconsole.engine.layers import get_spec
from nnconsole.engine.project.model import Network
from nnconsole.engine.network.shared_params import weight_scope_of


def has_weights(type_name: str) -> bool:
    """True when layers of this type own weights (only those can share a parameter scope)."""
    try:
        return bool(get_spec(type_name).weights)
    except KeyError:
        return False


def weight_sharers(network: Network) -> Dict[str, List[str]]:
    """For each layer with weights, the other layers that read the same weights (often none)."""
    by_scope: Dict[str, List[str]] = {}
    for layer in network.layers:
        if has_weights(layer.type):
            by_scope.setdefault(weight_scope_of(layer), []).append(layer.name)
    return {name: [other for other in names if other != name]
            for names in by_scope.values() for name in names}


def sharing_text(others: List[str]) -> str:
    """'shares weights with disc_real' (or '' when the layer shares with no other)."""
    if not others:
        return ""
    shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    return f"shares weights with {shown}"
