"""The main flow on a real X server (issue 19; Delete, issue 28): scripts/xvfb_flow.py starts Xvfb and the real app,
goes from the start page through a new project, Run with 2 workers, Stop, Resume, Evaluate and Infer,
and saves a screenshot of each screen. CI installs xvfb and xdotool (scripts/run-tests.sh)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.gui.support import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "xvfb_flow.py")

pytestmark = [pytest.mark.gui, pytest.mark.mpi, pytest.mark.slow]

STEPS = ["start page", "new project from a template", "Run with 2 workers", "Stop", "Resume", "Evaluate", "Infer",
         "Delete the run"]
SHOTS = ["01_start_page", "02_template_chooser", "03_edit", "04_training_2_workers", "05_stopped",
         "06_resumed_finished", "07_evaluation", "08_inference", "09_delete_question", "10_deleted"]


def test_the_main_flow_on_a_real_x_server(tmp_path):
    out = tmp_path / "shots"
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY")}
    done = subprocess.run([sys.executable, SCRIPT, "--out", str(out), "--timeout", "480"], cwd=str(tmp_path),
                          env=env, capture_output=True, text=True, timeout=540)  # under pytest-timeout's 600 s
    if done.returncode == 77:
        pytest.skip(done.stdout.strip())  # names the missing Debian packages
    steps = json.loads((out / "flow.json").read_text()) if (out / "flow.json").is_file() else []
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:], steps)
    assert [s["step"] for s in steps] == STEPS and all(s["status"] == "ok" for s in steps), steps
    assert steps[3]["note"].startswith("stopped at epoch") and "checkpoint True" in steps[3]["note"]
    assert steps[4]["note"].startswith("finished, 2 workers")
    assert "Trash" in steps[7]["note"] and "Move this run to the trash?" in steps[7]["note"]  # issue 28 item 1
    for name in SHOTS:
        png = out / f"{name}.png"
        assert png.is_file() and png.stat().st_size > 10_000, name  # a real picture, not a blank screen
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_missing_packages_skip_with_their_names(tmp_path):
    """Without Xvfb or xdotool on PATH the flow runs nothing, exits 77 and names the packages."""
    env = dict(os.environ, PATH=str(tmp_path))  # no Xvfb, no xdotool
    done = subprocess.run([sys.executable, SCRIPT, "--out", str(tmp_path / "shots")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 77
    assert "xvfb" in done.stdout and "xdotool" in done.stdout and "apt-get install -y" in done.stdout
    assert not (tmp_path / "shots").exists()
