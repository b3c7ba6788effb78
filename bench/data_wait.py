"""Data wait (issue 31): the share of each training iteration that the training thread spends taking and feeding
its batch, for the digits CNN at batch 256 on 8x8 grey images, 1 and 2 CPU workers, through ``nnconsole train``.

    .venv/bin/python bench/data_wait.py [--rows N] [--quick]

Generates ``--rows`` rows (default 400,000) cycling over 1,000 8x8 PNGs into a temp folder (rows cycle, as in the
ImageNet-row-sized case of the issue, so the rows' pixels span far more pages than a batch), builds the decode
cache once (not measured), then trains one epoch per worker count. The figure is what the trainer records in
every train record of metrics.jsonl (``data_wait_share``: wait / window wall time, mean over ranks), weighted by
the window's iterations; the first window (warm-up) is dropped. The iteration time is shown next to it.
Goal: data wait < 5% of an iteration with every worker count. Exit status as bench/README.md says.

A second table compares, in one process per setting on the same data (1 worker, in-process trainer), the
settings before issue 31 (batches this small gathered in the training thread, pages dropped after every batch)
with today's (the same, pages dropped by window) and with these batches prefetched by a thread (which the
trainer does only from 256 kB per batch: here it measured worse); settings interleaved round by round. It sets two module constants (``prefetch.TRAINING_DEPTH``, ``mapped_pages.UNMAP_WINDOW_BYTES``) and is
skipped where an installation has neither.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

from common import PYTHON, bench_env, machine, pin_threads, run_main, table
from data_projects import make_dataset, make_project

GOAL = 0.05


def train(project: str, workers: int, out: str, env: dict) -> List[dict]:
    """One ``nnconsole train`` run; its train records."""
    cmd = [PYTHON, "-m", "nnconsole.engine.cli.main", "train", project, "--gpus", str(workers), "-o", out, "-q"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=os.path.dirname(project), timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"training with {workers} workers failed:\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}")
    run_dir = next(line.split(": ", 1)[1].strip() for line in proc.stdout.splitlines()
                   if line.startswith("run directory: "))
    with open(os.path.join(run_dir, "metrics.jsonl")) as fh:
        return [r for r in map(json.loads, fh) if r.get("type") == "train"]


# One in-process training run with prefetch depth DEPTH and page window WINDOW (bytes; 0: after every batch).
AB_SCRIPT = """
import json, sys
from nnconsole.engine.data import mapped_pages
from nnconsole.engine.train import prefetch
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.comm.cpu import SingleComm
from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
from nnconsole.engine.project.io import load_project
from nnconsole.engine.rundir.launch_options import WorkerOptions
from nnconsole.engine.train.trainer import Trainer
if not hasattr(mapped_pages, "UNMAP_WINDOW_BYTES"):
    sys.exit(3)
if {depth} is not None:
    prefetch.TRAINING_DEPTH = {depth}
    prefetch.training_depth = lambda batch_bytes: {depth}
if {window} is not None:
    mapped_pages.UNMAP_WINDOW_BYTES = {window}
