"""Networks the layer, interop and repeat-block tests build, and the engine's notion of two networks being
the same: one layer type between Inputs and a loss, one network with every layer type the exporter writes,
a ResNet-like chain of nested repeat blocks."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from nnconsole.engine.interop.common import canonical_params
from nnconsole.engine.layers import get_spec
from nnconsole.engine.project.model import Layer, Network

L = Layer


def single_layer_network(type_: str, params: Dict[str, Any], in_shapes: Sequence[Sequence[int]],
                         prefix: str = "", name: str = "layer") -> List[Layer]:
    """Inputs -> the layer (-> SquaredError against a target Input when the layer is not a loss; a validation
    layer gets a SquaredError on its first input).

    Names are prefixed with ``prefix`` so several such chains can share one network."""
    from nnconsole.engine.network.shapes import infer_network

    layers = [Layer(f"{prefix}in{i}", "Input", params={"shape": list(s), "variable": f"{prefix}in{i}"})
              for i, s in enumerate(in_shapes)]
    layers.append(Layer(f"{prefix}{name}", type_, [f"{prefix}in{i}" for i in range(len(in_shapes))], dict(params)))
    if not get_spec(type_).is_loss:
        info = infer_network(Network(list(layers)))
        out = info.layers[f"{prefix}{name}"].out_shape
        assert out is not None, info.errors
        head = f"{prefix}{name}"
        if out == ():  # one value per sample (BatchDet): a data variable needs a shape, so compare it as (1,)
            layers.append(Layer(f"{prefix}as1", "Reshape", [head], {"shape": [1]}))
            head, out = f"{prefix}as1", (1,)
        layers.append(Layer(f"{prefix}target", "Input", params={"shape": list(out), "variable": f"{prefix}target"}))
        layers.append(Layer(f"{prefix}loss", "SquaredError", [head, f"{prefix}target"]))
    elif get_spec(type_).is_metric:  # a validation layer (TopNError) is not learned from: add a loss
        layers.append(Layer(f"{prefix}target", "Input", params={"shape": list(in_shapes[0]),
                                                                "variable": f"{prefix}target"}))
        layers.append(Layer(f"{prefix}loss", "SquaredError", [f"{prefix}in0", f"{prefix}target"]))
    return layers


def coverage_layers(onnx_friendly: bool = False) -> List[Layer]:
    """One network with every layer type the .nntxt exporter writes (except Embed, which needs integer inputs);
    ``onnx_friendly`` leaves out what nnabla's ONNX converter lacks."""
    layers = [
        L("x", "Input", params={"shape": [1, 8, 8], "variable": "x"}),
        L("c1", "Convolution", ["x"], {"outmaps": 4, "kernel": [3, 3], "pad": [1, 1]}),
        L("bn1", "BatchNormalization", ["c1"]),
        L("r1", "ReLU", ["bn1"]),
        L("p1", "MaxPooling", ["r1"], {"kernel": [2, 2]}),
        L("c2", "Convolution", ["p1"], {"outmaps": 4, "kernel": [3, 3], "pad": [1, 1], "group": 2}),
        L("e2", "ELU", ["c2"]),
        L("a2", "Add2", ["e2", "p1"]),
        L("ap", "AveragePooling", ["a2"], {"kernel": [2, 2], "pad": [1, 1], "including_pad": False}),
        L("gap", "GlobalAveragePooling", ["a2"]),
        L("up", "Unpooling", ["gap"], {"kernel": [3, 3]}),
        L("cat", "Concatenate", ["ap", "up"], {"axis": 0}),
        L("dc", "Deconvolution", ["cat"], {"outmaps": 2, "kernel": [2, 2], "pad": [0, 0]}),
        L("sg", "Sigmoid", ["dc"]),
        L("fl", "Flatten", ["sg"]),
        L("fc1", "Affine", ["fl"], {"out_shape": [12]}),
        L("ln", "LayerNormalization", ["fc1"]),
        L("lk", "LeakyReLU", ["ln"], {"alpha": 0.2}),
        L("dr", "Dropout", ["lk"], {"p": 0.3}),
        L("sl", "Slice", ["dr"], {"start": [2], "stop": [10]}),
        L("sw", "Swish", ["sl"]),
        L("th", "Tanh", ["sl"]),
        L("m2", "Mul2", ["sw", "th"]),
        L("se", "SELU", ["m2"]),
        L("rs", "Reshape", ["se"], {"shape": [2, 4]}),
        L("sm", "Softmax", ["rs"], {"axis": -1}),
        L("fl2", "Reshape", ["sm"], {"shape": [-1]}),
        L("fc2", "Affine", ["fl2"], {"out_shape": [3]}),
        L("y", "Input", params={"shape": [1], "variable": "y"}),
        L("loss", "SoftmaxCrossEntropy", ["fc2", "y"]),
    ]
    if onnx_friendly:  # nnabla's ONNX converter has no LayerNormalization or Swish
        layers = [l for l in layers if l.name not in ("ln", "sw")]
        for l in layers:
            l.inputs = [{"ln": "fc1", "sw": "sl"}.get(s, s) for s in l.inputs]
    return layers


