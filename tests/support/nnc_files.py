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


def nnc_project(folder, networks, rows: int = 32, features: int = 16, classes: int = 3, batch: int = 8,
                name: str = "project") -> str:
    """An NNC desktop project (``<folder>/<name>.sdcproj``) with ``networks`` ({name: layers as for
    ``network_sections``}, Main first), trained by SGD on a generated tabular set (``x`` of ``features``
    columns, label ``y`` of ``classes``; training and validation CSVs beside it) for one epoch; returns its path."""
    from .projects import write_tabular_csv

    folder.mkdir(parents=True, exist_ok=True)
    write_tabular_csv(str(folder / "train.csv"), n=rows, features=features, classes=classes)
    write_tabular_csv(str(folder / "valid.csv"), n=rows // 2, features=features, classes=classes, seed=1)
    lines = ["[Global]", f"NumNetwork={len(networks)}"] + [f"Network_{i}={n}" for i, n in enumerate(networks)]
    for net, layers in networks.items():
        lines += network_sections(net, layers)
    lines += ["[Dataset]", "Num=2", "MainIndex=0",
              "[Dataset_0]", "Name=Training", "URI=train.csv", "Shuffle=1", "EnableCache=0", "ImageNormalization=0",
              "[Dataset_1]", "Name=Validation", "URI=valid.csv", "Shuffle=0", "EnableCache=0",
              "ImageNormalization=0",
              "[Config]", "MaxEpoch=1", "SaveBest=0", f"BatchSize={batch}", "TypeConfig=Float", "MonitorInterval=1",
              "NumOptimizer=1", "NumMonitor=1", "NumExecutor=0",
              "[Optimizer_0]", "Optimizer_Name=Optimizer", "Optimizer_NetworkName=Main",
              "Optimizer_DatasetName=Training", "UpdateInterval=1", "SolverName=Sgd", "SolverParameterNum=1",
              "SolverParameterName_0=LearningRate", "SolverParameter_0=0.1", "WeightDecay=0",
              "[Monitor_0]", "Monitor_Name=valid_error", "Monitor_NetworkName=MainValidation",
              "Monitor_DatasetName=Validation"]
    path = folder / f"{name}.sdcproj"
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    return str(path)


def _conv_block(maps: str = "Maps", kernel: str = "3,3") -> list:
    return [("in", "Input", {"Size": "1,4,4"}, []),
            ("Convolution", "Convolution", {"OutMaps": maps, "KernelShape": kernel, "BorderMode": "same",
                                            "Padding": "*ConvolutionPaddingSize", "W.File": "",
                                            "W.Initializer": "NormalConvolutionGlorot", "W.LRateMultiplier": "1"},
             ["in"]),
            ("ReLU", "ReLU", {}, ["Convolution"])]


def vgg_like_project(folder) -> str:
    """VGG-like (issue 26 item 1): two Units of a ConvBlock network and a Unit of a Head network; the units set
    their inner layers' parameter properties: conv1 ``Convolution.W.InitializerMultiplier=2``, conv2
    ``Convolution.W.LRateMultiplier=0`` (frozen) and a ``Convolution.b.File``, head ``Affine.W.LRateMultiplier``
    and ``Affine.W.Initializer``. ConvBlock declares Argument ``Maps`` and an Argument layer named
    ``Convolution.W.File`` (NNC's parameter-property argument)."""
    main = [("x", "Input", {"Size": "16", "Dataset": "x"}, []),
            ("Reshape", "Reshape", {"OutShape": "1,4,4"}, ["x"]),
            ("conv1", "Unit", {"Input": "1,4,4", "Network": "ConvBlock", "ParameterScope": "conv1", "Output": "4,4,4",
                               "Maps": "4", "Convolution.W.InitializerMultiplier": "2",
                               "Convolution.W.File": "", "CostParameter": "40"}, ["Reshape"]),
            ("conv2", "Unit", {"Input": "4,4,4", "Network": "ConvBlock", "ParameterScope": "conv2",
                               "Output": "4,4,4", "Maps": "4", "Convolution.W.LRateMultiplier": "0",
                               "Convolution.b.File": "pretrained/conv2_b.h5"}, ["conv1"]),
            ("head", "Unit", {"Network": "Head", "Affine.W.LRateMultiplier": "0.5",
                              "Affine.W.Initializer": "NormalAffineHeForward"}, ["conv2"]),
            ("loss", "SoftmaxCrossEntropy", {"T.Dataset": "y"}, ["head"])]
    block = _conv_block() + [("Maps", "Argument", {"Value": "8", "Type": "PInt", "Search": "False"}, []),
                             ("Convolution.W.File", "Argument", {"Value": "", "Type": "File", "Search": "False"}, [])]
    head = [("in", "Input", {"Size": "4,4,4"}, []), ("Affine", "Affine", {"OutShape": "3"}, ["in"]),
            ("Softmax", "Softmax", {}, ["Affine"])]
    return nnc_project(folder, {"Main": main, "ConvBlock": block, "Head": head}, name="vgg_like")


def resnext_like_project(folder) -> str:
    """ResNeXt-like (issue 26 item 2): a ResBlock network whose Argument ``ConvBS`` (Boolean) and ``ConvKernel``
    (PIntArray) reach its layers as the macros ``*ConvBS`` (a BatchNormalization's BatchStat) and ``*ConvKernel``
    (a Convolution's KernelShape, its padding NNC's *ConvolutionPaddingSize); ResBlock passes ``*ConvBS`` on to an
    inner Unit's ``NetworkBS`` (BooleanOrMacro). Main uses ResBlock with kernels 1,1 and 3,3."""
    main = [("x", "Input", {"Size": "16", "Dataset": "x"}, []),
            ("Reshape", "Reshape", {"OutShape": "1,4,4"}, ["x"]),
            ("stem", "Convolution", {"OutMaps": "4", "KernelShape": "1,1"}, ["Reshape"]),
            ("res1", "Unit", {"Network": "ResBlock", "ConvBS": "True", "ConvKernel": "1,1"}, ["stem"]),
            ("res2", "Unit", {"Network": "ResBlock", "ConvBS": "False", "ConvKernel": "3,3"}, ["res1"]),
            ("Affine", "Affine", {"OutShape": "3"}, ["res2"]),
            ("loss", "SoftmaxCrossEntropy", {"T.Dataset": "y"}, ["Affine"])]
    res = [("in", "Input", {"Size": "4,4,4"}, []),
           ("ConvBS", "Argument", {"Value": "True", "Type": "Boolean", "Search": "False"}, []),
           ("ConvKernel", "Argument", {"Value": "3,3", "Type": "PIntArray", "Search": "False"}, []),
           ("Convolution", "Convolution", {"OutMaps": "4", "KernelShape": "*ConvKernel", "BorderMode": "same",
                                           "Padding": "*ConvolutionPaddingSize", "WithBias": "False"}, ["in"]),
           ("BatchNormalization", "BatchNormalization", {"Axes": "1", "BatchStat": "*ConvBS"}, ["Convolution"]),
           ("bn_unit", "Unit", {"Network": "BNReLU", "NetworkBS": "*ConvBS"}, ["BatchNormalization"]),
           ("Add2", "Add2", {}, ["bn_unit", "in"])]
    bn_relu = [("in", "Input", {"Size": "4,4,4"}, []),
               ("NetworkBS", "Argument", {"Value": "True", "Type": "BooleanOrMacro", "Search": "False"}, []),
               ("BatchNormalization", "BatchNormalization", {"Axes": "1", "BatchStat": "*NetworkBS"}, ["in"]),
               ("ReLU", "ReLU", {}, ["BatchNormalization"])]
    return nnc_project(folder, {"Main": main, "ResBlock": res, "BNReLU": bn_relu}, name="resnext_like")


def repeat_by_name_project(folder) -> str:
    """A repeat count given by name (issue 26 item 3): network Stack repeats an Affine+Tanh block ``Times=n``
    times, Argument ``n`` (PInt, value 3); Main runs Stack as a Unit with ``n=2``."""
    main = [("x", "Input", {"Size": "16", "Dataset": "x"}, []),
            ("stack", "Unit", {"Network": "Stack", "n": "2"}, ["x"]),
            ("Affine", "Affine", {"OutShape": "3"}, ["stack"]),
            ("loss", "SoftmaxCrossEntropy", {"T.Dataset": "y"}, ["Affine"])]
    stack = [("in", "Input", {"Size": "16"}, []),
             ("n", "Argument", {"Value": "3", "Type": "PInt", "Search": "False"}, []),
             ("RepeatStart", "RepeatStart", {"Times": "n", "ID": "*Name"}, ["in"]),
             ("Affine", "Affine", {"OutShape": "16"}, ["RepeatStart"]),
             ("Tanh", "Tanh", {}, ["Affine"]),
             ("RepeatEnd", "RepeatEnd", {"ID": "*RepeatStart", "Times": "*RepeatTimes"}, ["Tanh"])]
    return nnc_project(folder, {"Main": main, "Stack": stack}, name="repeat_by_name")


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


def searched_argument_project(folder, search: str = "True", value: str = "8", arg_type: str = "PInt") -> str:
    """An NNC project whose Main network declares Argument ``Units`` (``Search=True``, NNC's per-argument search
    flag, as layer_component/Unit/Argument.txt defines it) that the hidden Affine's OutShape reads as ``*Units``."""
    main = [("x", "Input", {"Size": "16", "Dataset": "x"}, []),
            ("Units", "Argument", {"Value": value, "Type": arg_type, "Search": search}, []),
            ("hidden", "Affine", {"OutShape": "*Units"}, ["x"]),
            ("Tanh", "Tanh", {}, ["hidden"]),
            ("Affine", "Affine", {"OutShape": "3"}, ["Tanh"]),
            ("loss", "SoftmaxCrossEntropy", {"T.Dataset": "y"}, ["Affine"])]
    return nnc_project(folder, {"Main": main}, name="searched_argument")
