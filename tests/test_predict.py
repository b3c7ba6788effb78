"""The predictor (issue 20): ring all-reduce cost, layouts, verdicts, measured compute, and `plan --hosts`."""
from __future__ import annotations

import json
import os

import pytest

from nnconsole.engine.predict import (Link, LinkError, layouts_for, parse_link, predict,
                                      ring_allreduce_seconds)
from nnconsole.engine.predict_inputs import measured_compute

GBIT = Link(1e9 / 8, 100e-6)
INTRA = Link(10e9, 5e-6)


def test_ring_allreduce_on_hand_computed_cases():
    assert ring_allreduce_seconds(1e6, 1, GBIT) == 0.0
    # N=2: 2 x 1/2 x 1 MB / 1 MB/s + 2 x 1 x 1 ms
    assert ring_allreduce_seconds(1e6, 2, Link(1e6, 1e-3)) == pytest.approx(1.002)
    # N=4 over gigabit: 2 x 3/4 x 8 MB / 125 MB/s = 96 ms, + 6 x 100 us
    assert ring_allreduce_seconds(8e6, 4, GBIT) == pytest.approx(0.0966)


@pytest.mark.parametrize("text,bandwidth,latency", [
    ("1Gbit,100us", 125e6, 1e-4), ("100Mbit,2ms", 12.5e6, 2e-3), ("10GB/s,5us", 10e9, 5e-6),
    ("100 Mbps, 0.5ms", 12.5e6, 5e-4), ("1e9B,0s", 1e9, 0.0)])
def test_links_are_read_with_their_units(text, bandwidth, latency):
    link = parse_link(text)
    assert link.bandwidth == pytest.approx(bandwidth) and link.latency == pytest.approx(latency)


@pytest.mark.parametrize("text", ["1Gbit", "fast,1ms", "0Gbit,1ms", "-1Gbit,1ms", "1Gbit,-1ms", "1Gbit,1 parsec",
                                  "1Gbit,1ms,3", ""])
def test_a_bad_link_says_how_to_write_one(text):
    with pytest.raises(LinkError, match="BANDWIDTH,LATENCY|expected"):
        parse_link(text)


def test_layouts_of_two_hosts_with_two_slots_are_the_seeds_example():
    labels = [lay.label for lay in layouts_for(["a:2", "b:2"])]
    assert labels == ["1 host x 1", "1 host x 2", "2 hosts x 1", "2 hosts x 2"]
    three = layouts_for(["[fe80::1]:3", "b:2", "c"], [4])  # the smallest host has 1 slot: 1 per host
    assert [(lay.hosts, lay.per_host) for lay in three] == [(1, 1), (2, 1), (3, 1), (1, 4)]


def _seeds_case(inter: Link):
    """A 25M-parameter model (100 MB of float32 gradients), 100 ms compute per iteration at 32 per worker."""
    layouts = layouts_for(["a:2", "b:2"])
    compute = {n: 0.1 for n in (1, 2, 4)}
    batches = {n: (32 * n, 1000 // n) for n in (1, 2, 4)}
    return {p.layout.label: p for p in predict(layouts, 100e6, compute, batches, INTRA, inter)}


def test_two_machines_of_two_are_slower_than_one_of_two_on_gigabit():
    by = _seeds_case(GBIT)
    # 1 host x 2: 100 ms + (1 x 100 MB / 10 GB/s + 2 x 5 us) = 110.01 ms, 500 iterations
    assert by["1 host x 2"].epoch_s == pytest.approx(500 * 0.11001)
    # 2 hosts x 2: 100 ms + (1.5 x 100 MB / 125 MB/s + 6 x 100 us) = 1.3006 s, 250 iterations
    assert by["2 hosts x 2"].epoch_s == pytest.approx(250 * 1.3006)
    assert by["2 hosts x 2"].verdict.startswith("slower than 1 host x 2")
    assert by["2 hosts x 1"].verdict.startswith("slower than 1 host x 2")  # the fastest of no more workers
    assert by["1 host x 2"].verdict.startswith("1.82x faster") and by["1 host x 1"].verdict == "baseline"


def test_the_verdict_flips_on_a_fast_network():
    by = _seeds_case(Link(100e9 / 8, 2e-6))  # 100 Gbit/s: 12 ms to all-reduce 100 MB on 4
    assert by["2 hosts x 2"].allreduce_s == pytest.approx(1.5 * 100e6 / 12.5e9 + 6 * 2e-6)
    assert "faster than 1 worker" in by["2 hosts x 2"].verdict
    assert by["2 hosts x 2"].epoch_s < by["1 host x 2"].epoch_s
    # the crossover sits where 4 workers' time per sample equals 2 workers': (0.1 + 1.5 x 100 MB / bw + 6 lat) / 4
    # = 0.11001 / 2, i.e. bw = 150 MB / 0.12002 s (latency 0): just below it more hosts are slower, just above faster
    edge = 150e6 / (2 * 0.11001 - 0.1)
    assert _seeds_case(Link(edge * 0.99, 0))["2 hosts x 2"].verdict.startswith("slower")
    assert "faster" in _seeds_case(Link(edge * 1.01, 0))["2 hosts x 2"].verdict


def test_unknown_compute_is_said_not_judged():
    by = {p.layout.label: p for p in predict(layouts_for(["a:2", "b:2"]), 1e6, {1: 0.0, 2: 0.0, 4: 0.0},
                                             {1: (8, None), 2: (16, None), 4: (32, None)}, INTRA, GBIT)}
    assert by["2 hosts x 2"].verdict == "compute time unknown" and by["2 hosts x 2"].epoch_s is None


def _fake_run(run_dir: str, per_worker_batch: int, timings) -> None:
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, "plan.json"), "w") as f:
        json.dump({"per_worker_batch": per_worker_batch, "workers": 2}, f)
    with open(os.path.join(run_dir, "status.json"), "w") as f:
        json.dump({"state": "finished"}, f)
    with open(os.path.join(run_dir, "metrics.jsonl"), "w") as f:
        for i, (t, share) in enumerate(timings):
            f.write(json.dumps({"type": "train", "iteration": 10 * (i + 1), "time_per_iter": t,
                                "allreduce_share": share}) + "\n")
            f.write(json.dumps({"type": "validation", "epoch": i, "iteration": 10 * (i + 1)}) + "\n")


