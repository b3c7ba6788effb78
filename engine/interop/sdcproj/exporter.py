"""Export a project as a Neural Network Console desktop project (``.sdcproj``), the inverse of ``sdcproj``.

The network is written as NNC's [Main_Layer_i] / [Main_Link_i] sections with each layer type's NNC
name and properties from its registration (``nnc_properties``, ``to_sdcproj`` for what the table
cannot say); a loss's target Input becomes its ``T.Dataset`` property, as NNC spells it. Datasets,
CONFIG and the optimizer are written as the importer reads them (``sdcproj_settings``), so
project -> .sdcproj -> project gives the same project. What NNC's file cannot hold is reported.
"""
from __future__ import annotations

import os
from typing import Dict, List, Sequence, Set, Tuple

from nnconsole.engine.layers import find_spec, resolve_params
from nnconsole.engine.layers.nnc_values import to_text
from nnconsole.engine.layers.types.inputs import input_generator
from nnconsole.engine.project.model import Comment, Layer, Project, SearchRange
from nnconsole.engine.project.searched_properties import ARGUMENT_VALUE, default_range, property_value, searched_props

from nnconsole.engine.interop import mapping
from nnconsole.engine.interop.report import ExportResult, InteropError
from nnconsole.engine.interop.sdcproj.network import input_pin
from nnconsole.engine.interop.sdcproj.settings_writer import (extra_optimizer_sections, settings_sections,
                                                             structure_search_section)
from nnconsole.engine.atomic import atomic_write

NETWORK = "Main"
NODE_SIZE = ["Position_2=240", "Position_3=48"]  # a layer box's width and height on NNC's canvas, as NNC saves them
# nnconsole initializer name -> NNC's spelling (NNC calls He 'HeForward'), the inverse of the importer's aliases.
_NNC_INITIALIZER = {ours: nnc for nnc, ours in mapping.INITIALIZER_ALIASES.items() if nnc != ours}


def _coordinate(value: float) -> str:
    """A canvas coordinate as NNC writes it (a whole number when it is one)."""
    return str(int(value)) if float(value).is_integer() else to_text(float(value))


def _target_inputs(layers: List[Layer]) -> Tuple[Dict[str, Tuple[str, str, str, float]], Set[str]]:
    """(loss name -> (its target pin, dataset variable, generator or "", multiplier), the Inputs to leave out) for
    losses whose target is an Input layer: NNC reads a loss's target from ``T.Dataset`` (``T.Generator`` when the
    Input generates it). An Input used only as loss targets is left out; one the network also reads (an
    autoencoder's x, its own reconstruction target) stays, linked to those layers."""
    by_name = {layer.name: layer for layer in layers}
    consumers: Dict[str, List[Tuple[str, int]]] = {}
    for layer in layers:
        for k, src in enumerate(layer.inputs):
            consumers.setdefault(src, []).append((layer.name, k))
    out: Dict[str, Tuple[str, str, str, float]] = {}
    for layer in layers:
        spec = find_spec(layer.type)
        if spec is None or not spec.is_loss or len(layer.inputs) < 2:
            continue
        target = by_name.get(layer.inputs[1])
        if target is None or target.type != "Input":
            continue
        pin = "q" if spec.input_names[1:2] == ("q",) else "T"
        out[layer.name] = (pin, str(target.params.get("variable") or target.name),
                           input_generator(target.params), float(target.params.get("generator_multiplier", 1.0)))
    dropped = {layer.inputs[1] for layer in layers if layer.name in out}
    dropped = {name for name in dropped if all(c in out and k == 1 for c, k in consumers.get(name, []))}
    return out, dropped


