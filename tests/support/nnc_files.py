"""NNC desktop files (.sdcproj) written for tests: a one-network project from a list of layers, and the tiny
NNC sample with its solver lines replaced."""
from __future__ import annotations

import shutil
from typing import List

from .paths import INTEROP_DATA


def sdcproj_text(layers) -> str:
    """A one-network .sdcproj from (name, type, {property: value}, [input names]) in link order."""
    ids = {name: i for i, (name, *_rest) in enumerate(layers)}
    out = ["[Global]", "NumNetwork=1", "Network_0=Main", "[Main_Network_Global]", f"NumLayer={len(layers)}"]
    links = [(ids[src], ids[name]) for name, _t, _p, inputs in layers for src in inputs]
    out.append(f"NumLink={len(links)}")
    for i, (name, ltype, props, _inputs) in enumerate(layers):
        out += [f"[Main_Layer_{i}]", f"ID={i}", f"Type={ltype}", f"Position_0={20 * i}", "Position_1=0",
                "Property_0_Name=Name", f"Property_0_Value={name}"]
        for k, (pn, pv) in enumerate(props.items(), start=1):
            out += [f"Property_{k}_Name={pn}", f"Property_{k}_Value={pv}"]
        out.append(f"NumProperty={len(props) + 1}")
    for i, (src, dst) in enumerate(links):
        out += [f"[Main_Link_{i}]", f"ID={i}", f"SourceLayerID={src}", "SourcePinIndex=0", f"DestLayerID={dst}",
                "DestPinIndex=0"]
    return "\r\n".join(out + ["[Config]", "MaxEpoch=1", "BatchSize=4"]) + "\r\n"


def sdcproj_with_optimizer(tmp_path, lines: List[str]) -> str:
    """The tiny NNC sample (data copied beside it) with its [Optimizer_0] solver lines replaced."""
    folder = tmp_path / "nnc"
    shutil.copytree(INTEROP_DATA, folder)
    path = folder / "nnc_tiny_cnn.sdcproj"
    text = path.read_text()
    head, rest = text.split("[Optimizer_0]\n", 1)
    body, tail = rest.split("[Monitor_0]", 1)
    kept = [line for line in body.splitlines()
            if not line.startswith(("Solver", "WeightDecay", "LearningRate"))]
    path.write_text(head + "[Optimizer_0]\n" + "\n".join(kept + lines) + "\n[Monitor_0]" + tail)
    return str(path)


def network_sections(net: str, layers) -> List[str]:
    """One network of an .sdcproj from (name, type, {property: value}, [inputs]) in link order; an input is a
    layer name (NNC's main pin 0) or (name, pin) for a side pin (Sub2's R, a loss's T or q: pin 1)."""
    ids = {name: i for i, (name, *_rest) in enumerate(layers)}
    links = []
    for name, _t, _p, inputs in layers:
        for src in inputs:
            src, pin = (src, 0) if isinstance(src, str) else src
            links.append((ids[src], ids[name], pin))
    out = [f"[{net}_Network_Global]", f"NumLayer={len(layers)}", f"NumLink={len(links)}"]
    for i, (name, ltype, props, _inputs) in enumerate(layers):
        out += [f"[{net}_Layer_{i}]", f"ID={i}", f"Type={ltype}", f"Position_0={20 * i}", "Position_1=0",
                "Property_0_Name=Name", f"Property_0_Value={name}"]
        for k, (pn, pv) in enumerate(props.items(), start=1):
            out += [f"Property_{k}_Name={pn}", f"Property_{k}_Value={pv}"]
        out.append(f"NumProperty={len(props) + 1}")
    for i, (src, dst, pin) in enumerate(links):
        out += [f"[{net}_Link_{i}]", f"ID={i}", f"SourceLayerID={src}", "SourcePinIndex=0", f"DestLayerID={dst}",
                f"DestPinIndex={pin}"]
    return out


def sdcproj_networks_text(networks: dict, tail: List[str]) -> str:
    """A several-network .sdcproj: {network name: layers as ``network_sections`` takes them}, then ``tail``
    (the [Dataset], [Config], [Optimizer_i] ... lines)."""
    out = ["[Global]", f"NumNetwork={len(networks)}"] + [f"Network_{i}={n}" for i, n in enumerate(networks)]
    for name, layers in networks.items():
        out += network_sections(name, layers)
    return "\r\n".join(out + list(tail)) + "\r\n"


def optimizer_section(index: int, name: str, network: str, alpha: float = 0.001) -> List[str]:
    """NNC's [Optimizer_<index>] lines: ``network`` trained on Training by Adam (Alpha ``alpha``) every iteration."""
    return [f"[Optimizer_{index}]", "RangeFrom=-1", "RangeTo=-1", "RangeUnit=0", f"Optimizer_Name={name}",
            f"Optimizer_NetworkName={network}", "Optimizer_DatasetName=Training", "UpdateInterval=1",
            "SolverName=Adam", "SolverParameterNum=1", "SolverParameterName_0=Alpha", f"SolverParameter_0={alpha}",
            "WeightDecay=0", "LearningRateScheduler=Exponential", "LearningRateMultiplier=1",
            "LearningRateUpdateInterval=1", "LearningRateUpdateIntervalUnit=0"]
