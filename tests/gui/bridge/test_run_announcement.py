"""The GUI learns a run's directory from the CLI's machine-readable event, never from its human text."""
from __future__ import annotations

import os
import sys

from nnconsole.engine.rundir import store as runs
from tests.gui.support import fake_run
FAKE_ENGINE = r'''
import json, sys, time
args = sys.argv[1:]
print("run directory: /decoy/printed/for/people", flush=True)  # human text, may change any day
time.sleep(0.3)
with open(args[args.index("--events") + 1] if "--events" in args else "/dev/null", "a") as fh:
    fh.write(json.dumps({"event": "ignored-kind", "run_dir": "/not/this/one"}) + "\n")
    fh.write(json.dumps({"event": "run_dir", "run_dir": args[args.index("--real") + 1]}) + "\n")
time.sleep(0.5)
'''


def test_the_run_directory_comes_from_the_cli_event_not_its_printed_text(qtbot, tmp_path, monkeypatch):
    from nnconsole.app.bridge import engine_process, run_controller

    project = str(tmp_path / "p" / "project.yaml")
    os.makedirs(os.path.dirname(project))
    open(project, "w").close()
    real = fake_run(project, "20260101_000000", status="running", pid=os.getpid())
    script = tmp_path / "fake_engine.py"
    script.write_text(FAKE_ENGINE)
    monkeypatch.setattr(engine_process, "engine_program", lambda: (sys.executable, [str(script), "--real", real]))
    controller = run_controller.RunController()
    with qtbot.waitSignal(controller.run_started, timeout=10_000) as blocker:
        controller.start_training(project, workers=1)
    assert blocker.args == [real] and controller.run_dir == real
    # the CLI's output files moved into the run directory; the private folder (with the events) is gone
    qtbot.waitUntil(lambda: not controller.is_running(), timeout=10_000)
    assert os.path.isfile(os.path.join(real, "cli-output.log"))
    assert [n for n in os.listdir(runs.results_root(project)) if n.startswith(".starting-")] == []
