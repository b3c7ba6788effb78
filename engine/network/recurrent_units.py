"""NNC's LSTM unit (palette category Unit) expanded into the recurrent layers it is made of, as NNC's own
definition draws it (layer_component/Unit/LSTM.sdcproj): a RecurrentInput cuts the sequence into steps,
each step concatenates x_t with the previous hidden state H, four Affine layers (Affine, IGate, FGate, OGate)
give the candidate (Tanh) and the input, forget and output gates (Sigmoid), the cell C = i * g + f * C_prev,
the hidden state h = o * tanh(C), two Delays (H and C, zero at the first step by default) carry h and C to
the next step, and a RecurrentOutput stacks h over time.

The inner layers are named ``<unit>_<inner>`` (``lstm1_IGate``) and keep their weights under
``<unit's scope>_<inner>/affine/W`` (nnabla scope names cannot nest here); the RecurrentOutput keeps the
unit's name, so the layers after it are unchanged. ``recurrent_unroll`` expands units before it pairs and
unrolls blocks, and reports the unit as one layer.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

from nnconsole.engine.layers.registry import resolve_params
from nnconsole.engine.project.model import Initializer, Layer, Network
from nnconsole.engine.network.shared_params import weight_scope_of

UNIT_TYPES = ("LSTM",)
GATES = ("Affine", "IGate", "FGate", "OGate")


def has_units(network: Network) -> bool:
    return any(layer.type in UNIT_TYPES for layer in network.layers)


def _lstm_layers(unit: Layer) -> List[Layer]:
    p = resolve_params("LSTM", unit.params)
    size, axis = [int(s) for s in p["size"]], int(p["axis"])
    scope = weight_scope_of(unit)

    def n(inner: str) -> str:
        return f"{unit.name}_{inner}"

    def gate(inner: str) -> Layer:
        return Layer(n(inner), "Affine", [n("Concatenate")], {"out_shape": list(size)},
                     initializers={"W": Initializer("NormalAffineGlorot"), "b": Initializer("Constant", value=0.0)},
                     parameter_scope=f"{scope}_{inner}")

    def delay(inner: str, source: str, value: float, generator: str) -> Layer:
        return Layer(n(inner), "Delay", [n(source)], {"size": list(size), "initial_generator": generator,
                                                      "initial_multiplier": float(value)})

    return [
        Layer(n("RecurrentInput"), "RecurrentInput", list(unit.inputs[:1]), {"axis": axis}),
        delay("H", "Mul2_3", p["h_initial_multiplier"], p["h_initial_generator"]),
        delay("C", "Add2", p["c_initial_multiplier"], p["c_initial_generator"]),
        Layer(n("Concatenate"), "Concatenate", [n("RecurrentInput"), n("H")], {"axis": 0}),
        *[gate(g) for g in GATES],
        Layer(n("Tanh"), "Tanh", [n("Affine")]),
        Layer(n("Sigmoid"), "Sigmoid", [n("IGate")]),
        Layer(n("Sigmoid_2"), "Sigmoid", [n("FGate")]),
        Layer(n("Sigmoid_4"), "Sigmoid", [n("OGate")]),
        Layer(n("Mul2"), "Mul2", [n("Sigmoid"), n("Tanh")]),  # i * g
        Layer(n("Mul2_2"), "Mul2", [n("Sigmoid_2"), n("C")]),  # f * C_prev
        Layer(n("Add2"), "Add2", [n("Mul2"), n("Mul2_2")]),  # C
        Layer(n("Tanh_2"), "Tanh", [n("Add2")]),
        Layer(n("Mul2_3"), "Mul2", [n("Sigmoid_4"), n("Tanh_2")]),  # h = o * tanh(C)
        Layer(unit.name, "RecurrentOutput", [n("Mul2_3")], {"axis": axis}, position=unit.position),
    ]


def expand_units(network: Network) -> Tuple[Network, Dict[str, str]]:
    """The network with every unit replaced by its layers, and each inner layer's unit (name -> unit name)."""
    layers: List[Layer] = []
    origin: Dict[str, str] = {}
    for layer in network.layers:
        try:
            inner_layers = _lstm_layers(layer) if layer.type in UNIT_TYPES and len(layer.inputs) == 1 else None
        except ValueError:  # bad parameters: the unit stays whole and its check reports them
            inner_layers = None
        if inner_layers is None:
            layers.append(layer)
            continue
        for inner in inner_layers:
            origin[inner.name] = layer.name
            layers.append(inner)
    return Network(layers=layers), origin
