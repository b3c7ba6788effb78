"""NNC desktop files (.sdcproj) written for tests: a one-network project from a list of layers (with side-pin links
and datasets), and the tiny NNC sample with its solver lines replaced."""
from __future__ import annotations

import shutil
from typing import List, Sequence

from .paths import INTEROP_DATA


def sdcproj_text(layers, datasets: Sequence[str] = ()) -> str:
    """A one-network .sdcproj from (name, type, {property: value}, [input names]) in link order. An input written
    ``name:pin`` links to that NNC pin (Sub2's R is pin 1); ``datasets`` are CSV paths ([Dataset_i], the first is
    the training set)."""
    ids = {name: i for i, (name, *_rest) in enumerate(layers)}
    out = ["[Global]", "NumNetwork=1", "Network_0=Main", "[Main_Network_Global]", f"NumLayer={len(layers)}"]
    links = [(ids[src.split(":")[0]], ids[name], int(src.split(":")[1]) if ":" in src else 0)
             for name, _t, _p, inputs in layers for src in inputs]
    out.append(f"NumLink={len(links)}")
    for i, (name, ltype, props, _inputs) in enumerate(layers):
        out += [f"[Main_Layer_{i}]", f"ID={i}", f"Type={ltype}", f"Position_0={20 * i}", "Position_1=0",
                "Property_0_Name=Name", f"Property_0_Value={name}"]
        for k, (pn, pv) in enumerate(props.items(), start=1):
            out += [f"Property_{k}_Name={pn}", f"Property_{k}_Value={pv}"]
        out.append(f"NumProperty={len(props) + 1}")
    for i, (src, dst, pin) in enumerate(links):
        out += [f"[Main_Link_{i}]", f"ID={i}", f"SourceLayerID={src}", "SourcePinIndex=0", f"DestLayerID={dst}",
                f"DestPinIndex={pin}"]
    if datasets:
        out += ["[Dataset]", f"Num={len(datasets)}", "MainIndex=0"]
        for i, uri in enumerate(datasets):
            out += [f"[Dataset_{i}]", f"Name={'Training' if i == 0 else 'Validation'}", f"URI={uri}", "Shuffle=1",
                    "EnableCache=0", "ImageNormalization=1"]
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
