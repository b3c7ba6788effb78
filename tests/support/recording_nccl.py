"""An in-process recording stand-in for nnabla-ext-cuda's NCCL communicator, and the graphs to drive it.

``RecordingNccl`` has ``nnabla.communicators.MultiProcessDataParallelCommunicator``'s shape (one process:
the collectives reduce nothing) and writes every call into ``events`` in order, next to the events of
``TracedLoss`` (the end of each backward). ``nccl_comm`` builds the engine's ``NcclGpuComm`` around it on a
CPU context. ``callback_bytes`` is what nnabla-ext-cuda 1.39's callback sends: mpdpc.cu packs a parameter's
gradient once per function of the graph that takes it.
"""
from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Sequence

EVENTS: List[Dict[str, Any]] = []


class RecordingNccl:
    """Records ``all_reduce``, ``all_reduce_callback`` and ``bcast`` (arrays by size, in order)."""

    def __init__(self, ctx: Any) -> None:
        self.ctx, self.rank, self.size, self.local_rank = ctx, 0, 1, 0
        self.delay = 0.0  # seconds an all-reduce costs (slept at the device synchronisation)

    def add_context_and_parameters(self, ctx_and_params: Any) -> None:
        return None

    def init(self) -> None:
        return None

    def bcast(self, data: Sequence[Any], src: int = 0, inplace: bool = False, group: str = "world") -> None:
        EVENTS.append({"call": "bcast", "sizes": [a.size for a in data]})

    def all_reduce(self, data: Sequence[Any], division: bool = False, inplace: bool = False,
                   group: str = "world") -> None:
        EVENTS.append({"call": "all_reduce", "sizes": [a.size for a in data], "division": division})
        time.sleep(self.delay)

    def all_reduce_callback(self, data: Sequence[Any], pack_size: int, division: bool = False,
                            group: str = "world", scale_grad: float = 1, keep_dtype: bool = False) -> list:
        EVENTS.append({"call": "callback", "sizes": [a.size for a in data], "pack_size": pack_size})
        time.sleep(self.delay)
        return []


class TracedLoss:
    """A loss Variable whose ``backward`` records its end (and can take longer: ``extra_s``)."""

    def __init__(self, loss: Any, name: str = "loss", extra_s: float = 0.0) -> None:
        self._loss, self.name, self.extra_s = loss, name, extra_s

    def __hash__(self) -> int:
        return hash(self._loss)

    def visit(self, f: Any) -> None:
        self._loss.visit(f)

    def backward(self, *args: Any, **kwargs: Any) -> None:
        self._loss.backward(*args, **kwargs)
        time.sleep(self.extra_s)
        EVENTS.append({"call": "backward_done", "loss": self.name})


def nccl_comm(monkeypatch: Any, params: Dict[str, Any]) -> Any:
    """The engine's ``NcclGpuComm`` over ``RecordingNccl`` on the CPU context (MPI: this one process)."""
    import nnabla.communicators as C
    from mpi4py import MPI
    from nnabla.ext_utils import get_extension_context

    from nnconsole.engine.comm import nccl

    EVENTS.clear()
    monkeypatch.setattr(C, "MultiProcessDataParallelCommunicator", RecordingNccl, raising=False)
    monkeypatch.setattr(nccl, "device_synchronizer", lambda ctx: lambda: None)
    return nccl.NcclGpuComm(MPI.COMM_WORLD, get_extension_context("cpu"), params)


def function_input_uses(loss: Any, params: Sequence[Any]) -> List[int]:
    """How many function inputs of ``loss``'s graph each parameter is (nnabla's Variable hash is the C++
    variable's identity), counted here by a walk of the test's own."""
    uses = [0] * len(params)

    def count(function: Any) -> None:
        for v in function.inputs:
            for i, p in enumerate(params):
                if hash(v) == hash(p):
                    uses[i] += 1

    loss.visit(count)
    return uses


def template_graph(name: str, batch: int = 4, **layer_sizes: int) -> tuple:
    """(loss, learned parameters) of a project template's training graph, built as the trainer does;
    ``layer_sizes``: ``out_shape`` of Affine layers by layer name (e.g. fc=512), Delay sizes follow."""
    import nnabla as nn

    from nnconsole.engine.check.project_file import load_valid_project
    from nnconsole.engine.network.units import expanded_project
    from nnconsole.engine.runtime.graph import build_graph
    from tests.support.paths import ROOT

    project = expanded_project(load_valid_project(os.path.join(ROOT, "project_templates", name, "project.yaml"),
                                                  check_datasets=False))
    for layer in project.network.layers:
        if layer.name in layer_sizes:
            layer.params["out_shape"] = layer_sizes[layer.name]
        if layer.type == "Delay" and layer_sizes:
            layer.params["size"] = [max(layer_sizes.values())]
    nn.clear_parameters()
    graph = build_graph(project.network, batch, "train", seed=0, rank=0)
    learned = [v for v in nn.get_parameters(grad_only=True).values()]
    return graph.loss, learned
