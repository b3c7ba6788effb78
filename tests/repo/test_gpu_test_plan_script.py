"""scripts/gpu_test_plan.py on a machine without GPUs: preconditions checked, "NO GPU" said plainly."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nnconsole.engine.backend.gpu_libs import driver_problem
from tests.support.paths import ROOT


@pytest.mark.skipif(driver_problem() is None, reason="an NVIDIA driver is installed: run the plan itself")
def test_without_gpus_the_report_says_not_run_and_why(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gpu_test_plan.py"), "--gpus", "2",
                          "--out", "report"], capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert out.returncode == 2, out.stdout + out.stderr  # not 0: nothing was measured
    assert "NO GPU RUN: NO GPU: 0 usable GPU(s) here, 2 needed" in out.stderr
    report = json.loads((tmp_path / "report" / "gpu_report.json").read_text())
    pre = report["preconditions"]
    assert pre["ready"] is False and pre["gpus_visible"] == 0
    assert pre["python_ok"] is True and pre["nnabla"] == "1.39.0"
    assert "libcuda.so.1" in pre["driver"]  # no driver on this machine, and the report says so
    text = (tmp_path / "report" / "gpu_report.md").read_text()
    assert "**NOT RUN: NO GPU" in text and "No GPU figures in this report" in text
    assert "## Samples/s" not in text and "scaling" not in report
