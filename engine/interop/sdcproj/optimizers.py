"""An NNC desktop project's optimizers after the first, and the networks they train, read (issue 17; written by ``exporter`` and
``settings_writer``).

``[Optimizer_i]`` for i >= 1 becomes a ``Project.optimizers`` entry: ``Optimizer_Name``, the network
(``Optimizer_NetworkName``; Main's layers are the project's network, another network is converted like Main
into ``Project.networks``), the dataset (the first optimizer's is the training split, any other the
validation split), ``RangeFrom``/``RangeTo`` (-1 = no bound; ``RangeUnit`` 0 = epochs as NNC's other units)
and the solver and schedule, read as the first optimizer's. In NNC, layers of the same name in several
networks read one set of weights (parameters are named after the layer), which nnconsole also does.
"""
from __future__ import annotations

from typing import List, Optional

from nnconsole.engine.project.model import MAIN_NETWORK, ExtraOptimizer, Network, Project

from nnconsole.engine.interop.nntxt.optimizers import derived_network
from nnconsole.engine.interop.sdcproj.reader import SdcReader
from nnconsole.engine.interop.pipeline import comments_follow_layout, graph_to_layers, ImportedGraph
from nnconsole.engine.interop.report import add_for_network
from nnconsole.engine.interop.sdcproj.network import network_comments, network_nodes
from nnconsole.engine.interop.sdcproj.settings import _iterations, read_optimizer


def read_extra_optimizers(reader: SdcReader, project: Project, count: int, main_name: str, networks: List[str],
                          ipe: Optional[int], unsupported: List[str], notes: List[str]) -> None:
    """Fill ``project.optimizers`` and ``project.networks`` from ``[Optimizer_1]`` ... ``[Optimizer_<count-1>]``."""

    def convert(network: str) -> None:
        lost: List[str] = []  # what this network's conversion reports, named after it (report.add_for_network)
        said: List[str] = []
        nodes, targets, times = network_nodes(reader, network, lost, said)
        layers, nodes = graph_to_layers(ImportedGraph(nodes, times, targets), lost, said, reader.path)
        add_for_network(unsupported, lost, network)
        add_for_network(notes, said, network)
        project.networks[network] = Network(layers=layers, comments=comments_follow_layout(
            network_comments(reader, network), nodes, layers))

    first = reader.section("Optimizer_0", required=False)
    train_name = (first.get("Optimizer_DatasetName") or "").strip() if first else ""
    for i in range(1, count):
        s = reader.section(f"Optimizer_{i}", required=False)
        if s is None:
            unsupported.append(f"[Optimizer_{i}] is missing although NumOptimizer is {count}")
            continue
        name = (s.get("Optimizer_Name") or f"Optimizer_{i}").strip()
        network = (s.get("Optimizer_NetworkName") or "").strip()
        if network not in networks:
            unsupported.append(f"optimizer '{name}' trains network '{network}', which the project does not have; "
                               "it was not imported")
            continue
        if network == main_name:
            network = MAIN_NETWORK
        elif network not in project.networks:
            convert(network)
        dataset = (s.get("Optimizer_DatasetName") or "").strip()
        split = "training" if not dataset or dataset == train_name else "validation"
        if split == "validation":
            notes.append(f"optimizer '{name}' reads dataset '{dataset}', imported as the project's validation dataset")
        project.optimizers.append(ExtraOptimizer(
            name=name, network=network, dataset=split,
            start_iteration=_bound(reader, s, "RangeFrom", ipe, unsupported, name),
            end_iteration=_bound(reader, s, "RangeTo", ipe, unsupported, name),
            optimizer=read_optimizer(reader, s, ipe, unsupported, notes, ranged=True)))
    for network in networks:  # the others nnconsole does not derive (a network an executor runs...)
        if network != main_name and network not in project.networks and not derived_network(network):
            convert(network)


def _bound(reader: SdcReader, s, key: str, ipe: Optional[int], unsupported: List[str], name: str) -> int:
    """NNC's RangeFrom/RangeTo as single-worker iterations (0 = no bound)."""

    value = reader.int(s, key, -1) if s.get(key) is not None else -1
    if value < 0:
        return 0
    return _iterations(value, s.get("RangeUnit"), ipe, f"optimizer '{name}' {key}", unsupported)
