"""A Delay whose first value comes from a Normal or Uniform generator (NNC's Initial.Generator, issue 26 item 5):
the unrolled network reads it from a generated Input, which training fills like any generated input."""
from __future__ import annotations

import pytest

from nnconsole.engine.network.shapes import GeneratedInput, infer_network
from nnconsole.engine.project.model import Layer as L
from nnconsole.engine.project.model import Network


def _elman(**delay) -> Network:
    return Network([
        L("x", "Input", params={"shape": [5, 3]}),
        L("r", "RecurrentInput", ["x"]),
        L("cat", "Concatenate", ["r", "h"]),
        L("fc", "Affine", ["cat"], {"out_shape": [4]}),
        L("h", "Delay", ["fc"], {"size": [4], **delay}),
        L("o", "RecurrentOutput", ["fc"]),
        L("y", "Input", params={"shape": [5, 4]}),
        L("loss", "SquaredError", ["o", "y"]),
    ])


@pytest.mark.parametrize("kind", ["Normal", "Uniform"])
def test_a_random_initial_value_is_a_generated_input(kind):
    info = infer_network(_elman(initial_generator=kind, initial_multiplier=0.3))
    assert info.errors == []
    assert info.generated_variables == {"h_initial": GeneratedInput(kind, 0.3, (4,))}
    assert set(info.input_variables) == {"x", "y"}  # no dataset column for it


def test_the_built_graph_fills_it():
    import nnabla as nn
    import numpy as np

    from nnconsole.engine.runtime.generated_inputs import fill_generated
    from nnconsole.engine.runtime.graph import build_graph

    graph = build_graph(_elman(initial_generator="Normal", initial_multiplier=2.0), 3, "train", seed=0)
    var, spec = graph.generated["h_initial"]
    fill_generated(graph.generated, 0, "optimizer0", "train", 0, np.arange(3))
    assert var.shape == (3, 4) and spec.generator == "Normal" and np.std(var.d) > 0.5
    nn.clear_parameters()


def test_an_nnc_lstm_unit_with_normal_initial_states_imports_and_exports_them(tmp_path):
    """NNC's LSTM unit with H.Initial.Generator=Normal and C.Initial.Generator=Uniform: carried (the report names
    nothing), unrolled into Delays whose first values are generated, and written as nnabla generator variables."""
    from nnconsole.engine.interop.files import export_nntxt, import_file
    from nnconsole.engine.project.model import Datasets, Project
    from tests.support import nnc_reference
    from tests.support.nnc_files import sdcproj_text

    props = {k: p.value for k, p in nnc_reference.layer("LSTM").properties.items()
             if not p.value.startswith("*") and not k.startswith("Cost")}  # as NNC saves a fresh unit
    props.update(Size="8", Length="5", RecurrentGroupID="LSTM", InnerShape="3")
    props.update({"H.Initial.Generator": "Normal", "H.Initial.GeneratorMultiplier": "0.2",
                  "C.Initial.Generator": "Uniform", "C.Initial.GeneratorMultiplier": "0.1"})
    path = tmp_path / "lstm.sdcproj"
    path.write_text(sdcproj_text([("x", "Input", {"Size": "5,3", "Dataset": "x"}, []), ("LSTM", "LSTM", props, ["x"]),
                                  ("loss", "SquaredError", {"T.Dataset": "y"}, ["LSTM"])]), newline="")
    result = import_file(str(path))
    assert result.unsupported == []
    unit = result.project.network.layer("LSTM")
    assert (unit.params["h_initial_generator"], unit.params["c_initial_generator"]) == ("Normal", "Uniform")
    info = infer_network(result.project.network)
    assert info.generated_variables == {"LSTM_H_initial": GeneratedInput("Normal", 0.2, (8,)),
                                        "LSTM_C_initial": GeneratedInput("Uniform", 0.1, (8,))}
    out = tmp_path / "lstm.nntxt"
    export_nntxt(Project(name="lstm", network=result.project.network,
                         datasets=Datasets(training="a.csv", validation="a.csv")), str(out))
    text = out.read_text()
    assert 'type: "Normal"' in text and 'type: "Uniform"' in text
