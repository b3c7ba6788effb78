"""NNC-style networks for the canvas layout tests (issue 28, item 13), as ``sdcproj_text`` layer lists
((name, type, {property: value}, [inputs])), written into an .sdcproj and imported through the real import
(``import_sdcproj_project``): a ResNet of 300+ layers with skip connections, a network of nested repeat
blocks with a branch beside them, an LSTM cell (recurrent loops) and a GoogLeNet-like stack of
four-branch inception modules. The files place the layers as NNC's editor does (``nnc_positions``: NNC's
240x48 boxes on its grid, a layer 60 units below its input, branches 240 units apart), which at the
canvas's node size makes boxes touch: what the canvas shows is the importer's layout."""
from __future__ import annotations

import re
from typing import Dict, List, Tuple

from nnconsole.engine.interop.files import import_file
from nnconsole.engine.project.io import save_project

from .nnc_files import sdcproj_text

CONV = {"OutMaps": 2, "KernelShape": "3,3", "BorderMode": "same", "Padding": "1,1"}
POINT = {"OutMaps": 2, "KernelShape": "1,1"}


def resnet_layers(blocks: int = 60) -> List[tuple]:
    """x -> stem -> ``blocks`` residual blocks (conv, ReLU, conv, Add2 with the block's input, ReLU) -> loss:
    5 layers a block, 304 layers for 60 blocks."""
    out = [("x", "Input", {"Size": "1,4,4", "Dataset": "x"}, []), ("stem", "Convolution", CONV, ["x"])]
    last = "stem"
    for i in range(blocks):
        out += [(f"c{i}a", "Convolution", CONV, [last]), (f"r{i}a", "ReLU", {}, [f"c{i}a"]),
                (f"c{i}b", "Convolution", CONV, [f"r{i}a"]), (f"add{i}", "Add2", {}, [last, f"c{i}b"]),
                (f"r{i}", "ReLU", {}, [f"add{i}"])]
        last = f"r{i}"
    return out + [("fc", "Affine", {"OutShape": 3}, [last]), ("loss", "SoftmaxCrossEntropy", {"T.Dataset": "y"},
                                                            ["fc"])]


def repeat_layers() -> List[tuple]:
    """A residual block x3 (its skip inside the block), then a block x2 holding a nested block x2, and a
    branch from the stem beside both blocks that joins after them."""
    return [
        ("x", "Input", {"Size": "1,4,4", "Dataset": "x"}, []), ("stem", "Convolution", CONV, ["x"]),
        ("res", "RepeatStart", {"Times": 3, "ID": "res"}, ["stem"]), ("c1", "Convolution", CONV, ["res"]),
        ("r1", "ReLU", {}, ["c1"]), ("add", "Add2", {}, ["res", "r1"]), ("res_end", "RepeatEnd", {"ID": "res"}, ["add"]),
        ("outer", "RepeatStart", {"Times": 2, "ID": "outer"}, ["res_end"]),
        ("inner", "RepeatStart", {"Times": 2, "ID": "inner"}, ["outer"]), ("c2", "Convolution", CONV, ["inner"]),
        ("inner_end", "RepeatEnd", {"ID": "inner"}, ["c2"]), ("t", "Tanh", {}, ["inner_end"]),
        ("outer_end", "RepeatEnd", {"ID": "outer"}, ["t"]),
        ("side", "Convolution", CONV, ["stem"]), ("join", "Add2", {}, ["outer_end", "side"]),
        ("fc", "Affine", {"OutShape": 3}, ["join"]), ("loss", "SoftmaxCrossEntropy", {"T.Dataset": "y"}, ["fc"])]


