"""The predictor for a project (issue 20): links, layouts, verdicts, measured compute, and `plan --hosts`.

The formulas themselves are tested in tests/engine/plan/test_timing.py; here what the project gives them and what the
user reads."""
from __future__ import annotations

import json
import os

import pytest

from nnconsole.engine.plan.measured_runs import run_timing
from nnconsole.engine.plan.timing_inputs import PredictionError, layouts_for, parse_link, predict_project
from tests.support.cli import nnconsole
from tests.support.projects import tabular_project
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.paths import ROOT


@pytest.mark.parametrize("text,latency_ms,bandwidth,latency", [
    ("1gbit,100us", None, 125e6, 1e-4), ("100mbit,2ms", None, 12.5e6, 2e-3), ("10GB/s,5us", None, 10e9, 5e-6),
    ("100mbit, 0.5ms", None, 12.5e6, 5e-4), ("1gbit", None, 125e6, 0.0), ("0.94gbit", 0.123, 117.5e6, 1.23e-4)])
def test_links_are_read_as_doctor_and_tc_write_them(text, latency_ms, bandwidth, latency):
    link = parse_link(text, latency_ms)
    assert link.bandwidth == pytest.approx(bandwidth) and link.latency == pytest.approx(latency)


@pytest.mark.parametrize("text", ["fast,1ms", "0gbit,1ms", "-1gbit,1ms", "1gbit,-1ms", "1gbit,1parsec", "nan",
                                  "inf", "", "1gbit,ms"])
def test_a_bad_link_says_how_to_write_one(text):
    with pytest.raises(PredictionError, match="expected BANDWIDTH|must be above zero"):
        parse_link(text)


def test_layouts_of_two_hosts_with_two_slots_are_the_seeds_example():
    assert layouts_for(["a:2", "b:2"]) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    # the fewest slots (c: 1) decide the workers per host; --gpus 4 adds 4 on one host
    assert layouts_for(["[fe80::1]:3", "b:2", "c"], [4]) == [(1, 1), (2, 1), (3, 1), (1, 4)]
    with pytest.raises(PredictionError, match="at most"):
        layouts_for(["a:1024", "b:1024"])


def _tabular(tmp_path):
    """64 samples, batch 8, a 4-8-3 MLP: 67 parameters, 268 bytes of float32 gradients."""
    from nnconsole.engine.plan.worker_plan import make_plan

    project = load_valid_project(tabular_project(str(tmp_path / "p"), n=64, batch=8), check_datasets=False)
    return project, (lambda n: make_plan(project, workers=n, dataset_size=64))


def test_the_verdict_flips_with_the_network(tmp_path):
    project, plan_for = _tabular(tmp_path)
    slow = {(e.hosts, e.workers_per_host): e for e in
            predict_project(project, layouts_for(["a:2", "b:2"]), plan_for, "1mbit,1ms", compute_ms=2).estimates}
    # within a host: 268 B / 5 GB/s + 2 x 5 us; across 2 hosts: 268 B / 125 kB/s + 2 x 1 ms
    within, across = 268 / 5e9 + 1e-5, 268 / 125e3 + 2e-3
    assert slow[(2, 2)].allreduce_s == pytest.approx(within + across)
    assert slow[(2, 2)].epoch_s == pytest.approx(2 * (2e-3 + within + across))  # 64 / (8 x 4) = 2 iterations
    assert slow[(1, 2)].epoch_s == pytest.approx(4 * (2e-3 + within))
    assert slow[(2, 2)].note.startswith("slower than 1 host x 2") and slow[(1, 1)].note == "baseline"
    assert slow[(1, 2)].note == f"{slow[(1, 1)].epoch_s / slow[(1, 2)].epoch_s:.2f}x faster than 1 worker"
    fast = {(e.hosts, e.workers_per_host): e for e in
            predict_project(project, layouts_for(["a:2", "b:2"]), plan_for, "1gbit,0us", compute_ms=2).estimates}
    assert fast[(2, 2)].epoch_s < fast[(1, 2)].epoch_s and "faster than 1 worker" in fast[(2, 2)].note


