"""Large-batch study (issue 30): ``nnconsole study batch`` on the digits template with 1..32 simulated workers,
policies none and linear, linear also with a warm-up, against the issue's expectation: without learning-rate
scaling the validation error rises at large logical batch, and linear scaling plus warm-up holds it.

Goal (exit 0): at the largest worker count, the error without scaling is more than the tolerance above one
worker's, and the best linear point (with or without warm-up) is below the unscaled one. Whatever the figures,
the table is printed (the closing note of the issue reports it). ``--quick``: workers 1,2, 2 epochs.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from common import DIGITS, PYTHON, bench_env, machine, parse_quick, pin_threads, run_main, scratch, table

pin_threads(1)

from nnconsole.engine.rundir import store as runs  # noqa: E402
from nnconsole.engine.rundir.batch_study import list_studies, read_study  # noqa: E402
from nnconsole.engine.study.table import HEADER, point_row, recommendation_text  # noqa: E402


def main() -> int:
    parser = parse_quick(__doc__)
    parser.add_argument("--workers", default="1,2,4,8,16,32")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--warmup", default="0,5", help="warm-ups of the linear policy, in epochs")
    parser.add_argument("--tolerance", default="0.5", help="points of error")
    parser.add_argument("--folder", help="project folder to use (kept; a rerun resumes its study)")
    args = parser.parse_args()
    workers, epochs = ("1,2", 2) if args.quick else (args.workers, args.epochs)
    folder = args.folder or os.path.join(scratch("batch-study"), "digits")
    if not os.path.isdir(folder):
        shutil.copytree(DIGITS, folder)
    path = os.path.join(folder, "project.yaml")
    cmd = [PYTHON, "-m", "nnconsole.engine.cli.main", "study", "batch", path, "--workers", workers,
           "--policy", "none,linear", "--warmup", args.warmup, "--epochs", str(epochs), "--device", "cpu",
           "--tolerance", args.tolerance, "--parallel", str(min(2, os.cpu_count() or 1))]
    print("$ " + " ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, check=True, env=bench_env())
    study = read_study(list_studies(runs.results_root(path))[0])
    print(machine())
    print(table(HEADER, [point_row(p) for p in study.points],
                f"digits_cnn, {epochs} epochs per point, batch {study.per_worker_batch} per worker, CPU"))
    print(recommendation_text(study))
    largest = max(p.workers for p in study.points)
    base = min(p.validation_error for p in study.points if p.workers == 1)
    unscaled = [p.validation_error for p in study.points if p.workers == largest and p.policy == "none"]
    linear = [p.validation_error for p in study.points if p.workers == largest and p.policy == "linear"]
    met = bool(unscaled and linear) and unscaled[0] > base + study.tolerance and min(linear) < unscaled[0]
    print("goal met" if met else f"goal missed: at {largest} workers no scaling {unscaled} vs linear {linear}, "
          f"1 worker {base:.4f}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(run_main(main))
