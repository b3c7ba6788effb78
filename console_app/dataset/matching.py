"""Which dataset variables the network expects, and whether each CSV provides them (Qt-free).

The network's Input layers name the variables (``params.variable``, else the layer name) and their
shapes; an Input feeding a loss layer's target pin is a "target" (the label), the others "input".
The per-CSV status is "missing" when the header lacks the variable, the loaded shape once the
engine's ``load_dataset`` checked the data against the network, else "in header".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from nnconsole.engine.project.model import Project


@dataclass
class ExpectedVariable:
    """A variable the network reads from the dataset."""

    variable: str
    shape: Tuple[int, ...]
    role: str  # "input" or "target"
    layers: List[str] = field(default_factory=list)


def expected_variables(project: Project) -> List[ExpectedVariable]:
    """Variables of the network's Input layers, in layer order, with shapes from shape inference."""
    from nnconsole.engine.layers import get_spec
    from nnconsole.engine.network.shapes import infer_network

    info = infer_network(project.network)
    layers = {layer.name: layer for layer in project.network.layers}
    targets = set()
    for name in info.loss_layers:
        loss = layers.get(name)
        if loss is not None and len(loss.inputs) > 1 and loss.inputs[1] in layers:
            target = layers[loss.inputs[1]]
            targets.add(str(target.params.get("variable") or target.name))
    found: Dict[str, ExpectedVariable] = {}
    for layer in project.network.layers:
        try:
            spec = get_spec(layer.type)
        except Exception:  # noqa: BLE001 - unknown types are the EDIT tab's business
            continue
        if not spec.is_input:
            continue
        var = str(layer.params.get("variable") or layer.name)
        shape = tuple(info.input_variables.get(var, ()) or tuple(layer.params.get("shape", ())))
        entry = found.setdefault(var, ExpectedVariable(var, shape, "target" if var in targets else "input"))
        entry.layers.append(layer.name)
    return list(found.values())


def shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def variable_status(expected: ExpectedVariable, header: Optional[Sequence[str]],
                    loaded: Optional[Dict[str, Tuple[int, ...]]], load_error: str = "",
                    error_variable: Optional[str] = None) -> Tuple[bool, str]:
    """(ok, text) for one variable in one CSV: header is the CSV's variables (None: no CSV).

    ``load_error`` is the engine's message when loading the CSV failed and ``error_variable`` the
    variable it is about (``DatasetError.variable``): only that variable is marked, unless the error
    is about the file as a whole (no variable), which every variable shares.
    """
    if header is None:
        return False, "no CSV"
    if expected.variable not in header:
        return False, "missing"
    if loaded is not None and expected.variable in loaded:
        return True, f"OK {shape_text(loaded[expected.variable])}"
    if load_error and error_variable in (None, expected.variable):
        return False, "error (see problems)"
    return True, "in header"
