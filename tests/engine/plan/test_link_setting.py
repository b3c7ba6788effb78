"""``multi_gpu.link`` (issue 20): the network between hosts the prediction assumes, kept in the project.

What the project says is used when ``plan`` gets no --link (--link and --latency-ms still override it); a value
that cannot be read is a validation problem naming the field, the value and a good example, and the prediction
says so instead of failing; the setting survives .yaml saves and the .nntxt/.sdcproj exporters leave it out
cleanly. The bytes on the wire (``allreduce_precision: half`` sends 2 per gradient) are counted too."""
from __future__ import annotations

import os

import pytest

from nnconsole.engine.plan.timing_inputs import PredictionError, layouts_for, predict_project
from nnconsole.engine.project.io import load_project, save_project
from nnconsole.engine.check.project_file import validate
from tests.support.cli import nnconsole
from tests.support.projects import tabular_project
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.paths import ROOT


def _tabular(tmp_path, link: str = "", precision: str = "float"):
    """64 samples, batch 8, a 4-8-3 MLP: 67 parameters, 268 bytes of float32 gradients; saved with ``link``."""
    from nnconsole.engine.plan.worker_plan import make_plan

    path = tabular_project(str(tmp_path / "p"), n=64, batch=8)
    project = load_valid_project(path, check_datasets=False)
    project.multi_gpu.link = link
    project.multi_gpu.allreduce_precision = precision
    save_project(project, path, backup=False)
    project = load_project(path)  # as the GUI holds it: a bad link is the checks' to report
    return path, project, (lambda n: make_plan(project, workers=n, dataset_size=64))


def test_the_projects_link_is_what_the_prediction_uses_and_says(tmp_path):
    _, project, plan_for = _tabular(tmp_path, "100mbit,1ms")
    result = predict_project(project, layouts_for(["a:2", "b:2"]), plan_for, compute_ms=2)
    assert result.network.bandwidth == pytest.approx(12.5e6) and result.network.latency == pytest.approx(1e-3)
    assert "link from the project (multi_gpu.link): 100 Mbit/s, 1 ms; within a host" in result.header()
    assert "assumed" not in result.header()
    across = {(e.hosts, e.workers_per_host): e for e in result.estimates}[(2, 1)]
    assert across.allreduce_s == pytest.approx(268 / 12.5e6 + 2e-3)  # 2 hosts: 2(n-1)/n x 268 B + 2 x 1 ms


def test_the_command_line_overrides_the_projects_link(tmp_path):
    _, project, plan_for = _tabular(tmp_path, "100mbit,1ms")
    given = predict_project(project, [(1, 1), (2, 1)], plan_for, link="1gbit,10us", compute_ms=2)
    assert given.network.bandwidth == pytest.approx(125e6) and given.network.latency == pytest.approx(1e-5)
    assert "link between hosts: 1 Gbit/s, 10 us (--link, instead of multi_gpu.link '100mbit,1ms')" in given.header()
    later = predict_project(project, [(1, 1), (2, 1)], plan_for, latency_ms=5, compute_ms=2)
    assert later.network.bandwidth == pytest.approx(12.5e6) and later.network.latency == pytest.approx(5e-3)
    assert "link from the project (multi_gpu.link): 100 Mbit/s, 5 ms (latency from --latency-ms)" in later.header()


def test_an_empty_link_assumes_gigabit_ethernet_and_says_where_to_set_it(tmp_path):
    _, project, plan_for = _tabular(tmp_path, "  ")
    result = predict_project(project, [(1, 1), (2, 1)], plan_for, compute_ms=2)
    assert result.network.bandwidth == pytest.approx(125e6) and result.network.latency == pytest.approx(1e-4)
    said = next(a for a in result.assumptions if "assumed" in a)
    assert "gigabit Ethernet" in said and "multi_gpu.link" in said and "doctor --hosts" in said


@pytest.mark.parametrize("value", ["fast", "100mbit,1parsec", "0gbit", "-1mbit,1ms", "1gbit,ms", "nan", "1e999mbit"])
def test_a_bad_link_is_a_validation_problem_naming_field_value_and_example(tmp_path, value):
    path, project, plan_for = _tabular(tmp_path, value)
    problems = [p for p in validate(project, datasets=False) if p.path == "multi_gpu.link"]
    assert len(problems) == 1 and problems[0].severity == "error"
    text = str(problems[0])
    assert f"'{value}'" in text and "e.g. 1gbit,100us" in text and "empty" in text
    with pytest.raises(PredictionError, match=r"multi_gpu.link: .*e\.g\. 1gbit,100us"):
        predict_project(project, [(1, 1), (2, 1)], plan_for, compute_ms=2)
    # --link on the command line replaces the project's value: the prediction needs nothing from it then
    assert predict_project(project, [(1, 1), (2, 1)], plan_for, link="1gbit", compute_ms=2).estimates


def test_good_links_pass_validation(tmp_path):
    for value in ("", "1gbit,100us", "100Mbps", "10GB/s,5us", " 0.94gbit , 0.12ms "):
        _, project, _ = _tabular(tmp_path / value.strip().replace("/", "_").replace(" ", "_") or tmp_path / "empty",
                                 value)
        assert [p for p in validate(project, datasets=False) if p.path == "multi_gpu.link"] == []