def _conv(name: str, src: str) -> Layer:
    return L(name, "Convolution", [src], {"outmaps": 4, "kernel": [3, 3], "pad": [1, 1]})


def resnet_like() -> Network:
    """Two sequential blocks (a residual block x2, then a block x2 holding a nested block x3); names are free."""
    return Network([
        L("x", "Input", params={"shape": [2, 4, 4], "variable": "x"}), _conv("stem", "x"),
        L("res", "RepeatStart", ["stem"], {"times": 2}), _conv("c1", "res"), L("r1", "ReLU", ["c1"]),
        L("add", "Add2", ["res", "r1"]), L("res end", "RepeatEnd", ["add"]),
        L("outer", "RepeatStart", ["res end"], {"times": 2}), L("inner", "RepeatStart", ["outer"], {"times": 3}),
        _conv("c2", "inner"), L("inner end", "RepeatEnd", ["c2"]), L("t", "Tanh", ["inner end"]),
        L("outer end", "RepeatEnd", ["t"]),
        L("fc", "Affine", ["outer end"], {"out_shape": [3]}), L("y", "Input", params={"shape": [1], "variable": "y"}),
        L("loss", "SoftmaxCrossEntropy", ["fc", "y"])])


# -- the same network, as the engine sees it --------------------------------------------------------------
def effective_initializers(layer: Layer) -> dict:
    """Each weight's initializer: the layer's own, else its type's default."""
    weights = get_spec(layer.type).weights
    return {k: (layer.initializers or {}).get(k) or weights[k] for k in weights}


def effective_params(layer: Layer) -> dict:
    """Checked parameters as the layer computes with them: an empty pooling stride is the kernel, and
    pad/stride/dilation lists of equal values are repeated to the kernel's length (as the registry does)."""
    p = canonical_params(layer)
    if "kernel" in p and layer.type != "Unpooling":
        n = len(p["kernel"])
        if "stride" in p and not p["stride"]:
            p["stride"] = list(p["kernel"])
        for key in ("pad", "stride", "dilation"):
            if key in p and len(p[key]) != n and len(set(p[key])) <= 1:
                p[key] = [p[key][0] if p[key] else 0] * n
    return p


def same_network(a: Network, b: Network) -> None:
    """Equal as the engine sees them: names, types, inputs, checked params, initializers, LR multipliers."""
    from nnconsole.engine.layers.types.structural import _slice_ranges
    from nnconsole.engine.network.shapes import infer_network

    assert [l.name for l in a.layers] == [l.name for l in b.layers]
    info_a, info_b = infer_network(a), infer_network(b)
    for x, y in zip(a.layers, b.layers):
        assert (x.type, x.inputs) == (y.type, y.inputs), x.name
        if x.type == "Slice":  # missing entries mean "whole axis": compare the ranges actually taken
            la, lb = info_a.layers[x.name], info_b.layers[y.name]
            assert _slice_ranges(la.in_shapes[0], la.params) == _slice_ranges(lb.in_shapes[0], lb.params), x.name
        elif x.type == "Reshape":  # a -1 in the shape is written out as the size it stands for
            assert info_a.layers[x.name].out_shape == info_b.layers[y.name].out_shape, x.name
        else:
            assert effective_params(x) == effective_params(y), x.name
        assert effective_initializers(x) == effective_initializers(y), x.name
        assert {k: v for k, v in x.lr_multipliers.items() if v != 1.0} == \
               {k: v for k, v in y.lr_multipliers.items() if v != 1.0}, x.name


def unit_fan_out(levels: int, fan: int = 2, width: int = 8, leaf: Any = None) -> Dict[str, Network]:
    """Networks D0..D<levels>: D0 runs D1 ``fan`` times in a row, D1 runs D2 ``fan`` times ... (fan^levels
    copies of the leaf layer once expanded); the leaf is an Affine of ``width`` unless given."""
    nets = {}
    for i in range(levels):
        layers = [Layer("x", "Input", params={"shape": [width]})]
        prev = "x"
        for k in range(fan):
            layers.append(Layer(f"u{k}", "Unit", [prev], {"network": f"D{i + 1}"}))
            prev = f"u{k}"
        nets[f"D{i}"] = Network(layers)
    nets[f"D{levels}"] = Network([Layer("x", "Input", params={"shape": [width]}),
                                  leaf or Layer("t", "Affine", ["x"], {"out_shape": width})])
    return nets
