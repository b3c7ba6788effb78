"""Issue 25 items 8 and 27: the network a project expands into (repeat blocks unrolled, Units replaced by their
networks, both nesting) is counted arithmetically and bounded before anything is built: layers (50,000), learned
parameters (10^10) and multiply-adds per sample (10^14), with a message naming the block or unit and the totals.

Before: ``times: 1000000000`` validated "OK" and training unrolled until memory ran out; 50 nested blocks of 2
validated with 10^18 parameters; a chain of 500 Units over a doubling unit network built 16 million layers (the
50,000 cap was per unit); a unit fan-out 33 levels deep was refused only after ~25 s."""
from __future__ import annotations

import time

import pytest

from nnconsole.engine.network.expansion_size import (MAX_EXPANDED_MACS, MAX_EXPANDED_PARAMETERS, expanded_layers,
                                                     size_problem)
from nnconsole.engine.network.repeat_blocks import MAX_EXPANDED_LAYERS, unroll_layers
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.project.model import Layer as L, Network
from tests.support.networks import unit_fan_out
from tests.support.timing import budget


def _repeat(times: int, nest: int = 1, width: int = 8, body=None) -> Network:
    layers = [L("x", "Input", params={"shape": [4]}), L("fc0", "Affine", ["x"], {"out_shape": width})]
    prev = "fc0"
    for i in range(nest):
        layers.append(L(f"rs{i}", "RepeatStart", [prev], {"times": times}))
        prev = f"rs{i}"
    for layer in body or [L("fc", "Affine", [prev], {"out_shape": width})]:
        layers.append(layer)
        prev = layer.name
    for i in reversed(range(nest)):
        layers.append(L(f"re{i}", "RepeatEnd", [prev]))
        prev = f"re{i}"
    layers += [L("out", "Affine", [prev], {"out_shape": 3}), L("y", "Input", params={"shape": [1]}),
               L("loss", "SoftmaxCrossEntropy", ["out", "y"])]
    return Network(layers)


def _doubling(levels: int, fan: int = 2, leaf=None) -> dict:
    """D0 runs D1 ``fan`` times in a row, D1 runs D2 ``fan`` times ... : fan^levels layers of the leaf."""
    return unit_fan_out(levels, fan, width=8, leaf=leaf)


def _main_of_units(count: int, network: str = "D0") -> Network:
    layers = [L("x", "Input", params={"shape": [4]}), L("fc0", "Affine", ["x"], {"out_shape": 8})]
    prev = "fc0"
    for i in range(count):
        layers.append(L(f"u{i}", "Unit", [prev], {"network": network}))
        prev = f"u{i}"
    layers += [L("out", "Affine", [prev], {"out_shape": 3}), L("y", "Input", params={"shape": [1]}),
               L("loss", "SoftmaxCrossEntropy", ["out", "y"])]
    return Network(layers)


def _refused_quickly(network, networks=None, name="Main", seconds=3.0):
    start = time.monotonic()
    info = infer_network(network, networks, name)
    assert time.monotonic() - start < seconds
    assert info.errors
    return info


def test_a_billion_repetitions_are_refused_naming_the_block():
    info = _refused_quickly(_repeat(10**9))
    (name, message), = info.errors
    assert name == "rs0" and "times 1,000,000,000" in message and "1,000,000,005 layers" in message
    assert "more than 50,000" in message


def test_fifty_nested_blocks_of_two_are_refused():
    info = _refused_quickly(_repeat(2, nest=50))
    (name, message), = info.errors
    assert name == "rs0" and f"{2**50:,}" in message


def test_a_chain_of_units_over_a_doubling_network_is_refused_before_it_is_built():
    nets = _doubling(15)
    main = _main_of_units(500)
    assert expanded_layers(main, {"Main": main, **nets}, "Main") == 500 * 2**15 + 5
    info = _refused_quickly(main, {"Main": main, **nets})
    assert [n for n, _ in info.errors] == ["u1"]  # the unit that takes the total over; the others stay quiet
    assert "16,384,005 layers" in info.errors[0][1] and "network 'D0', 32,768 layers" in info.errors[0][1]


def test_a_fan_out_33_deep_is_refused_by_counting():
    nets = _doubling(33)
    main = _main_of_units(1)
    start = time.monotonic()
    assert size_problem(main, {"Main": main, **nets}, "Main")
    assert size_problem(nets["D0"], {"Main": main, **nets}, "D0")
    assert time.monotonic() - start < budget(0.5)
    deep = _doubling(40, fan=1)
    problem = size_problem(main, {"Main": main, **deep}, "Main")
    assert problem and "nest more than 32 deep" in problem[1]


def test_every_network_of_a_fan_out_33_deep_is_refused_by_counting():
    """Checking each network of the project (as validate and the EDIT tab do): D0 ... D16 each expand beyond the
    bound; before, each was expanded up to the per-unit cap first (93 s for the 17 of them), now counted."""
    nets = _doubling(33, leaf=L("t", "Tanh", ["x"]))
    main = _main_of_units(1)
    start = time.monotonic()
    for k in range(17):
        info = infer_network(nets[f"D{k}"], {"Main": main, **nets}, f"D{k}")
        assert any("counted before anything is built" in m for _, m in info.errors), (k, info.errors[:1])
    assert time.monotonic() - start < budget(2)