def lstm_layers() -> List[tuple]:
    """An LSTM cell as NNC's editor builds one: four gates from [x_t, h_{t-1}], the cell state and the
    output fed back through Delay layers (recurrent loops), unrolled over 6 steps."""
    gate = {"OutShape": "8"}
    delay = {"Size": "8", "Initial.Dataset": "c", "Initial.Generator": "Constant",
             "Initial.GeneratorMultiplier": "0.0", "ID": "RecurrentInput"}
    return [
        ("x", "Input", {"Size": "6,2", "Dataset": "x"}, []),
        ("RecurrentInput", "RecurrentInput", {"Axis": "0", "ID": "RecurrentInput"}, ["x"]),
        ("xh", "Concatenate", {"Axis": "0"}, ["RecurrentInput", "h_prev"]),
        ("gate_i", "Affine", gate, ["xh"]), ("gate_f", "Affine", gate, ["xh"]), ("gate_o", "Affine", gate, ["xh"]),
        ("cand", "Affine", gate, ["xh"]),
        ("i", "Sigmoid", {}, ["gate_i"]), ("f", "Sigmoid", {}, ["gate_f"]), ("o", "Sigmoid", {}, ["gate_o"]),
        ("g", "Tanh", {}, ["cand"]),
        ("keep", "Mul2", {}, ["f", "c_prev"]), ("write", "Mul2", {}, ["i", "g"]), ("c", "Add2", {}, ["keep", "write"]),
        ("c_tanh", "Tanh", {}, ["c"]), ("h", "Mul2", {}, ["o", "c_tanh"]),
        ("h_prev", "Delay", delay, ["h"]), ("c_prev", "Delay", delay, ["c"]),
        ("RecurrentOutput", "RecurrentOutput", {"Axis": "0", "ID": "RecurrentInput"}, ["h"]),
        ("fc", "Affine", {"OutShape": "6,1"}, ["RecurrentOutput"]),
        ("loss", "SquaredError", {"T.Dataset": "y"}, ["fc"])]


def inception_layers(modules: int = 3) -> List[tuple]:
    """x -> stem -> ``modules`` inception modules (1x1; 1x1 -> 3x3; 1x1 -> 5x5; 3x3 max pool -> 1x1, the four
    concatenated) -> loss."""
    out = [("x", "Input", {"Size": "1,8,8", "Dataset": "x"}, []), ("stem", "Convolution", CONV, ["x"])]
    last = "stem"
    five = {"OutMaps": 2, "KernelShape": "5,5", "BorderMode": "same", "Padding": "2,2"}
    pool = {"KernelShape": "3,3", "Strides": "1,1", "Padding": "1,1", "IgnoreBorder": "True"}
    for m in range(modules):
        out += [(f"m{m}_1x1", "Convolution", POINT, [last]),
                (f"m{m}_3r", "Convolution", POINT, [last]), (f"m{m}_3x3", "Convolution", CONV, [f"m{m}_3r"]),
                (f"m{m}_5r", "Convolution", POINT, [last]), (f"m{m}_5x5", "Convolution", five, [f"m{m}_5r"]),
                (f"m{m}_pool", "MaxPooling", pool, [last]), (f"m{m}_pp", "Convolution", POINT, [f"m{m}_pool"]),
                (f"m{m}_cat", "Concatenate", {"Axis": "0"}, [f"m{m}_1x1", f"m{m}_3x3", f"m{m}_5x5", f"m{m}_pp"])]
        last = f"m{m}_cat"
    return out + [("fc", "Affine", {"OutShape": 3}, [last]), ("loss", "SoftmaxCrossEntropy", {"T.Dataset": "y"},
                                                            ["fc"])]


SAMPLES: Dict[str, object] = {"resnet": resnet_layers, "repeat": repeat_layers, "lstm": lstm_layers,
                              "inception": inception_layers}


def nnc_positions(layers: List[tuple]) -> List[Tuple[int, int]]:
    """Where NNC's editor puts each layer: 60 units below its lowest input (a source at the top), the layers of
    one row side by side 240 units apart (NNC's box width: no room between them)."""
    row: Dict[str, int] = {}
    taken: Dict[int, int] = {}
    out = []
    for name, _type, _props, inputs in layers:
        row[name] = max((row[s] + 1 for s in inputs if s in row), default=0)
        column = taken.get(row[name], 0)
        taken[row[name]] = column + 1
        out.append((10 + 240 * column, 10 + 60 * row[name]))
    return out


def sdcproj_nnc_text(layers: List[tuple]) -> str:
    """``sdcproj_text`` with the layers where NNC's editor would have put them (``nnc_positions``)."""
    positions = iter(nnc_positions(layers))

    def place(match: "re.Match") -> str:
        x, y = next(positions)
        return f"Position_0={x}\r\nPosition_1={y}"

    return re.sub(r"Position_0=\d+\r\nPosition_1=\d+", place, sdcproj_text(layers))


def import_sdcproj_project(folder, name: str) -> str:
    """Write sample ``name`` as an .sdcproj in ``folder``, import it as NNC users do and save the project;
    returns the project file's path."""
    source = folder / f"{name}.sdcproj"
    source.write_text(sdcproj_nnc_text(SAMPLES[name]()), newline="")
    result = import_file(str(source))
    path = str(folder / f"{name}.yaml")
    save_project(result.project, path, backup=False)
    return path