def test_compute_is_measured_from_a_run_without_its_all_reduce(tmp_path):
    run = str(tmp_path / "run")
    # the first record (start-up) is left out; median of 0.1 x 0.5, 0.08 x 0.5, 0.2 x 0.75 = 0.05 s at 16 per worker
    _fake_run(run, 16, [(9.0, 0.0), (0.1, 0.5), (0.08, 0.5), (0.2, 0.75)])
    found = measured_compute(run)
    assert found.seconds_per_sample == pytest.approx(0.05 / 16)
    assert measured_compute(str(tmp_path / "missing")) is None
    broken = str(tmp_path / "broken")
    _fake_run(broken, 16, [])
    assert measured_compute(broken) is None


def test_plan_hosts_prints_each_layout_with_the_given_link(tmp_path):
    from tests.helpers import nnconsole, tabular_project

    path = tabular_project(str(tmp_path / "p"), n=64, batch=8)  # 4-8-3 MLP: 67 parameters, 268 bytes
    out = nnconsole(["plan", path, "--hosts", "a:2,b:2",
                     "--link", "1Mbit,1ms", "--intra-link", "1GB/s,0us", "--compute-ms", "2"]).stdout
    assert "gradients: 0.000268 MB" in out and "compute: 2 ms per iteration at batch 8 (given)" in out
    rows = {line[:12].strip(): line for line in out.splitlines() if "host" in line[:12] and "x" in line[:12]}
    assert set(rows) == {"1 host x 1", "1 host x 2", "2 hosts x 1", "2 hosts x 2"}
    # 2 hosts x 2: 2 x 3/4 x 268 B / 125 kB/s + 6 x 1 ms = 9.216 ms; 64 samples / (8 x 4) = 2 iterations
    assert " 9.22 " in rows["2 hosts x 2"] and "0.0224" in rows["2 hosts x 2"]
    assert "slower than 1 host x 2" in rows["2 hosts x 2"]


def test_plan_measures_compute_from_the_projects_latest_run(tmp_path):
    from tests.helpers import nnconsole, tabular_project

    path = tabular_project(str(tmp_path / "p"), n=64, batch=8)
    _fake_run(str(tmp_path / "p" / "results" / "project" / "20260101_000000"), 8, [(1.0, 0), (0.004, 0.5)])
    out = nnconsole(["plan", path, "--hosts", "a:2,b:2"]).stdout
    assert "compute: measured in" in out and "link between hosts assumed (1Gbit,100us)" in out
    row = next(line for line in out.splitlines() if line.startswith("1 host x 1"))
    assert row.split()[-3:-1] == ["0", "0.016"]  # 2 ms compute x 8 iterations; no all-reduce


@pytest.mark.parametrize("extra,message", [(["--link", "1Gbit"], "is not a link"),
                                           (["--compute-ms", "-3"], "--compute-ms must be above zero"),
                                           (["--hosts", "a:0"], "slot count")])
def test_plan_refuses_bad_prediction_input_without_a_traceback(tmp_path, extra, message):
    from tests.helpers import nnconsole, tabular_project

    path = tabular_project(str(tmp_path / "p"))
    out = nnconsole(["plan", path, *extra], check=False)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