@pytest.mark.slow
def test_a_fan_out_33_deep_validates_in_bounded_time(tmp_path):
    from nnconsole.engine.check.project_file import load_valid_project
    from nnconsole.engine.project.errors import ProjectError
    from nnconsole.engine.project.io import load_project, save_project
    from tests.support.projects import tabular_project
    path = tabular_project(str(tmp_path / "p"))
    project = load_project(path)
    project.networks = _doubling(33, leaf=L("t", "Tanh", ["x"]))
    project.network = _main_of_units(1)
    save_project(project, path, backup=False)
    start = time.monotonic()
    with pytest.raises(ProjectError, match="counted before anything is built"):
        load_valid_project(path)
    assert time.monotonic() - start < 60  # the networks under the bound (D17 ...) are still checked: seconds


def test_the_unroll_itself_refuses_before_copying():
    start = time.monotonic()
    with pytest.raises(ValueError, match="rs0.*1,000,000,005 layers"):
        unroll_layers(_repeat(10**9).layers)
    assert time.monotonic() - start < budget(1)
    assert len(unroll_layers(_repeat(3).layers)) == 5 + 3


def test_parameters_of_every_repetition_are_bounded():
    big = [L("fc", "Affine", ["rs0"], {"out_shape": 10_000})]
    network = _repeat(200, width=10_000, body=big)  # 200 layers, 2 x 10^10 parameters
    info = _refused_quickly(network)
    (name, message), = [(n, m) for n, m in info.errors if "learned parameters" in m]
    assert name == "rs0" and f"more than {MAX_EXPANDED_PARAMETERS:,}" in message
    assert "repeat block 'rs0' holds 20,002,000,000 of them" in message  # 200 x (10^8 weights + 10^4 biases)


def test_multiply_adds_of_every_repetition_are_bounded():
    layers = [L("x", "Input", params={"shape": [64, 4096, 4096]}), L("rs", "RepeatStart", ["x"], {"times": 200}),
              L("conv", "Convolution", ["rs"], {"kernel": [3, 3], "outmaps": 64, "pad": [1, 1]}),
              L("re", "RepeatEnd", ["conv"]), L("out", "Affine", ["re"], {"out_shape": 3}),
              L("y", "Input", params={"shape": [1]}), L("loss", "SoftmaxCrossEntropy", ["out", "y"])]
    info = _refused_quickly(Network(layers))
    assert any(n == "rs" and "multiply-adds per sample" in m and f"{MAX_EXPANDED_MACS:,}" in m for n, m in info.errors), \
        info.errors


def test_ordinary_blocks_and_units_are_untouched():
    assert infer_network(_repeat(12, nest=2)).errors == []
    nets = _doubling(10)  # 1,024 layers per unit, 20 units: 20,485 layers
    main = _main_of_units(20)
    info = infer_network(main, {"Main": main, **nets}, "Main")
    assert info.errors == [] and expanded_layers(main, {"Main": main, **nets}, "Main") == 20 * 1024 + 5
    assert MAX_EXPANDED_LAYERS == 50_000


def test_validate_cli_reports_the_block(tmp_path):
    from nnconsole.engine.project.io import load_project, save_project
    from tests.support.cli import nnconsole
    from tests.support.projects import tabular_project
    path = tabular_project(str(tmp_path / "p"))
    project = load_project(path)
    project.network = _repeat(10**9)
    project.network.layers[0].params["shape"] = [4]
    save_project(project, path, backup=False)
    out = nnconsole(["validate", path], check=False)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "layer 'rs0'" in out.stderr and "1,000,000,005 layers" in out.stderr, out.stderr


def test_many_networks_each_under_the_bound_are_checked_within_one_budget(monkeypatch):
    """Each network is checked on its own; their expanded layers are added up first, so a project of many
    networks each just under the bound cannot make one check take minutes (the budget is shrunk here)."""
    from nnconsole.engine.check import structure
    from nnconsole.engine.project.model import Project
    monkeypatch.setattr(structure, "MAX_CHECKED_LAYERS", 1_000)
    project = Project(network=_repeat(3))
    project.networks = {f"N{i}": _repeat(100) for i in range(30)}  # 105 layers each once unrolled
    problems = structure._check_networks(project)
    assert len(problems) == 1 and problems[0].path == "networks.N9", [str(p) for p in problems]
    assert "N9, N10, N11, N12 and 17 more not checked" in problems[0].message


@pytest.mark.parametrize("times", [float("inf"), float("nan"), 1e300, 10**400])
def test_times_no_integer_holds_or_too_long_to_print_are_located_errors(times):
    info = _refused_quickly(_repeat(times))
    assert info.errors[0][0] == "rs0" and len(info.errors[0][1]) < 400, info.errors
