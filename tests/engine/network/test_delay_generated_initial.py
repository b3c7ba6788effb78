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
