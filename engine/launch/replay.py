"""``nnconsole replay RUN_DIR``: train again from a run's snapshot and check the metrics match."""
from __future__ import annotations

import math
import os
import shutil
import sys
from typing import Dict, List, Tuple

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import (LAUNCH_FILE, OPTIMIZER_LOSS, RUN_DIR_EVENT, TRAIN, VALIDATION, RunStatus,
                                              announce)
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.rundir.launch_options import WorkerOptions
from nnconsole.engine.rundir.protocol import RESOLVED_FILE, SNAPSHOT_FILE
from nnconsole.engine.launch.launcher import launch, LaunchRequest
from nnconsole.engine.launch.progress import ProgressPrinter

TOLERANCE = 1e-6


def metric_differences(a_dir: str, b_dir: str) -> Tuple[float, List[str]]:
    """Largest absolute difference of loss/error between two runs' records, and the mismatches found."""
    def keyed(run_dir: str) -> Dict[tuple, dict]:  # every optimizer's losses too (issue 17)
        return {(r["type"], r["iteration"], r.get("optimizer", "")): r for r in runs.iter_metrics(run_dir)
                if r.get("type") in (TRAIN, VALIDATION, OPTIMIZER_LOSS)}

    a, b = keyed(a_dir), keyed(b_dir)
    problems = [f"record {k} only in {a_dir if k in a else b_dir}" for k in sorted(set(a) ^ set(b))]
    worst = 0.0
    for key in sorted(set(a) & set(b)):
        for field in [f for f in ("loss", "error") if f in a[key]]:
            diff = abs(a[key][field] - b[key][field])
            if math.isnan(diff):
                diff = math.inf
            worst = max(worst, diff)
            if diff > TOLERANCE:
                kind = f"{key[0]} of {key[2]}" if key[2] else key[0]
                problems.append(f"{kind} iteration {key[1]} {field}: {a[key][field]!r} vs {b[key][field]!r}")
    return worst, problems


def replay(run_dir: str, quiet: bool = False, events: str = "") -> int:
    """Re-run ``run_dir`` with its snapshot, seed, worker count and epochs; 0 when metrics match.

    ``events``: the file that gets the new run's ``run_dir`` event (``nnconsole replay --events``).
    """

    resolved = os.path.join(run_dir, RESOLVED_FILE)
    if not os.path.isfile(resolved):
        print(f"{run_dir}: not a run directory (no {RESOLVED_FILE})", file=sys.stderr)
        return ExitCode.BAD_INPUT
    # The run's own project.yaml is trusted (absolute dataset paths) only next to the files nnconsole
    # wrote with it; without them it would be refused as a project reaching outside its folder.
    missing = [name for name in (SNAPSHOT_FILE, LAUNCH_FILE)
               if not os.path.isfile(os.path.join(run_dir, name))]
    if missing:
        print(f"{run_dir}: {' and '.join(missing)} missing: replay trains again from the project as it was when "
              f"the run started ({SNAPSHOT_FILE}) with the run's options ({LAUNCH_FILE}), both written "
              "then; this folder cannot be replayed (train its project again with 'nnconsole train')",
              file=sys.stderr)
        return ExitCode.BAD_INPUT
    options = WorkerOptions.read(run_dir)
    request = LaunchRequest(project_path=resolved, output=os.path.dirname(os.path.abspath(run_dir)),
                            workers=options.workers, epochs=options.max_epoch, device=options.device,
                            simulate_workers=options.simulate_workers)
    printer = (lambda r: None) if quiet else ProgressPrinter()

    def started(new_dir: str, plan) -> None:  # noqa: ARG001 - the plan is the original run's
        shutil.copyfile(os.path.join(run_dir, SNAPSHOT_FILE), os.path.join(new_dir, SNAPSHOT_FILE))
        announce(events, RUN_DIR_EVENT, run_dir=new_dir, replay_of=run_dir, pid=os.getpid())
        print(f"replaying {run_dir} into {new_dir}", flush=True)

    result = launch(request, report=printer, on_started=started)
    if result.status != RunStatus.FINISHED:
        print(f"replay did not finish: {result.message}")
        return ExitCode.FAILED
    worst, problems = metric_differences(run_dir, result.run_dir)
    if problems:
        print(f"metrics differ (largest difference {worst:.3g}):")
        for line in problems[:20]:
            print(f"  {line}")
        return ExitCode.FAILED
    print(f"metrics reproduced: every loss and error record matches (largest difference {worst:.3g})")
    return ExitCode.OK
