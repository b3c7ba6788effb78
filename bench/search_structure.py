"""Search (issue 29): NNC's structure search on the digits template, error x multiply-adds, against the issue's
goal: the Pareto front holds a network with at most half the template's multiply-adds and at most 1 point more
validation error than the template trained the same way (same epochs, seed, CPU), measured in this run.

``--trials`` (default 20) trials of ``--epochs`` (default 8) epochs, NSGA-II, up to 2 changes per trial, 2 at once.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import yaml

from common import PYTHON, TEMPLATES, bench_env, machine, parse_quick, pin_threads, run_main, scratch, table

pin_threads(1)

from nnconsole.engine.project.io import load_project  # noqa: E402
from nnconsole.engine.rundir import store as runs  # noqa: E402
from nnconsole.engine.search.study import best_trials, default_storage, open_study  # noqa: E402


def _cli(*args: str) -> None:
    subprocess.run([PYTHON, "-m", "nnconsole.engine.cli.main", *args], check=True, env=bench_env(),
                   stdout=subprocess.DEVNULL)


def main() -> int:
    parser = parse_quick(__doc__)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()
    trials, epochs = (4, 2) if args.quick else (args.trials, args.epochs)
    folder = os.path.join(scratch("structure"), "p")
    shutil.copytree(os.path.join(TEMPLATES, "digits_search"), folder)
    path = os.path.join(folder, "project.yaml")
    data = yaml.safe_load(open(path).read())
    data["search"].update(params=[], structure=True, objectives=["error", "multiply_adds"], pruner="none",
                          sampler="nsga2", trials=trials, max_mutations=2)
    open(path, "w").write(yaml.safe_dump(data, sort_keys=False))
    _cli("train", path, "--epochs", str(epochs), "--device", "cpu", "-q")
    status = runs.read_status(runs.list_runs(runs.results_root(path))[-1])
    base_error, base_macs = status.best_validation_error, status.total_macs
    _cli("search", path, "--epochs", str(epochs), "--device", "cpu", "--parallel", str(min(2, os.cpu_count() or 1)))
    project = load_project(path)
    front = best_trials(open_study(default_storage(path), project.name, project.search))
    rows = [(t.number, round(t.values[0], 4), int(t.values[1]), "; ".join(t.user_attrs.get("changes", [])) or "-")
            for t in front]
    print(machine())
    print(table(("trial", "error", "multiply-adds", "changes"), rows,
                f"Pareto front of {trials} trials x {epochs} epochs; the template: error {base_error:.4f}, "
                f"{base_macs:,} multiply-adds"))
    met = any(t.values[1] <= base_macs / 2 and t.values[0] <= base_error + 0.01 for t in front)
    print("goal met" if met else "goal missed: no front network with <= half the multiply-adds within 1 point")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(run_main(main))
