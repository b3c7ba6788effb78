"""The noise buffers of virtual adversarial training (NNC's VATNoise ``Buf``): variables of the run that a
VATNoise layer's backward pass writes and that Input layers of the same name read, in any network.

An Input reading a buffer is not a dataset column: the datasets need no such column, and a graph gives the
Input the run's shared buffer (``engine.runtime.graph``). These functions find the buffer names.
"""
from __future__ import annotations

from typing import Iterable, Set

from nnconsole.engine.project.model import Network, Project

VAT_NOISE = "VATNoise"


def network_buffers(network: Network) -> Set[str]:
    """The buffer names the VATNoise layers of ``network`` write (Unit layers not expanded)."""
    return {str((layer.params or {}).get("buffer") or "buf") for layer in network.layers if layer.type == VAT_NOISE}


def buffers_of(networks: Iterable[Network]) -> Set[str]:
    """The buffer names of all ``networks``."""
    names: Set[str] = set()
    for network in networks:
        names |= network_buffers(network)
    return names


def project_buffers(project: Project) -> Set[str]:
    """The buffer names of every network of ``project`` (Main and the others, Unit networks included)."""
    return buffers_of([project.network, *project.networks.values()])