def test_nnconsole_validate_and_plan_report_a_bad_link_without_a_traceback(tmp_path):
    path, _, _ = _tabular(tmp_path, "quick,1ms")
    checked = nnconsole(["validate", path], check=False)
    assert checked.returncode == 2 and "multi_gpu.link" in checked.stderr and "'quick,1ms'" in checked.stderr
    assert "e.g. 1gbit,100us" in checked.stderr and "Traceback" not in checked.stderr
    planned = nnconsole(["plan", os.path.relpath(path, ROOT), "--hosts",
                         "a:2,b:2", "--compute-ms", "2"], check=False)
    assert planned.returncode == 2 and "multi_gpu.link" in planned.stderr and "Traceback" not in planned.stderr


def test_plan_uses_the_projects_link_and_link_overrides_it(tmp_path):
    path, _, _ = _tabular(tmp_path, "1mbit,1ms")
    out = nnconsole(["plan", path, "--hosts", "a:2,b:2", "--compute-ms", "2"]).stdout
    assert "link from the project (multi_gpu.link): 1 Mbit/s, 1 ms" in out
    row = next(line for line in out.splitlines() if line.startswith("2 hosts x 2"))
    # as with --link 1mbit,1ms (tests/engine/plan/test_timing_inputs.py)
    assert " 4.15 " in row and "slower than 1 host x 2" in row
    fast = nnconsole(["plan", path, "--hosts", "a:2,b:2", "--compute-ms", "2", "--link", "10gbit,0us"]).stdout
    assert "link between hosts: 10 Gbit/s, 0 us (--link, instead of multi_gpu.link '1mbit,1ms')" in fast
    assert "slower" not in fast
    alone = nnconsole(["plan", path]).stdout  # a project that names its link asks for the prediction
    assert "Predicted time per epoch" in alone and "link from the project" in alone


def test_the_link_survives_yaml_and_nntxt_and_sdcproj_export_leaves_it_out(tmp_path):
    from nnconsole.engine.interop.files import export_nntxt
    from nnconsole.engine.interop.nntxt.importer import import_nntxt
    from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj

    path, project, _ = _tabular(tmp_path, "100mbit,1ms")
    assert project.multi_gpu.link == "100mbit,1ms"
    with open(path, encoding="utf-8") as f:
        assert "link: 100mbit,1ms" in f.read()
    nntxt = str(tmp_path / "p" / "exported.nntxt")
    export_nntxt(project, nntxt)
    assert import_nntxt(nntxt).project.multi_gpu.link == "100mbit,1ms"  # nnconsole's extras keep it
    sdcproj = str(tmp_path / "p" / "exported.sdcproj")
    result = export_sdcproj(project, sdcproj)
    with open(sdcproj, encoding="utf-8", errors="replace") as f:
        written = f.read()
    assert "100mbit" not in written and not any("link" in n for n in getattr(result, "notes", []))


def test_half_precision_all_reduce_sends_half_the_bytes_and_the_prediction_counts_them(tmp_path):
    _, full, plan_for = _tabular(tmp_path / "float", "1mbit,1ms")
    _, half, half_plan_for = _tabular(tmp_path / "half", "1mbit,1ms", precision="half")
    sent32 = predict_project(full, layouts_for(["a:2", "b:2"]), plan_for, compute_ms=2)
    sent16 = predict_project(half, layouts_for(["a:2", "b:2"]), half_plan_for, compute_ms=2)
    assert "gradients: 0.000268 MB per iteration, sent as float32" in sent32.header()
    assert "gradients: 0.000268 MB per iteration, sent as float16: 0.000134 MB" in sent16.header()
    assert sent32.gradient_bytes == sent16.gradient_bytes == 268 and (sent32.wire_bytes, sent16.wire_bytes) == (268, 134)
    by32 = {(e.hosts, e.workers_per_host): e for e in sent32.estimates}
    by16 = {(e.hosts, e.workers_per_host): e for e in sent16.estimates}
    # 2 hosts x 2: within a host 134 B / 5 GB/s + 2 x 5 us, between the hosts 134 B / 125 kB/s + 2 x 1 ms; and
    # before it the scales' all-reduce (engine/comm/half.py: one small message, 2 x 5 us + 2 x 1 ms)
    assert by16[(2, 2)].allreduce_s == pytest.approx(134 / 5e9 + 1e-5 + 134 / 125e3 + 2e-3 + (1e-5 + 2e-3))
    assert by32[(2, 2)].allreduce_s == pytest.approx(268 / 5e9 + 1e-5 + 268 / 125e3 + 2e-3)
    for key, e in by16.items():  # the compute is the same; only the all-reduce changes
        assert e.compute_s == by32[key].compute_s and e.iterations == by32[key].iterations
    # half the bandwidth term saved, one latency term more: a 268-byte model on a 1 ms link loses by it
    assert by32[(2, 1)].allreduce_s - by16[(2, 1)].allreduce_s == pytest.approx(134 / 125e3 - 2e-3)
    assert "after a small all-reduce of their scale" in sent16.header()


def test_plan_prints_the_bytes_sent(tmp_path):
    path, _, _ = _tabular(tmp_path, "1mbit,1ms", precision="half")
    out = nnconsole(["plan", path, "--hosts", "a:2,b:2", "--compute-ms", "2"]).stdout
    assert "sent as float16: 0.000134 MB" in out
    row = next(line for line in out.splitlines() if line.startswith("2 hosts x 2"))
    assert " 5.09 " in row  # 134 / 5e9 + 10 us + 134 / 125e3 + 2 ms + (10 us + 2 ms) = 5.09 ms (4.15 as float32)
