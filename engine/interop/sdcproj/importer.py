"""Import a Neural Network Console desktop project (``.sdcproj``, an INI file) as a project.

Layout of the file, as NNC writes it::

    [Global]               NumNetwork, Network_0=Main, Network_1=MainValidation, ...
    [Main_Network_Global]  NumLayer, NumLink
    [Main_Layer_3]         ID, Type, Position_0..3, NumProperty, Property_k_Name / Property_k_Value
    [Main_Link_2]          SourceLayerID, SourcePinIndex, DestLayerID, DestPinIndex
    [Dataset]              Num, MainIndex;  [Dataset_0] Name, URI, Shuffle, EnableCache, ImageNormalization
    [Config]               MaxEpoch, SaveBest, BatchSize, TypeConfig, MonitorInterval, NumOptimizer, ...
    [Optimizer_0]          Optimizer_NetworkName, Optimizer_DatasetName, SolverName, SolverParameter*,
                           WeightDecay, LearningRateScheduler, LearningRateMultiplier,
                           LearningRateUpdateInterval(+Unit),
                           LearningRateWarmupScheduler, LearningRateWarmupLength(+Unit), UpdateInterval, ...

Property values such as ``*Name`` or ``*KernelShape`` mean "the value of that property". Loss layers
read their target from the dataset variable named by ``T.Dataset`` (a link in nnconsole: an Input
layer is added). Layer positions are kept for the EDIT canvas; ``W.Initializer``,
``W.InitializerMultiplier`` and ``W.LRateMultiplier`` (and the same for b, beta, gamma) become the
layer's initializers and learning-rate multipliers. The networks the optimizers train are imported
(the others' in ``sdcproj_optimizers``); nnconsole derives the validation and runtime networks.

The import runs the stages every importer shares (read -> graph -> mapping -> report -> project):
``sdcproj_read`` parses the INI file, ``sdcproj_network`` turns the trained network into graph nodes
with registry parameters, ``pipeline`` runs the steps all formats share (no-ops, repeats, loss
targets, layers, shared parameters), ``sdcproj_settings`` maps datasets, CONFIG and optimizer, and
this module assembles the project and its report.
"""
from __future__ import annotations

import os
from typing import Dict, List

from nnconsole.engine.project.model import Network, Project
from nnconsole.engine.project.searched_properties import flagged_properties, give_argument_ranges

from nnconsole.engine.interop.archive import read_bounded
from nnconsole.engine.interop.common import csv_rows, iterations_per_epoch
from nnconsole.engine.interop.pipeline import ImportedGraph, comments_follow_layout, graph_to_layers, parameter_names
from nnconsole.engine.interop.report import ImportResult, InteropError
from nnconsole.engine.interop.sdcproj.network import network_comments, network_nodes
from nnconsole.engine.interop.nntxt.optimizers import derived_network
from nnconsole.engine.interop.sdcproj.optimizers import read_extra_optimizers
from nnconsole.engine.interop.sdcproj.reader import SdcReader, parse_ini
from nnconsole.engine.interop.sdcproj.settings import read_config, read_datasets, read_optimizer, read_structure_search


# ------------------------------------------------------------------------------------------ the import
def _searched_arguments(project: Project, notes: List[str]) -> None:
    """NNC's Argument ``Search=True``: the Argument's value is searched. NNC's file keeps only that flag (its
    Argument has Value, Type and Search; layer_component/Unit/Argument.txt), so the range is made from the value
    and said in the report; an Argument whose value gives none (text, a file) is named."""
    for name in give_argument_ranges(project):
        notes.append(f"Argument '{name}' is marked Search but its value gives no range to search; it is not searched "
                     "until you give one (EDIT: its Value's Search checkbox)")
    for flag in flagged_properties(project):
        p = flag.param
        if p is not None:
            span = f"one of {p.choices}" if p.kind == "choice" else f"{p.low:g}..{p.high:g} ({p.kind})"
            notes.append(f"Argument '{flag.layer}' of network {flag.network} is marked Search: 'nnconsole search' "
                         f"varies its value over {span}, a range made from its value since NNC keeps none; "
                         "change it in EDIT (the Value's Search checkbox and range)")


