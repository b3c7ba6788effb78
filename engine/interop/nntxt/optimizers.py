"""The optimizers after the first, and the networks they train, in .nntxt files (issue 17).

Import: every optimizer of the file after the first becomes a ``Project.optimizers`` entry (its solver,
schedule and update interval read as the first one's, its dataset, start/end iteration) and the network
it trains, when not Main, a ``Project.networks`` entry converted like Main. Export writes each extra
network and optimizer back, as NNC does, so ``nnabla_cli train`` runs them all.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

from nnconsole.engine.interop.nntxt.writers import NetworkWriter, write_optimizer_variables, write_solver
from nnconsole.engine.interop.report import InteropError, add_for_network
from nnconsole.engine.project.model import Executor, ExtraOptimizer, MAIN_NETWORK, Network, Project
from nnconsole.engine.interop.nntxt.network import network_nodes
from nnconsole.engine.interop.nntxt.settings import read_optimizer
from nnconsole.engine.interop.pipeline import graph_to_layers, ImportedGraph
from nnconsole.engine.layers import find_spec
from nnconsole.engine.project.structure import network_named
from nnconsole.engine.interop.netgraph import registry_type
from nnconsole.engine.network.shapes import infer_network


# ------------------------------------------------------------------------------------------ import
def derived_network(name: str) -> bool:
    """NNC's validation and runtime copies of a training network (MainValidation, MainRuntime ...): nnconsole
    derives them from the network itself, so they are not imported."""
    return name.endswith(("Validation", "Runtime"))


def read_extra_optimizers(proto: Any, main_proto: Any, main_nodes: List[Any], project: Project,
                          unsupported: List[str], notes: List[str], where: str) -> List[Any]:
    """Fill ``project.networks``/``optimizers`` from the file's optimizers after the first; returns the graph
    nodes of the networks read (their parameters join the initial weights). Parameters that layers of
    several networks read get one parameter scope, so the project keeps one set of weights."""

    networks = {n.name: n for n in proto.network}
    train_dataset = proto.optimizer[0].dataset_name[0] if len(proto.optimizer) and proto.optimizer[0].dataset_name \
        else ""
    nodes: List[Any] = []

    def convert(net_name: str) -> List[tuple]:
        lost: List[str] = []  # what this network's conversion reports, named after it (report.add_for_network)
        said: List[str] = []
        got = network_nodes(proto, networks[net_name], lost, said, where)
        times = {r.id: int(r.times) for r in networks[net_name].repeat_info}
        graph = ImportedGraph(got, times)
        if hasattr(graph, "marked_weights"):  # as Main: nnabla files name per-repetition weights
            graph.marked_weights = True
        layers, got = graph_to_layers(graph, lost, said, where)
        add_for_network(unsupported, lost, net_name)
        add_for_network(notes, said, net_name)
        project.networks[net_name] = Network(layers=layers)
        return [(net_name, n) for n in got]

    for index in range(1, len(proto.optimizer)):
        o = proto.optimizer[index]
        net_name = o.network_name
        if net_name not in networks:
            unsupported.append(f"optimizer '{o.name}' trains network '{net_name}', which the file does not have; "
                               "it was not imported")
            continue
        if net_name == main_proto.name:
            net_name = MAIN_NETWORK
        elif net_name not in project.networks:
            nodes += convert(net_name)
        dataset = "training"
        if o.dataset_name and o.dataset_name[0] != train_dataset:
            dataset = "validation"
            notes.append(f"optimizer '{o.name}' reads dataset '{o.dataset_name[0]}', imported as the project's "
                         "validation dataset")
        project.optimizers.append(ExtraOptimizer(
            name=o.name, network=net_name, dataset=dataset, start_iteration=int(o.start_iter),
            end_iteration=int(o.end_iter), optimizer=read_optimizer(proto, unsupported, notes, index=index)))
    for name in networks:  # the others that nnconsole does not derive (a network an executor runs...)
        if name != main_proto.name and name not in project.networks and not derived_network(name):
            nodes += convert(name)
    if nodes:
        _share_across_networks([(MAIN_NETWORK, n) for n in main_nodes] + nodes, project, notes)
    return [n for _, n in nodes]


def _share_across_networks(nodes: List[tuple], project: Project, notes: List[str]) -> None:
    """(network, node) pairs whose layers read one source parameter from different networks: one scope."""

    users: Dict[str, List[tuple]] = {}
    for net_name, n in nodes:
        spec = find_spec(registry_type(n.type) or "")
        if spec is None or not spec.weight_scope:
            continue
        for w in n.weights.values():
            users.setdefault(w.source_name, []).append((net_name, n))
    shared: Dict[str, set] = {}
    for source, sharing in users.items():
        if len({net for net, _ in sharing}) < 2 or "/" not in source:
            continue
        scope = sharing[0][1].parameter_scope or source.rsplit("/", 2)[0].replace("/", "_")
        for net_name, n in sharing:
            n.parameter_scope = scope
            for layer in network_named(project, net_name).layers:
                if layer.name == n.name:
                    layer.parameter_scope = scope
        shared.setdefault(scope, set()).update(net for net, _ in sharing)
    for scope, networks in shared.items():
        notes.append(f"parameter scope '{scope}' is read in networks {', '.join(sorted(networks))}: one set of weights")


# ------------------------------------------------------------------------------------------ export
def write_extra_optimizers(proto: Any, project: Project, ipe: Optional[int], unsupported: List[str],
                           notes: List[str], main_params: Dict[str, Any]) -> None:
    """Append every network besides Main (Main is written already) and each extra optimizer."""

    written: Dict[str, Dict[str, Any]] = {MAIN_NETWORK: main_params}
    for name in project.networks:
        view = dataclasses.replace(project, network=network_named(project, name))
        info = infer_network(view.network)
        if info.errors:
            raise InteropError(f"network '{name}' has problems, fix them before exporting:\n" + info.error_text())
        writer = NetworkWriter(proto, view, info)
        written[name] = writer.write(name, list(info.order), "train", int(project.config.batch_size))
        written[name]["owner"] = writer.param_owner
        if name not in {e.network for e in project.optimizers} and any(la.lr_multipliers for la in view.network.layers):
            unsupported.append(f"network '{name}': no optimizer trains it, so its learning-rate multipliers have no "
                               "place in the file (an optimizer's parameter variables hold them)")
    for entry in project.optimizers:
        view = dataclasses.replace(project, network=network_named(project, entry.network), optimizer=entry.optimizer)
        result = written[entry.network]
        o = proto.optimizer.add()
        o.name, o.network_name = entry.name, entry.network
        o.dataset_name.append("Validation" if entry.dataset == "validation" else "Training")
        o.update_interval = int(entry.optimizer.update_interval)
        o.start_iter, o.end_iter = int(entry.start_iteration), int(entry.end_iteration)
        write_solver(o.solver, view, ipe, unsupported, notes)
        write_optimizer_variables(o, view.network, infer_network(view.network), result, result.get("owner", {}))


# ------------------------------------------------------------------------------------------ executors
def read_executors(proto: Any, main_proto: Any, project: Project, notes: List[str]) -> None:
    """The file's executors that evaluate otherwise than once through the runtime network (NumEvaluations,
    repeat evaluation type, another network) become ``Project.executors``; the default one is implied."""

    derived = {main_proto.name, "MainValidation", "MainRuntime"}
    for e in proto.executor:
        network = e.network_name
        if network in derived or network.endswith("Runtime") and network not in project.networks:
            network = MAIN_NETWORK
        elif network not in project.networks:
            notes.append(f"executor '{e.name}' runs network '{network}', which was not imported; it runs Main")
            network = MAIN_NETWORK
        ex = Executor(name=e.name or "Executor", network=network, num_evaluations=max(1, int(e.num_evaluations or 1)),
                      repeat_evaluation_type=e.repeat_evaluation_type or "mean")
        if (ex.network, ex.num_evaluations, ex.repeat_evaluation_type) != (MAIN_NETWORK, 1, "mean"):
            project.executors.append(ex)


def write_executor_settings(e: Any, project: Project, unsupported: List[str]) -> None:
    """The runtime executor's name, NumEvaluations and repeat type from the project's first executor."""
    e.name, e.num_evaluations, e.repeat_evaluation_type = "Executor", 1, "mean"
    if not project.executors:
        return
    ex = project.executors[0]
    e.name, e.num_evaluations, e.repeat_evaluation_type = ex.name, int(ex.num_evaluations), ex.repeat_evaluation_type
    if ex.network != MAIN_NETWORK:
        unsupported.append(f"executor '{ex.name}' runs network '{ex.network}': the file's executor runs the runtime "
                           "network of Main")
    if len(project.executors) > 1:
        unsupported.append("executors " + ", ".join(x.name for x in project.executors[1:]) + ": only the first is "
                           "written")
