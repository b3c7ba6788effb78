"""Issue 25 item 20: a link, latency or compute time no network or machine has (``--latency-ms inf``,
``--link 5e-324``, a latency of 1e308 s, ``--compute-ms 1e308``) is refused like any other bad link value, before
a table is printed: never a table of inf and nan. The project's ``multi_gpu.link`` is read by the same rule, so
``validate`` refuses it too."""
from __future__ import annotations

import math

import pytest

from nnconsole.engine.plan.timing_inputs import (PredictionError, check_prediction_options, link_setting_problem,
                                                 parse_link)

ABSURD_LINKS = ["5e-324", "1e-300gbit", "1e400", "1e30gbit", "1gbit,1e308s", "1gbit,inf", "1gbit,nan", "1gbit,1e9ms",
                "nanmbit", "infgbit"]


@pytest.mark.parametrize("text", ABSURD_LINKS)
def test_an_absurd_link_is_refused_and_says_what_to_write(text):
    with pytest.raises(PredictionError, match="expected BANDWIDTH"):
        parse_link(text)
    assert link_setting_problem(text)  # validate and the CONFIG tab: the same rule


@pytest.mark.parametrize("latency_ms", [math.inf, -math.inf, math.nan, 1e308, 6e4 + 1])
def test_an_absurd_latency_is_refused(latency_ms):
    with pytest.raises(PredictionError, match="--latency-ms"):
        parse_link("1gbit", latency_ms)
    with pytest.raises(PredictionError, match="--latency-ms"):
        check_prediction_options(None, latency_ms, None)


@pytest.mark.parametrize("compute_ms", [math.inf, math.nan, 1e308, 0.0, -1.0])
def test_an_absurd_compute_time_is_refused(compute_ms):
    with pytest.raises(PredictionError, match="--compute-ms"):
        check_prediction_options(None, None, compute_ms)


def test_real_links_still_read():
    for text in ("9.6kbit", "1gbit,100us", "400gbit,1us", "100GB/s,2us", "1gbit,30s"):
        link = parse_link(text)
        assert math.isfinite(link.bandwidth) and math.isfinite(link.latency)


@pytest.mark.parametrize("extra", [["--latency-ms", "inf"], ["--link", "5e-324"], ["--compute-ms", "1e308"],
                                   ["--link", "1gbit,1e308s"]])
def test_plan_refuses_before_printing_a_table(tmp_path, extra):
    from tests.support.cli import nnconsole
    from tests.support.projects import tabular_project
    path = tabular_project(str(tmp_path / "p"))
    out = nnconsole(["plan", path, "--hosts", "a:2,b:2", *extra], check=False)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "inf" not in out.stdout and "nan" not in out.stdout and not out.stdout.strip(), out.stdout
