"""Search (issue 29): trials per hour of ``nnconsole search`` for each K x G split of this machine's cores,
measured against what ``nnconsole search --plan`` predicts for the same split.

The digits_search template (learning rate, batch size, fc1 width; pruning off so every trial runs its epochs).
A warm-up search for each G (K = cores // G trials at once, at least 2 trials, so the cores are shared as in
the split) gives the prediction its inputs, as ``nnconsole search --plan`` takes them: the measured compute
of the project's runs, each trial's start-up, validation and saving (from the study's finished trials) and
the search command's own start-up (the age of each search process at its first trial); then every split K x G
(K trials at once, G workers each, K x G = the cores) runs its own study of T trials, timed from the command's
start to its end. Goal: every split's measured trials per hour within 35% of its prediction, and the split
the prediction calls fastest measured fastest or within 15% of it.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time

from common import PYTHON, TEMPLATES, bench_env, machine, parse_quick, pin_threads, run_main, scratch, table

pin_threads(1)

from nnconsole.engine.check.project_file import load_valid_project  # noqa: E402
from nnconsole.engine.launch.launcher import plan_for  # noqa: E402
from nnconsole.engine.search.split_plan import overheads_by_workers, split_estimates  # noqa: E402
from nnconsole.engine.search.study import (default_storage_if_present, finished_durations,  # noqa: E402
                                          search_startups)


def _search(project: str, *args: str) -> float:
    start = time.time()
    subprocess.run([PYTHON, "-m", "nnconsole.engine.cli.main", "search", project, "--device", "cpu", *args],
                   check=True, env=bench_env(), stdout=subprocess.DEVNULL)
    return time.time() - start


def main() -> int:
    args = parse_quick(__doc__).parse_args()
    trials, epochs = (2, 1) if args.quick else (8, 3)
    cores = os.cpu_count() or 1
    folder = os.path.join(scratch("search"), "p")
    shutil.copytree(os.path.join(TEMPLATES, "digits_search"), folder)
    project_file = os.path.join(folder, "project.yaml")
    text = open(project_file).read().replace("pruner: median", "pruner: none")
    open(project_file, "w").write(text)
    sizes = sorted({g for g in range(1, cores + 1) if cores % g == 0})
    budget = 0
    for workers in sizes:  # each G's start-up measured with its K at once: K (>= 2) more trials of the one study
        parallel = cores // workers
        budget += max(2, parallel)
        _search(project_file, "--trials", str(budget), "--epochs", str(epochs), "--study", "warmup",
                "--workers-per-trial", str(workers), "--parallel", str(parallel))
    project = load_valid_project(project_file)
    plan = lambda n: plan_for(project, n, "cpu")  # noqa: E731
    base = split_estimates(project, cores, trials, epochs, plan)
    per_epoch = {s.workers: s.trial_s / epochs for s in base}
    storage = default_storage_if_present(project_file)
    durations = finished_durations(storage, "warmup")
    overhead = overheads_by_workers(durations, lambda g: per_epoch.get(g, per_epoch[1]), sorted(per_epoch))
    startup = statistics.median(search_startups(storage, "warmup"))
    predicted = split_estimates(project, cores, trials, epochs, plan, overhead, startup)
    rows, measured = [], {}
    for s in predicted:
        seconds = _search(project_file, "--trials", str(trials), "--epochs", str(epochs), "--parallel", str(s.parallel),
                          "--workers-per-trial", str(s.workers), "--study", f"split_{s.parallel}x{s.workers}")
        measured[(s.parallel, s.workers)] = 3600 * trials / seconds
        rows.append((f"{s.parallel} x {s.workers}", round(3600 * trials / s.total_s, 1),
                     round(measured[(s.parallel, s.workers)], 1), s.note))
    print(machine())
    print(table(("K x G", "predicted trials/h", "measured trials/h", "prediction's note"), rows,
                f"{trials} trials of {epochs} epochs each (digits_search, CPU, {cores} cores); per-trial overhead by G "
                f"{', '.join(f'{g}: {v:.2f} s' for g, v in overhead.items())} and search start-up {startup:.2f} s "
                f"measured by the warm-up"))
    for s, m in zip(predicted, measured.values()):
        print(f"{s.parallel} x {s.workers}: measured / predicted trials per hour = {m / (3600 * trials / s.total_s):.3f}")
    close = all(abs(m / (3600 * trials / s.total_s) - 1) <= 0.35 for s, m in zip(predicted, measured.values()))
    fastest = next(s for s in predicted if "fastest" in s.note)
    best = max(measured.values())
    return 0 if close and measured[(fastest.parallel, fastest.workers)] >= 0.85 * best else 1


if __name__ == "__main__":
    raise SystemExit(run_main(main))