def layer_properties(layer: Layer, unsupported: List[str]) -> Dict[str, str]:
    """NNC property name -> text for one layer, through its registration (names, kinds, hook)."""
    spec = find_spec(layer.type)
    props: Dict[str, str] = {"Name": layer.name}
    if spec is None:
        unsupported.append(f"layer '{layer.name}': type {layer.type} is not a registered layer type; written "
                           "without properties")
        return props
    if spec.outside_nnc:
        unsupported.append(f"layer '{layer.name}' ({layer.type}): NNC has no such layer ({spec.outside_nnc}), so NNC "
                           "cannot run it; export the project as .nntxt instead")
        return props
    try:
        params = resolve_params(layer.type, layer.params)
    except (KeyError, ValueError):
        params = dict(layer.params)
    done: Set[str] = set()
    for prop, pname in spec.nnc_properties.items():
        if pname in params and pname not in done:
            props[prop] = to_text(params[pname])
            done.add(pname)
    if spec.to_sdcproj is not None:
        props.update(spec.to_sdcproj(params))
        done.update(params)  # the hook writes what the table cannot
    left = [p for p in params if p not in done and params[p] != spec.defaults().get(p)]
    for pname in left:
        unsupported.append(f"layer '{layer.name}' ({layer.type}): parameter {pname}={params[pname]} has no NNC "
                           "property; NNC uses its default")
    _search_flags(layer, props, unsupported)
    if layer.parameter_scope:
        props["ParameterScope"] = layer.parameter_scope
    keys = [k for k in spec.weight_order if k != "b" or params.get("with_bias", True)]
    for key in keys:
        prefix = "" if spec.group == "Parameter" else f"{key}."
        init = layer.initializers.get(key)
        if init is not None:
            props[f"{prefix}Initializer"] = _NNC_INITIALIZER.get(init.type, init.type)
            props[f"{prefix}InitializerMultiplier"] = to_text(
                float(init.value) if init.type == "Constant" else float(init.multiplier))
        if key in layer.lr_multipliers:
            props[f"{prefix}LRateMultiplier"] = to_text(float(layer.lr_multipliers[key]))
    return props


def _search_flags(layer: Layer, props: Dict[str, str], unsupported: List[str]) -> None:
    """The layer's searched properties in NNC's terms: an Argument's searched value is its ``Search=True`` (NNC
    keeps no range: one other than the one made from the value on import is named as lost); NNC has no flag for
    any other property (its structure search varies each layer's SearchParameter properties itself), so those
    are named as not written."""
    searched = searched_props(layer)
    if layer.type == "Argument" and ARGUMENT_VALUE in searched:
        props["Search"] = "True"
        given = layer.search.get(ARGUMENT_VALUE)
        if given is not None and given != default_range(property_value(layer, ARGUMENT_VALUE)):
            unsupported.append(f"Argument '{layer.name}': its search range ({_range_words(given)}) has no place in an "
                               "NNC project, which keeps only the Search flag; the flag is written")
        searched = [p for p in searched if p != ARGUMENT_VALUE]
    for prop in searched:
        unsupported.append(f"layer '{layer.name}': property {prop} is marked searched "
                           f"({_range_words(layer.search[prop])}), which an NNC project cannot hold (NNC's structure "
                           "search varies the sizes it chooses itself); not written")


def _range_words(r: SearchRange) -> str:
    return f"one of {r.choices}" if r.kind == "choice" else f"{r.kind} {r.low:g}..{r.high:g}"


def _comment_sections(comments: Sequence[Comment], first_id: int, network: str) -> List[str]:
    """NNC's Comment layers for the network's canvas notes (a line break is written as ``\\n``)."""
    body: List[str] = []
    for k, note in enumerate(comments, start=first_id):
        x, y = note.position if note.position is not None else (0.0, 0.0)
        body += [f"[{network}_Layer_{k}]", f"ID={k}", "Type=Comment", f"Position_0={_coordinate(x)}",
                 f"Position_1={_coordinate(y)}"] + NODE_SIZE
        body += ["Property_0_Name=Comment", "Property_0_Value=" + note.text.replace("\r\n", "\n").replace(
            "\r", "\n").replace("\n", "\\n"), "NumProperty=1"]
    return body


