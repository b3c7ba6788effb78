"""nnconsole.engine.network.arguments (issue 26 items 1-3) on hand-made networks: parameter-property arguments
(passed on through a unit of a unit, defaulted by an Argument layer so named, a Parameter layer's own spelling, a
Constant's value), *Name macros and repeat counts by name, and the expansion's size counted with the unit's value."""
from __future__ import annotations

import time

from nnconsole.engine.network.arguments import resolve, unit_argument_rows
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.network.units import expand_units
from nnconsole.engine.project.model import Initializer, Layer as L, Network
from tests.support.timing import budget


def inner() -> Network:
    return Network([L("in", "Input", params={"shape": [4]}),
                    L("Affine", "Affine", ["in"], {"out_shape": [4]}),
                    L("Affine.W.LRateMultiplier", "Argument", params={"value": "0.25", "type": "Float"}),
                    L("Bias", "Parameter", params={"shape": [4]}),
                    L("Add2", "Add2", ["Affine", "Bias"])])


def outer() -> Network:
    return Network([L("in", "Input", params={"shape": [4]}),
                    L("Inner", "Unit", ["in"], {"network": "Inner"}),
                    L("Tanh", "Tanh", ["Inner"])])


def test_parameter_properties_reach_layers_of_units_of_units():
    networks = {"Inner": inner(), "Outer": outer()}
    main = Network([L("x", "Input", params={"shape": [4]}),
                    L("u", "Unit", ["x"], {"network": "Outer", "arguments": (
                        "Inner.Affine.b.LRateMultiplier=0; Inner.Affine.W.Initializer=Uniform; "
                        "Inner.Affine.W.InitializerMultiplier=0.5; Inner.Bias.LRateMultiplier=2; "
                        "Inner.Affine.b.InitializerMultiplier=0.3")})])
    net, _, problems = expand_units(main, networks, "Main")
    assert problems == []
    layers = {x.name: x for x in net.layers}
    affine = layers["u/Inner/Affine"]
    assert affine.lr_multipliers == {"W": 0.25, "b": 0.0}  # W: the Argument layer's default
    assert affine.initializers["W"] == Initializer("Uniform", 0.5, 0.0)
    assert affine.initializers["b"] == Initializer("Constant", 1.0, 0.3)  # a Constant's multiplier is its value
    assert layers["u/Inner/Bias"].lr_multipliers == {"W": 2.0}  # a Parameter layer spells 'Bias.LRateMultiplier'


def test_the_units_value_wins_over_the_argument_layers_own():
    body, problems, given = resolve(inner(), {"Affine.W.LRateMultiplier": "3"}, "Inner")
    assert (problems, given) == ([], [])
    assert body.layers[1].lr_multipliers == {"W": 3.0}
    alone, _, _ = resolve(inner(), {}, "Inner")
    assert alone.layers[1].lr_multipliers == {"W": 0.25}


def test_rows_a_unit_may_set_are_listed_as_nnc_lists_them():
    rows = unit_argument_rows(inner())
    assert rows[0] == ("Affine.W.LRateMultiplier", "Float", "0.25")
    assert [r[0] for r in rows[1:]] == [
        "Affine.W.File", "Affine.W.Initializer", "Affine.W.InitializerMultiplier", "Affine.b.File",
        "Affine.b.Initializer", "Affine.b.InitializerMultiplier", "Affine.b.LRateMultiplier", "Bias.File",
        "Bias.Initializer", "Bias.InitializerMultiplier", "Bias.LRateMultiplier"]
    assert ("Affine.b.InitializerMultiplier", "Float", "0.0") in rows  # the bias's Constant value


def test_a_macro_passes_a_value_down_through_a_unit_of_a_unit():
    leaf = Network([L("in", "Input", params={"shape": [4]}), L("w", "Argument", params={"value": "2", "type": "PInt"}),
                    L("fc", "Affine", ["in"], {"out_shape": "*w"})])
    mid = Network([L("in", "Input", params={"shape": [4]}), L("W", "Argument", params={"value": "3", "type": "PInt"}),
                   L("leaf", "Unit", ["in"], {"network": "Leaf", "arguments": "w=*W"})])
    main = Network([L("x", "Input", params={"shape": [4]}), L("m1", "Unit", ["x"], {"network": "Mid", "arguments": "W=5"}),
                    L("m2", "Unit", ["x"], {"network": "Mid"})])
    networks = {"Leaf": leaf, "Mid": mid}
    info = infer_network(main, networks, "Main")
    assert info.errors == [] and info.layers["m1"].out_shape == (5,) and info.layers["m2"].out_shape == (3,)
    assert infer_network(mid, networks, "Mid").layers["leaf"].out_shape == (3,)  # on its own: its own value


def test_a_repeat_count_by_argument_is_counted_before_anything_is_built():
    stack = Network([L("in", "Input", params={"shape": [4]}), L("n", "Argument", params={"value": "2", "type": "PInt"}),
                     L("rs", "RepeatStart", ["in"], {"times": "*n"}), L("fc", "Affine", ["rs"], {"out_shape": [4]}),
                     L("re", "RepeatEnd", ["fc"])])
    main = Network([L("x", "Input", params={"shape": [4]}),
                    L("s", "Unit", ["x"], {"network": "Stack", "arguments": "n=1000000000"})])
    began = time.perf_counter()
    errors = dict(infer_network(main, {"Stack": stack}, "Main").errors)
    assert time.perf_counter() - began < budget(5)
    assert "unit 's' (network 'Stack', 1,000,000,000 layers once its own units and blocks" in errors["s"]
    main.layers[1].params["arguments"] = "n=4"
    assert infer_network(main, {"Stack": stack}, "Main").total_params == 4 * (16 + 4)


def test_a_units_network_is_never_read_as_an_argument():
    """An Argument named like a network (both are the user's names) leaves the Unit's network alone."""
    leaf = Network([L("in", "Input", params={"shape": [4]}), L("fc", "Affine", ["in"], {"out_shape": [2]})])
    mid = Network([L("in", "Input", params={"shape": [4]}), L("Leaf", "Argument", params={"value": "7"}),
                   L("u", "Unit", ["in"], {"network": "Leaf"})])
    body, problems, _ = resolve(mid, {}, "Mid")
    assert problems == [] and body.layers[2].params["network"] == "Leaf"
    assert infer_network(mid, {"Leaf": leaf, "Mid": mid}, "Mid").layers["u"].out_shape == (2,)