run_dir = prepare_run(load_project({project!r}), LaunchRequest(output={out!r}), workers=1)
trainer = Trainer(run_dir, SingleComm(), WorkerOptions())
trainer.setup()
trainer.run()
trainer.close()
print(json.dumps([r for r in runs.iter_metrics(run_dir, "train")]))
"""

# (name, prefetch depth or None: the trainer's choice, page window or None: the default)
AB_SETTINGS = (("before: in the training thread, drop every batch", 0, 0),
               ("prefetched, drop every batch", 2, 0),
               ("prefetched, window", 2, None),
               ("now: the trainer's choice, window", None, None))


def in_process(project: str, out: str, depth: Optional[int], window: Optional[int], env: dict) -> List[dict]:
    code = AB_SCRIPT.format(depth=depth, window=window, project=project, out=out)
    proc = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env, timeout=3600)
    if proc.returncode == 3:
        return []
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout[-2000:] + proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summary(records: List[dict]) -> Dict[str, float]:
    """Iteration-weighted data-wait share and time per iteration, the first window left out."""
    rows, last = [], 0
    for r in records:
        rows.append((r["iteration"] - last, r))
        last = r["iteration"]
    rows = rows[1:] or rows
    total = sum(n for n, _ in rows)
    if "data_wait_share" not in rows[0][1]:
        raise RuntimeError("the measured installation records no data_wait_share (an older checkout)")
    return {"share": sum(n * r["data_wait_share"] for n, r in rows) / total,
            "max_share": max(r["data_wait_share"] for _, r in rows),
            "ms": 1000 * sum(n * r["time_per_iter"] for n, r in rows) / total, "iterations": records[-1]["iteration"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=400_000, help="training rows (default 400,000)")
    parser.add_argument("--quick", action="store_true", help="100,000 rows")
    parser.add_argument("--workers", default="1,2", help="worker counts to run (comma-separated)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the in-process comparison (default 2)")
    args = parser.parse_args()
    rows = 100_000 if args.quick and args.rows == 400_000 else args.rows
    pin_threads()
    env = bench_env()
    print(f"# data_wait: {machine()}; load {os.getloadavg()[0]:.1f}")
    folder = tempfile.mkdtemp(prefix="nnconsole-bench-wait-")
    results, compared = [], []
    try:
        started = time.perf_counter()
        make_dataset(folder, rows, size=8, channels=1, validation=1000, distinct=1000)
        print(f"generated {rows:,} rows over 1,000 8x8 PNGs in {time.perf_counter() - started:.1f} s", flush=True)
        for workers in map(int, args.workers.split(",")):
            project = make_project(folder, (1, 8, 8), "digits_cnn", epochs=1, batch=256, workers=workers,
                                   suffix=f"-{workers}")
            if not results:  # the decode cache is built once, outside the measured runs
                train(project, 1, os.path.join(folder, "warm"), env)
            load = os.getloadavg()[0]
            s = summary(train(project, workers, os.path.join(folder, f"runs{workers}"), env))
            results.append((workers, load, s["iterations"], s["ms"], s["ms"] * s["share"], s["share"],
                            s["max_share"]))
            print(f"{workers} worker(s): {s['ms']:.1f} ms/iteration, data wait {s['share']:.2%}", flush=True)
        project = os.path.join(folder, "digits_cnn-1.yaml")
        shares: Dict[str, List[tuple]] = {name: [] for name, _, _ in AB_SETTINGS}
        for rnd in range(args.rounds):
            for name, depth, window in AB_SETTINGS:
                records = in_process(project, os.path.join(folder, "ab"), depth, window, env)
                if records:
                    s = summary(records)
                    shares[name].append((s["ms"], s["share"]))
                    print(f"round {rnd + 1}, {name}: {s['ms']:.1f} ms/iteration, data wait {s['share']:.2%}", flush=True)
        for name, _, _ in AB_SETTINGS:
            if shares[name]:
                ms = sorted(m for m, _ in shares[name])[len(shares[name]) // 2]
                share = sorted(x for _, x in shares[name])[len(shares[name]) // 2]
                compared.append((name, len(shares[name]), ms, ms * share, share))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(table(("workers", "load", "iterations", "ms/iteration", "data wait ms/iteration", "data wait share",
                 "worst window"), results,
                title=f"Data wait, digits CNN, batch 256, 8x8 grey, {rows:,} rows over 1,000 files, 1 epoch "
                      f"(goal < {GOAL:.0%})"))
    if compared:
        print(table(("setting (1 worker, in-process)", "rounds", "ms/iteration", "data wait ms/iteration",
                     "data wait share"), compared,
                    title="Before (issue 31) against now, same data, settings interleaved (medians)"))
    met = all(r[5] < GOAL for r in results)
    print(f"\ngoal {'met' if met else 'missed'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(run_main(main))
