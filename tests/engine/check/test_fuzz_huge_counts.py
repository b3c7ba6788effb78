"""Fuzz, issue 25's class "huge counts": any count a project, a command line or an imported file states (a repeat
block's times and nesting, Units fanning out over networks, host slot counts, link values, .sdcproj counts) is
bounded by counting before anything is built per unit of it. Every drawn case ends quickly in a located
refusal (ProjectError, PredictionError, InteropError) or is accepted; never another exception, never minutes."""
from __future__ import annotations

import math
import os
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnconsole.engine.interop.files import import_file
from nnconsole.engine.interop.report import InteropError
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.plan.hosts import check_hosts, slot_total
from nnconsole.engine.plan.timing_inputs import PredictionError, check_prediction_options, layouts_for, parse_link
from nnconsole.engine.project.model import Layer as L, Network
from tests.support.networks import unit_fan_out
from tests.support.timing import budget

FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SDCPROJ = open(os.path.join(ROOT, "tests", "data", "interop", "nnc_tiny_cnn.sdcproj"), encoding="utf-8").read()
SECONDS = 3.0

huge_ints = st.one_of(st.integers(1, 100), st.integers(10**4, 10**7), st.integers(10**9, 10**40))


def _quick(started: float) -> None:
    assert time.monotonic() - started < budget(SECONDS)


# ---- repeat blocks and units: the expanded network ---------------------------------------------------------------
@FUZZ
@given(times=st.lists(huge_ints, min_size=1, max_size=60), width=st.integers(1, 64))
def test_nested_repeat_blocks_of_any_count_are_bounded(times, width):
    layers = [L("x", "Input", params={"shape": [width]})]
    prev = "x"
    for i, n in enumerate(times):
        layers.append(L(f"rs{i}", "RepeatStart", [prev], {"times": n}))
        prev = f"rs{i}"
    layers.append(L("fc", "Affine", [prev], {"out_shape": width}))
    prev = "fc"
    for i in reversed(range(len(times))):
        layers.append(L(f"re{i}", "RepeatEnd", [prev]))
        prev = f"re{i}"
    layers += [L("y", "Input", params={"shape": [width]}), L("loss", "SquaredError", [prev, "y"])]
    started = time.monotonic()
    info = infer_network(Network(layers))
    _quick(started)
    repetitions = math.prod(times)
    if repetitions + 4 > 50_000:
        assert any(n.startswith("rs") and "more than 50,000" in m for n, m in info.errors), info.errors[:2]
    else:
        assert info.errors == [] and info.total_params == repetitions * (width * width + width)


@FUZZ
@given(levels=st.integers(1, 60), fan=st.integers(1, 6), chain=st.integers(1, 600))
def test_units_fanning_out_over_networks_are_bounded(levels, fan, chain):
    nets = unit_fan_out(levels, fan, width=4, leaf=L("t", "Tanh", ["x"]))
    main_layers = [L("x", "Input", params={"shape": [4]})]
    prev = "x"
    for i in range(chain):
        main_layers.append(L(f"c{i}", "Unit", [prev], {"network": "D0"}))
        prev = f"c{i}"
    main_layers += [L("y", "Input", params={"shape": [4]}), L("loss", "SquaredError", [prev, "y"])]
    main = Network(main_layers)
    started = time.monotonic()
    info = infer_network(main, {"Main": main, **nets}, "Main")
    expanded = chain * fan ** levels + 3
    if levels + 1 > 32 or expanded > 50_000:
        assert info.errors and all("counted before anything is built" in m or "not expanded" in m
                                   for _, m in info.errors), info.errors[:2]
        _quick(started)
    else:
        assert info.errors == []


# ---- hosts and links ----------------------------------------------------------------------------------------------
host_entries = st.lists(st.one_of(
    st.builds(lambda n: f"node{n}", st.integers(0, 99)),
    st.builds(lambda n, s: f"node{n}:{s}", st.integers(0, 99), st.one_of(huge_ints, st.integers(-5, 0))),
    st.builds(lambda s: f"[2001:db8::1]:{s}", huge_ints), st.just("2001:db8::2")), min_size=1, max_size=50)


@FUZZ
@given(hosts=host_entries)
def test_host_lists_of_any_slot_count_are_checked_by_counting(hosts):
    started = time.monotonic()
    problems = check_hosts(hosts)
    if not problems:
        assert slot_total(hosts) <= 65_536
        try:
            layouts = layouts_for(hosts)
            assert len(layouts) <= 1024 * 1024
        except PredictionError as exc:
            assert "at most 1,024 workers" in str(exc)
    _quick(started)


link_numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(
    ["5e-324", "1e-300", "1e308", "1e400", "inf", "-inf", "nan", "0", "-0", "1e-9"]).map(float))


@FUZZ
@given(bandwidth=st.one_of(link_numbers.map(repr), st.sampled_from(["5e-324gbit", "infmbit", "1e30GB/s", "1gbit"])),
       latency=st.one_of(st.none(), link_numbers.map(lambda v: f"{v!r}s"), st.sampled_from(["1e308ms", "nanus"])),
       latency_ms=st.one_of(st.none(), link_numbers), compute_ms=st.one_of(st.none(), link_numbers))
def test_link_values_are_finite_and_plausible_or_refused(bandwidth, latency, latency_ms, compute_ms):
    text = bandwidth + ("," + latency if latency else "")
    try:
        check_prediction_options(text, latency_ms, compute_ms)
        link = parse_link(text, latency_ms)
    except PredictionError:
        return
    assert 1e3 <= link.bandwidth <= 1e14 and 0 <= link.latency <= 60
    assert compute_ms is None or 0 < compute_ms <= 86_400_000


# ---- .sdcproj counts ----------------------------------------------------------------------------------------------
SDC_COUNTS = ["NumNetwork", "NumLayer", "NumLink", "NumProperty", "Num", "NumOptimizer", "SolverParameterNum"]
count_text = st.one_of(huge_ints.map(str), st.sampled_from(["inf", "-inf", "nan", "1e400", "-1", "99999999999",
                                                            "0x10", " 12 ", "", "1e5"]))


@FUZZ
@given(key=st.sampled_from(SDC_COUNTS), value=count_text, every=st.booleans())
def test_sdcproj_counts_are_bounded_by_the_file(tmp_path_factory, key, value, every):
    text = re.sub(rf"^{key}=.*$", lambda m: f"{key}={value}", SDCPROJ, count=0 if every else 1, flags=re.M)
    path = tmp_path_factory.mktemp("sdc") / "fuzz.sdcproj"
    path.write_text(text, encoding="utf-8")
    started = time.monotonic()
    try:
        import_file(str(path))
    except InteropError as exc:
        assert str(exc).startswith(str(path)), str(exc)
    _quick(started)


@pytest.mark.parametrize("hosts", [["a:1048576", "b:1048576"], ["a:65536"] * 3])
def test_validate_refuses_absurd_hosts_by_counting(tmp_path, hosts):
    import yaml

    from nnconsole.engine.check.project_file import load_valid_project
    from nnconsole.engine.project.errors import ProjectError
    from tests.support.projects import tabular_project
    path = tabular_project(str(tmp_path / "p"))
    data = yaml.safe_load(open(path))
    data["multi_gpu"]["hosts"] = hosts
    yaml.safe_dump(data, open(path, "w"))
    started = time.monotonic()
    with pytest.raises(ProjectError, match="multi_gpu.hosts"):
        load_valid_project(path)
    _quick(started)
