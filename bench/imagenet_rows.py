"""ImageNet's row count (issue 31): 1,281,167 training and 50,000 validation rows cycling over 1,000 small PNGs, the
digits CNN at batch 256 on 2 CPU workers, from a cold start (no dataset cache): the largest resident set of any
process of the run and the time to the first iteration, against the same project on a 1,500-row slice and the
time Python's ``csv`` module takes to read the training CSV once.

    .venv/bin/python bench/imagenet_rows.py [--rows N] [--validation N] [--workers W] [--quick]

Everything is generated into a temp folder (removed at the end). Each run is ``nnconsole train --gpus W`` (the
CLI: launcher, mpiexec, workers and the decode processes they start), with ``log_interval: 1``; the time to
the first iteration is from spawning the CLI to the first train record in metrics.jsonl, then the run is
asked to stop (its STOP file) and waited for. The resident peak is the largest ``VmHWM`` of any process of the
CLI's process tree, sampled every 20 ms (launcher and workers included). Slice and full runs alternate over
``--rounds``; medians. Goals (issue 31): peak RSS < 300 MB on the full rows; (t_first(full) - t_first(slice))
<= 20 x t_csv. ``--rows`` runs a smaller copy (the slice stays 1,500 rows).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional, Tuple

from common import PYTHON, bench_env, machine, median, pin_threads, run_main, table
from data_projects import make_dataset, make_project

ROWS, VALIDATION, DISTINCT, SLICE = 1_281_167, 50_000, 1000, 1500
GOAL_RSS_MB, GOAL_CSV_FACTOR = 300, 20
CSV_CODE = "import csv, sys, time\nt = time.perf_counter()\nfor _ in csv.reader(open(sys.argv[1], newline='')): pass\n" \
           "print(time.perf_counter() - t)"


def _children() -> Dict[int, List[int]]:
    """ppid -> pids of every process on the machine (one pass over /proc)."""
    tree: Dict[int, List[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(name))
    return tree


def _descendants(root: int) -> List[int]:
    tree, out, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(tree.get(pid, []))
    return out


def _hwm_kb(pid: int) -> Tuple[int, str]:
    try:
        with open(f"/proc/{pid}/status") as fh:
            text = fh.read()
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return 0, ""
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]), cmd
    return 0, cmd


def _role(cmd: str) -> str:
    program = cmd.split(" ")[0].rsplit("/", 1)[-1]
    if program in ("mpiexec", "mpirun", "prterun", "prted", "orterun", "orted"):  # its arguments name the worker
        return "mpiexec"
    for marker, role in (("train.worker", "worker"), ("decode_process", "decode process"),
                         ("cli.main", "launcher (CLI)")):
        if marker in cmd:
            return role
    return program or "?"


def first_iteration(project: str, workers: int, out: str, env: dict) -> Dict[str, object]:
    """One cold run to its first iteration: seconds, peak VmHWM (MB) per role, the run stopped after."""
    cmd = [PYTHON, "-m", "nnconsole.engine.cli.main", "train", project, "--gpus", str(workers), "-o", out, "-q"]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=os.path.dirname(project))
    peaks: Dict[str, int] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for pid in _descendants(proc.pid):
                kb, cmdline = _hwm_kb(pid)
                if kb:  # an exited process has no memory left to read
                    role = _role(cmdline)
                    peaks[role] = max(peaks.get(role, 0), kb)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    first: Optional[float] = None
    run_dir: Optional[str] = None
    try:
        line = proc.stdout.readline()
        if line.startswith("run directory: "):
            run_dir = line.split(": ", 1)[1].strip()
        metrics = os.path.join(run_dir, "metrics.jsonl") if run_dir else None
        while metrics and proc.poll() is None:
            try:
                with open(metrics, "rb") as fh:
                    if any(json.loads(raw).get("type") == "train" for raw in fh if raw.strip()):
                        first = time.perf_counter() - started
                        break
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        if run_dir and proc.poll() is None:
            with open(os.path.join(run_dir, "STOP"), "w") as fh:  # the run's stop request (rundir protocol)
                fh.write("bench\n")
        tail, _ = proc.communicate(timeout=900)
    finally:
        done.set()
        sampler.join()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if first is None:
        raise RuntimeError(f"no first iteration (exit {proc.returncode}):\n{(line + tail)[-3000:]}")
    return {"first": first, "peaks": {role: kb / 1024 for role, kb in peaks.items()}}


def _write_slice(folder: str, source: str, name: str, rows: int) -> str:
    with open(os.path.join(folder, source)) as fh:
        lines = [next(fh) for _ in range(rows + 1)]
    with open(os.path.join(folder, name), "w") as fh:
        fh.writelines(lines)
    return name


def csv_seconds(path: str, env: dict, repeats: int = 3) -> float:
    """Python's csv module reading ``path`` once (a fresh interpreter each time; median)."""
    times = []
    for _ in range(repeats):
        out = subprocess.run([PYTHON, "-c", CSV_CODE, path], capture_output=True, text=True, env=env, timeout=600)
        times.append(float(out.stdout.strip()))
    return median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=ROWS, help=f"training rows (default {ROWS:,})")
    parser.add_argument("--validation", type=int, default=0, help=f"validation rows (default {VALIDATION:,}, "
                        "scaled with --rows)")
    parser.add_argument("--workers", type=int, default=2, help="CPU workers (default 2)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of slice + full runs (default 1)")
    parser.add_argument("--quick", action="store_true", help="100,000 rows")
    args = parser.parse_args()
    rows = 100_000 if args.quick and args.rows == ROWS else args.rows
    validation = args.validation or max(1, round(VALIDATION * rows / ROWS))
    pin_threads()
    env = bench_env()
    print(f"# imagenet_rows: {machine()}; load {os.getloadavg()[0]:.1f}")
    folder = tempfile.mkdtemp(prefix="nnconsole-bench-rows-")
    results: Dict[str, List[Dict[str, object]]] = {"slice": [], "full": []}
    try:
        started = time.perf_counter()
        make_dataset(folder, max(rows, validation), size=8, channels=1, validation=validation, distinct=DISTINCT)
        if validation > rows:
            _write_slice(folder, "train.csv", "train.csv", rows)
        print(f"generated {rows:,} training and {validation:,} validation rows over {DISTINCT:,} 8x8 PNGs in "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        t_csv = csv_seconds(os.path.join(folder, "train.csv"), env)
        # the slice: its own folder (its own cache), the same files through a link to the images
        small = os.path.join(folder, "slice")
        os.makedirs(small)
        os.symlink(os.path.join(folder, "images"), os.path.join(small, "images"))
        for name in ("train.csv", "validation.csv"):
            shutil.copy(os.path.join(folder, name), os.path.join(small, name + ".all"))
            _write_slice(small, name + ".all", name, SLICE)
            os.remove(os.path.join(small, name + ".all"))
        projects = {}
        for key, where in (("slice", small), ("full", folder)):
            projects[key] = make_project(where, (1, 8, 8), "digits_cnn", epochs=1, batch=256, workers=args.workers)
            _set_log_interval(projects[key])
        for rnd in range(args.rounds):
            for key in ("slice", "full"):
                shutil.rmtree(os.path.join(os.path.dirname(projects[key]), ".nnconsole-cache"), ignore_errors=True)
                results[key].append(first_iteration(projects[key], args.workers,
                                                    os.path.join(folder, f"runs-{key}-{rnd}"), env))
                print(f"round {rnd + 1} {key}: first iteration {results[key][-1]['first']:.1f} s", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    t_slice = median([r["first"] for r in results["slice"]])
    t_full = median([r["first"] for r in results["full"]])
    rows_out = []
    for key, count in (("slice", SLICE), ("full", rows)):
        roles = sorted({role for r in results[key] for role in r["peaks"]})
        for role in roles:
            rows_out.append((key, f"{count:,}", role, max(r["peaks"].get(role, 0.0) for r in results[key])))
    peak = max(r["peaks"].get(role, 0.0) for r in results["full"] for role in r["peaks"])
    print(table(("run", "training rows", "process", "peak RSS (VmHWM) MB"), rows_out,
                title=f"Largest resident set per kind of process, {args.workers} workers, cold start"))
    budget = GOAL_CSV_FACTOR * t_csv
    print(table(("t_csv s", "t_first slice s", "t_first full s", "full - slice s", f"{GOAL_CSV_FACTOR} x t_csv s",
                 "(full - slice) / t_csv", "peak RSS MB (full)"),
                [(t_csv, t_slice, t_full, t_full - t_slice, budget, (t_full - t_slice) / t_csv, peak)],
                title=f"Time to the first iteration, {rows:,} rows against {SLICE:,} (goals: full - slice <= "
                      f"{GOAL_CSV_FACTOR} x t_csv; peak RSS < {GOAL_RSS_MB} MB)"))
    missed = [name for name, ok in (("rss", peak < GOAL_RSS_MB), ("start", t_full - t_slice <= budget)) if not ok]
    print(f"\ngoals missed: {', '.join(missed) if missed else 'none'}"
          + ("" if rows == ROWS else f" (at {rows:,} rows, not ImageNet's {ROWS:,})"))
    return 1 if missed else 0


def _set_log_interval(project: str) -> None:
    """log_interval 1: the first train record comes right after iteration 1."""
    from nnconsole.engine.project.io import load_project, save_project

    loaded = load_project(project)
    loaded.config.log_interval = 1
    save_project(loaded, project, backup=False)


if __name__ == "__main__":
    sys.exit(run_main(main))