def test_unknown_compute_or_dataset_size_is_said_not_judged(tmp_path):
    from nnconsole.engine.plan.worker_plan import make_plan

    project, plan_for = _tabular(tmp_path)
    result = predict_project(project, layouts_for(["a:2", "b:2"]), plan_for)
    assert result.estimates[-1].note == "compute time unknown"
    assert any("compute time unknown" in a for a in result.assumptions)
    assert any("assumed (1gbit,100us)" in a for a in result.assumptions)
    with pytest.raises(PredictionError, match="training set's size is unknown"):
        predict_project(project, [(1, 1)], lambda n: make_plan(project, workers=n), compute_ms=1)


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
    assert run_timing(run).seconds_per_sample == pytest.approx(0.05 / 16)
    assert run_timing(run).allreduce_s == pytest.approx(0.05)  # median of 0.05, 0.04, 0.15
    assert run_timing(str(tmp_path / "missing")) is None
    empty = str(tmp_path / "empty")
    _fake_run(empty, 16, [])
    assert run_timing(empty) is None
    garbled = str(tmp_path / "garbled")
    _fake_run(garbled, 16, [(0.1, 0.5)])
    with open(os.path.join(garbled, "plan.json"), "w") as f:
        f.write("{not json")
    assert run_timing(garbled) is None


def test_plan_hosts_prints_each_layout_from_another_directory(tmp_path):
    path = tabular_project(str(tmp_path / "p"), n=64, batch=8)
    out = nnconsole(["plan", os.path.relpath(path, ROOT), "--hosts", "a:2,b:2",
                     "--link", "1mbit,1ms", "--compute-ms", "2"]).stdout
    assert "gradients: 0.000268 MB" in out and "compute: 2 ms per iteration at batch 8 (given)" in out
    rows = {line[:12].strip(): line for line in out.splitlines() if line[:12].strip().endswith(("x 1", "x 2"))}
    assert set(rows) == {"1 host x 1", "1 host x 2", "2 hosts x 1", "2 hosts x 2"}
    # 2 hosts x 2: 4.154 ms of all-reduce (hand-computed in test_the_verdict_flips_with_the_network), 2 iterations
    assert " 4.15 " in rows["2 hosts x 2"] and " 0.0123 " in rows["2 hosts x 2"]
    assert "slower than 1 host x 2" in rows["2 hosts x 2"]
    doctor_form = nnconsole(["plan", path, "--link", "0.94gbit", "--latency-ms", "0.123"]).stdout
    assert "link between hosts: 940 Mbit/s, 123 us" in doctor_form


def test_plan_measures_compute_from_the_projects_latest_run(tmp_path):
    path = tabular_project(str(tmp_path / "p"), n=64, batch=8)
    _fake_run(str(tmp_path / "p" / "results" / "project" / "20260101_000000"), 8, [(1.0, 0), (0.004, 0.5)])
    out = nnconsole(["plan", path, "--hosts", "a:2,b:2"]).stdout
    assert "measured on this machine: 20260101_000000 (2 workers" in out and "link between hosts assumed (1gbit,100us)" in out
    row = next(line for line in out.splitlines() if line.startswith("1 host x 1"))
    assert row.split()[4:8] == ["8", "2", "0", "0"] and row.split()[8] == "0.016"  # 8 iterations x 2 ms


@pytest.mark.parametrize("extra,message", [(["--link", "1gbit,fast"], "is not a latency"),
                                           (["--link", "quick"], "is not a link"),
                                           (["--compute-ms", "-3"], "--compute-ms must be above zero"),
                                           (["--latency-ms", "-1"], "--latency-ms must be zero or more"),
                                           (["--hosts", "a:0"], "slot count")])
def test_plan_refuses_bad_prediction_input_without_a_traceback(tmp_path, extra, message):
    path = tabular_project(str(tmp_path / "p"))
    out = nnconsole(["plan", path, *extra], check=False)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
