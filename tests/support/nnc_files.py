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


def repeat_and_shared_layers():
    """Layers (for ``sdcproj_text``) of a network with a repeat block x2 whose two convolutions share one
    ParameterScope."""
    conv = {"OutMaps": 1, "KernelShape": "3,3", "BorderMode": "same", "ParameterScope": "shared"}
    return [("x", "Input", {"Size": "1,4,4", "Dataset": "x"}, []),
            ("RepeatStart", "RepeatStart", {"Times": 2, "ID": "RepeatStart"}, ["x"]),
            ("c1", "Convolution", conv, ["RepeatStart"]), ("c2", "Convolution", conv, ["c1"]),
            ("RepeatEnd", "RepeatEnd", {"ID": "RepeatStart"}, ["c2"]),
            ("fc", "Affine", {"OutShape": 3}, ["RepeatEnd"]),
            ("loss", "SoftmaxCrossEntropy", {"T.Dataset": "y"}, ["fc"])]


def sdcproj_two_networks_text(layers, second: str = "Second") -> str:
    """An .sdcproj whose Main network and a second network ``second`` (trained by a second optimizer) both
    hold ``layers`` (as ``sdcproj_text`` takes them), with NNC's derived MainRuntime listed too."""
    head, rest = sdcproj_text(layers).split("[Main_Network_Global]", 1)
    body = "[Main_Network_Global]" + rest.split("[Config]", 1)[0]
    head = head.replace("NumNetwork=1\r\nNetwork_0=Main",
                        f"NumNetwork=3\r\nNetwork_0=Main\r\nNetwork_1={second}\r\nNetwork_2=MainRuntime")
    config = ["[Config]", "NumOptimizer=2", "MaxEpoch=1", "BatchSize=4", "[Optimizer_0]",
              "Optimizer_Name=Optimizer", "Optimizer_NetworkName=Main", "[Optimizer_1]", "Optimizer_Name=Second",
              f"Optimizer_NetworkName={second}"]
    return head + body + body.replace("[Main_", f"[{second}_") + "\r\n".join(config) + "\r\n"
