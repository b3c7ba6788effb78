"""scripts/gpu_test_plan.py (issue 27 item 7): it judges itself against docs/gpu-test-plan.md's thresholds, says
"NO GPU" plainly on a machine without GPUs, and its CPU rehearsal runs every step a CPU can, here in CI."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nnconsole.engine.backend.gpu_libs import driver_problem
from tests.support.paths import ROOT, load_script

SCRIPT = os.path.join(ROOT, "scripts", "gpu_test_plan.py")


def _checks():
    return load_script(os.path.join(ROOT, "scripts", "gpu_plan_checks.py"))


def test_the_thresholds_are_read_from_the_plan_document():
    rows = {(r["measure"], r["on"]): r for r in _checks().thresholds()}
    assert rows[("equivalence_max_rel_diff", "gpu")]["limit"] == 1e-3
    assert rows[("equivalence_max_rel_diff", "cpu")]["limit"] == 1e-5
    assert rows[("driver_major", "gpu")]["op"] == ">=" and rows[("driver_major", "gpu")]["limit"] == 550
    assert rows[("busbw_nvlink_gbs", "gpu")]["limit"] == 100
    covered = {m for m, _ in rows}
    assert {"half_finished", "sync_bn_finished", "several_optimizers_finished", "shared_weights_max_rel_diff",
            "lstm_finished", "resume_across_counts_finished", "killed_rank_named", "user_path_finished",
            "one_nccl_per_worker", "nccl_version_is_pinned", "nnabla_over_nccl_tests"} <= covered


def test_a_threshold_turns_into_pass_fail_and_the_exit_code(tmp_path):
    checks = _checks()
    doc = tmp_path / "plan.md"
    doc.write_text("# x\n\n## Pass thresholds\n\n| id | measure | op | limit | on |\n|---|---|---|---|---|\n"
                   "| agree | `diff` | <= | 1e-3 | gpu |\n| agree cpu | `diff` | <= | 1e-5 | cpu |\n"
                   "| fast | `busbw_nvlink_gbs` | >= | 100 | gpu |\n| pcie | `busbw_pcie_host_gbs` | >= | 5 | gpu |\n"
                   "\n## next\n")
    rows = checks.thresholds(str(doc))
    gpu = checks.judge({"diff": 5e-4, "busbw_pcie_host_gbs": 12.0}, "cuda", rows)
    assert [(v["id"], v["verdict"]) for v in gpu] == [("agree", "pass"), ("pcie", "pass")]  # nvlink: not this link
    assert checks.exit_code(gpu) == 0
    cpu = checks.judge({"diff": 5e-4}, "cpu", rows)
    assert [(v["id"], v["verdict"]) for v in cpu] == [("agree cpu", "fail")] and checks.exit_code(cpu) == 1
    assert checks.exit_code(checks.judge({}, "cuda", rows)) == 1  # not measured is not passed


def test_records_of_nccl_debug_topology_and_nccl_tests_build():
    checks = _checks()
    log = ("host:1:1 [0] NCCL INFO NCCL version 2.20.5+cuda12.4\n"
           "host:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n"
           "host:2:9 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct\n")
    assert checks.nccl_debug(log) == {"version": "2.20.5", "transports": ["P2P/IPC/read", "SHM/direct/direct"]}
    topo = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV18\t0-31\nGPU1\tNV18\t X \t0-31\n"
    assert checks.interconnect(topo) == "nvlink"
    assert checks.interconnect(topo.replace("NV18", "SYS")) == "pcie-host"
    build = "\n".join(checks.nccl_tests_build("/v"))
    assert "MPI=1 MPI_HOME=/v NCCL_HOME=/v/lib/python3.10/site-packages/nvidia/nccl" in build
    assert "ln -sf libnccl.so.2" in build and "all_reduce_perf" in build
    found = checks.preconditions_found()
    assert found["glibc_ok"] == 1 and isinstance(found["dev_shm_bytes"], int)


@pytest.mark.skipif(driver_problem() is None, reason="an NVIDIA driver is installed: run the plan itself")
def test_without_gpus_the_report_says_not_run_and_why(tmp_path):
    out = subprocess.run([sys.executable, SCRIPT, "--gpus", "2", "--out", "report"], capture_output=True, text=True,
                         timeout=120, cwd=str(tmp_path))
    assert out.returncode == 2, out.stdout + out.stderr  # not 0: nothing was measured
    assert "NO GPU RUN: NO GPU: 0 usable GPU(s) here, 2 needed" in out.stderr
    report = json.loads((tmp_path / "report" / "gpu_report.json").read_text())
    assert report["preconditions"]["ready"] is False and report["preconditions"]["gpus_visible"] == 0
    text = (tmp_path / "report" / "gpu_report.md").read_text()
    assert "**NOT RUN: NO GPU" in text and "No GPU figures in this report" in text
    assert "steps" not in report


@pytest.mark.slow
@pytest.mark.mpi
@pytest.mark.skipif(driver_problem() is None, reason="an NVIDIA driver is installed: run the plan itself")
def test_the_cpu_rehearsal_runs_every_step_a_cpu_can_and_passes(tmp_path):
    """Small settings (iris_mlp, one epoch, 64 hidden units): the plumbing, not figures."""
    out = subprocess.run([sys.executable, SCRIPT, "--rehearse", "--epochs", "1", "--template", "iris_mlp",
                          "--bn-template", "iris_mlp", "--shared-hidden", "64", "--batch", "16", "--out", "report"],
                         capture_output=True, text=True, timeout=900, cwd=str(tmp_path))
    report = json.loads((tmp_path / "report" / "gpu_report.json").read_text())
    verdicts = {v["id"]: v["verdict"] for v in report["verdicts"]}
    assert out.returncode == 0, (verdicts, out.stdout[-3000:], out.stderr[-3000:])
    cpu_rows = [r for r in _checks().thresholds() if r["on"] in ("cpu", "both")]
    assert set(verdicts) == {r["id"] for r in cpu_rows} and set(verdicts.values()) == {"pass"}, verdicts
    steps = report["steps"]
    for name in ("user_path", "device_cuda", "sync_bn", "several_optimizers", "lstm_sequence"):
        assert steps[name]["status"] == "finished" and steps[name]["ranks_identical"] is True, (name, steps[name])
    assert steps["stop_resume"]["stopped"]["status"] == "stopped"
    assert steps["killed_rank"]["failed_rank"] == 1
    assert "needs a GPU" in steps["half"]
    workers = report["workers"]["device_cuda"]
    assert sorted(w["rank"] for w in workers) == [0, 1] and all(any("libmpi" in p for p in w["mapped"])
                                                                 for w in workers)
    text = (tmp_path / "report" / "gpu_report.md").read_text()
    assert "**Verdict: PASS**" in text and "REHEARSAL" in text and "all_reduce_perf" in text