def _unit_library(reader: SdcReader, networks: List[str], main: str) -> Dict[str, Network]:
    """The file's other networks (those Unit layers use), converted quietly: only to infer the shapes of the
    units' outputs (the losses' targets); ``read_extra_optimizers`` imports and reports them."""
    library: Dict[str, Network] = {}
    for name in networks:
        if name != main and not derived_network(name):
            scratch: List[str] = []
            nodes, targets, times = network_nodes(reader, name, scratch, scratch)
            library[name] = Network(layers=graph_to_layers(ImportedGraph(nodes, times, targets), scratch, scratch,
                                                           reader.path)[0])
    return library


def import_sdcproj(path: str) -> ImportResult:
    """Import an NNC desktop project file; see the module docstring."""
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise InteropError(f"{path}: file not found; check the path")
    raw = read_bounded(path)
    for enc in ("utf-8-sig", "cp932", "latin-1"):
        try:
            text = raw.decode(enc)
            break
        except UnicodeDecodeError:
            continue
    sections = parse_ini(text)
    reader = SdcReader(path, sections)
    unsupported: List[str] = []
    notes: List[str] = []

    glob = reader.section("Global", required=False)
    networks = []
    if glob is not None:
        networks = [(glob.get(f"Network_{i}") or "").strip()
                    for i in range(reader.count(glob, "NumNetwork", 0, len(glob.values), "keys in this section"))]
    networks = networks or ["Main"]
    config_s = reader.section("Config", required=False)
    n_opt = reader.count(config_s, "NumOptimizer", 1, reader.section_count, "sections")
    opt_s = reader.section("Optimizer_0", required=False)
    wanted = (opt_s.get("Optimizer_NetworkName") or "").strip() if opt_s else ""
    network = wanted if wanted in networks else ("Main" if "Main" in networks else networks[0])
    trained = {(s.get("Optimizer_NetworkName") or "").strip() for s in
               (reader.section(f"Optimizer_{i}", required=False) for i in range(1, n_opt)) if s is not None}
    others = [n for n in networks if n != network and n not in trained and derived_network(n)]  # sdcproj_optimizers
    if others:
        notes.append(f"networks {', '.join(others)} were not imported: nnconsole derives the validation and "
                     "runtime networks from the training network")

    nodes, targets, times = network_nodes(reader, network, unsupported, notes)
    library = _unit_library(reader, networks, network) if any(n.type == "Unit" for n in nodes) else None
    layers, nodes = graph_to_layers(ImportedGraph(nodes, times, targets), unsupported, notes, path, library)
    parameter_names(nodes, unsupported, copies_initialized=False)

    train_name = (opt_s.get("Optimizer_DatasetName") or "").strip() if opt_s else ""
    datasets = read_datasets(reader, train_name, notes, unsupported)
    config = read_config(reader, unsupported)
    ipe = iterations_per_epoch(csv_rows(datasets.training), config.batch_size)
    optimizer = read_optimizer(reader, opt_s, ipe, unsupported, notes)
    desc = reader.section("Description", required=False)
    description = (desc.get("Text") or "").replace("\\n", "\n") if desc else ""
    project = Project(name=os.path.splitext(os.path.basename(path))[0], description=description,
                      network=Network(layers=layers, comments=comments_follow_layout(
                          network_comments(reader, network), nodes, layers)), datasets=datasets,
                      config=config, optimizer=optimizer)
    read_extra_optimizers(reader, project, n_opt, network, networks, ipe, unsupported, notes)
    project.search = read_structure_search(reader, notes)
    _searched_arguments(project, notes)
    return ImportResult(project=project, unsupported=unsupported, notes=notes, initial_parameters_path=None,
                        source=path)
