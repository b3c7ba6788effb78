"""The epoch-time prediction follows the project's runs on this machine (issue 28 item 2).

The issue's case: a 1-worker run at 6,654 samples/s and a 2-worker run whose iterations spent 67% in the
all-reduce; the prediction had said "1 host x 2: 1.91x faster". With those runs it must say what they
measured (2 workers slower), name them, and before any run say the time is unknown rather than 0 s.
"""
from __future__ import annotations

import math
import re

import pytest

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.plan.measured_runs import local_run_timings
from nnconsole.engine.plan.timing import LOCAL_BANDWIDTH, LOCAL_LATENCY, Link, allreduce_seconds
from nnconsole.engine.plan.timing_inputs import gradient_bytes, layouts_for, predict_project
from nnconsole.engine.plan.worker_plan import make_plan
from tests.support.projects import tabular_project
from tests.support.timed_runs import timed_run

SAMPLES = 6400
BATCH = 32
ONE_WORKER_S = BATCH / 6654.0  # 6,654 samples/s on one worker
TWO_WORKERS_S = 2 * BATCH / 2450.0  # 2,450 samples/s on two, 67% of it the all-reduce
SHARE = 0.67


@pytest.fixture
def project(tmp_path):
    path = tabular_project(str(tmp_path / "p"), n=SAMPLES, batch=BATCH)
    return load_valid_project(path, check_datasets=False)


def predict(project, worker_counts=(1, 2, 4, 8), **kwargs):
    plan_for = (lambda n: make_plan(project, workers=n, dataset_size=SAMPLES))
    result = predict_project(project, layouts_for([], list(worker_counts)), plan_for, **kwargs)
    return result, {e.workers_per_host: e for e in result.estimates}


def test_measured_runs_decide_the_verdict_and_are_named(project):
    one = timed_run(project.path, "20260101_000000", 1, BATCH, ONE_WORKER_S, 0.0)
    two = timed_run(project.path, "20260101_000100", 2, BATCH, TWO_WORKERS_S, SHARE)
    result, by = predict(project)
    # 1 host x 2 is what the 2-worker run measured: 2,450 samples/s, within 0.5%
    assert SAMPLES / by[2].epoch_s == pytest.approx(2450, rel=5e-3)
    assert by[2].allreduce_share == pytest.approx(SHARE, abs=1e-3)
    assert SAMPLES / by[1].epoch_s == pytest.approx(6654, rel=5e-3)
    assert by[2].note.startswith("slower than 1 host x 1") and "faster" not in by[2].note
    said = "\n".join(result.assumptions)
    assert "measured on this machine" in said and "20260101_000000 (1 worker" in said
    assert "20260101_000100 (2 workers" in said
    assert "run 20260101_000100" in by[2].basis and "run 20260101_000000" in by[1].basis
    assert one != two


def test_other_worker_counts_carry_the_measured_all_reduce_by_the_ring_formula(project):
    timed_run(project.path, "20260101_000000", 1, BATCH, ONE_WORKER_S, 0.0)
    timed_run(project.path, "20260101_000100", 2, BATCH, TWO_WORKERS_S, SHARE)
    _, by = predict(project)
    sent = gradient_bytes(project)
    local = Link(LOCAL_BANDWIDTH, LOCAL_LATENCY)
    ring = {n: allreduce_seconds(sent, 1, n, local, local) for n in (2, 4, 8)}
    for n in (4, 8):  # same scale as the measured 2-worker all-reduce: the formula's ratio between counts
        assert by[n].allreduce_s / by[2].allreduce_s == pytest.approx(ring[n] / ring[2], rel=1e-6)
        assert "as measured in run 20260101_000100" in by[n].basis
    assert by[2].allreduce_s == pytest.approx(TWO_WORKERS_S * SHARE, rel=1e-6)


def test_before_any_run_the_time_is_unknown_not_zero(project):
    result, by = predict(project)
    assert not any(e.compute_known for e in result.estimates)
    assert by[2].note == "compute time unknown"
    assert any("unknown until one run" in a for a in result.assumptions)
    head, *rows = [re.split(r"\s{2,}", line) for line in result.table().splitlines()]
    for row in rows:  # what nnconsole plan --hosts prints: no 0 s per epoch, no compute figure
        cells = dict(zip(head, row))
        assert cells["s / epoch"] == "?" and cells["compute ms"] == "?" and cells["comm %"] == "?"


def test_runs_of_other_machines_or_hosts_are_not_used(project):
    timed_run(project.path, "20260101_000000", 2, BATCH, TWO_WORKERS_S, SHARE, machine="another-computer")
    timed_run(project.path, "20260101_000100", 2, BATCH, TWO_WORKERS_S, SHARE, hosts=["a:1", "b:1"])
    timed_run(project.path, "20260101_000200", 2, BATCH, TWO_WORKERS_S, SHARE, device="cuda")
    assert local_run_timings(project.path, "cpu") == []
    result, by = predict(project)
    assert not by[2].compute_known
    # the newest run of each count is the one used
    timed_run(project.path, "20260101_000300", 2, BATCH, 0.01, 0.5)
    timed_run(project.path, "20260101_000400", 2, BATCH, 0.02, 0.5)
    assert [t.name for t in local_run_timings(project.path, "cpu")] == ["20260101_000400"]
    _, by = predict(project)
    assert by[2].compute_s == pytest.approx(0.01) and by[2].allreduce_s == pytest.approx(0.01)


def test_a_given_compute_time_still_wins(project):
    timed_run(project.path, "20260101_000000", 1, BATCH, ONE_WORKER_S, 0.0)
    result, by = predict(project, compute_ms=2)
    assert by[1].compute_s == pytest.approx(2e-3) and by[1].epoch_s == pytest.approx(math.ceil(SAMPLES / BATCH) * 2e-3)
    assert any("(given)" in a for a in result.assumptions)