def network_sections(layers: List[Layer], unsupported: List[str], network: str = NETWORK,
                     comments: Sequence[Comment] = ()) -> List[str]:
    """The [<network>_Network_Global], [<network>_Layer_i] and [<network>_Link_i] lines of a network, its
    canvas notes (``comments``) as NNC's Comment layers after the layers."""
    targets, dropped = _target_inputs(layers)
    kept = [layer for layer in layers if layer.name not in dropped]
    ids = {layer.name: i for i, layer in enumerate(kept)}
    links: List[Tuple[int, int, int]] = []
    body: List[str] = []
    for i, layer in enumerate(kept):
        spec = find_spec(layer.type)
        props = layer_properties(layer, unsupported)
        inputs = list(layer.inputs)
        if layer.name in targets:
            pin, variable, generator, multiplier = targets[layer.name]
            props[f"{pin}.Dataset"] = variable
            if generator:  # NNC's T.Generator: the loss generates its target (a GAN's constant 1 and 0)
                props[f"{pin}.Generator"] = generator
                props[f"{pin}.GeneratorMultiplier"] = to_text(multiplier)
            inputs = inputs[:1]
        for k, src in enumerate(inputs):
            pin = input_pin(spec.nnc_name if spec else layer.type, k)
            links.append((ids[src], i, pin))
        x, y = layer.position if layer.position is not None else (0.0, 80.0 * i)
        body += [f"[{network}_Layer_{i}]", f"ID={i}", f"Type={spec.nnc_name if spec else layer.type}",
                 f"Position_0={_coordinate(x)}", f"Position_1={_coordinate(y)}"] + NODE_SIZE
        for k, (name, value) in enumerate(props.items()):
            if "\n" in value or "\r" in value:  # one INI line per value: a line break would start a new key
                raise InteropError(f"layer '{layer.name}': property {name} holds a line break, which an NNC "
                                   "project file cannot hold; remove it from the value")
            body += [f"Property_{k}_Name={name}", f"Property_{k}_Value={value}"]
        body.append(f"NumProperty={len(props)}")
    for k, (src, dst, pin) in enumerate(links):
        body += [f"[{network}_Link_{k}]", f"ID={k}", f"SourceLayerID={src}", "SourcePinIndex=0",
                 f"DestLayerID={dst}", f"DestPinIndex={pin}"]
    body += _comment_sections(comments, len(kept), network)
    return [f"[{network}_Network_Global]", f"NumLayer={len(kept) + len(comments)}", f"NumLink={len(links)}"] + body


def extra_network_sections(project: Project, unsupported: List[str]) -> List[str]:
    """[<Name>_Network_Global], layers and links of each network besides Main."""
    lines: List[str] = []
    for name, network in project.networks.items():
        lines += network_sections(network.layers, unsupported, network=name, comments=network.comments)
    return lines


def project_text(project: Project, out_dir: str, unsupported: List[str], notes: List[str]) -> str:
    """The whole .sdcproj text for ``project`` (dataset paths relative to ``out_dir``)."""

    names = [NETWORK] + list(project.networks)  # Main, then the project's other networks (issue 17)
    lines = ["[Engine]", "SDeepEngineType=NNabla", "[Global]", f"NumNetwork={len(names)}"]
    lines += [f"Network_{i}={name}" for i, name in enumerate(names)]
    if project.description:
        lines += ["[Description]", "Text=" + project.description.replace("\n", "\\n")]
    lines += network_sections(project.network.layers, unsupported, comments=project.network.comments)
    lines += extra_network_sections(project, unsupported)
    settings = settings_sections(project, out_dir, unsupported, notes)
    count = f"NumOptimizer={1 + len(project.optimizers)}"
    lines += [count if line == "NumOptimizer=1" else line for line in settings]
    lines += extra_optimizer_sections(project, unsupported)
    lines += structure_search_section(project, notes)
    return "\r\n".join(lines) + "\r\n"


def export_sdcproj(project: Project, path: str) -> ExportResult:
    """Write ``project`` to ``path`` as an NNC desktop project (atomically; ordinary file permissions)."""

    unsupported: List[str] = []
    notes: List[str] = []
    out_dir = os.path.dirname(os.path.abspath(path))
    text = project_text(project, out_dir, unsupported, notes)
    atomic_write(path, text.encode("utf-8"))
    return ExportResult(path=os.path.abspath(path), unsupported=unsupported, notes=notes)
