"""On-the-fly decode (issue 31): images per second and the data wait share of training on JPEGs decoded per batch
(the dataset over the cache's disk budget), decoded by threads in the training process (before) or by the decode
worker processes with batches decoded ahead (now).

    .venv/bin/python bench/on_the_fly.py [--images N] [--size S] [--rounds R] [--batch B] [--quick]

Generates ``--images`` (default 5,000) RGB JPEGs of S x S (default 224: the network's Input takes the files' size,
as NNC's does; nnconsole does not resize) into a temp folder, and a light network (average pooling to 8x8, one
affine: the data decides the pace). ``datasets.cache_budget`` is set tiny, so only the index is cached and every
batch is decoded when gathered. Each round trains one epoch in a fresh process per setting, settings interleaved
(threads, processes, threads, ...); the figures are the medians over rounds of what the trainer records
(``samples_per_s`` and ``data_wait_share``, iteration-weighted, the first window left out) and the epoch's wall
time. It sets ``on_the_fly.DECODE_IN_PROCESSES`` in the child and is skipped where an installation lacks it.
Goal: processes at least as fast as threads (the median of the rounds' ratios >= 1). Exit status as bench/README.md says.
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
from typing import Dict, List

from common import PYTHON, bench_env, machine, median, pin_threads, run_main, table
from data_projects import make_dataset, make_project
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.project.io import save_project

# One in-process training run, decoding on the fly with processes (True) or threads (False).
SCRIPT = """
import json, sys, time
from nnconsole.engine.data import on_the_fly
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.comm.cpu import SingleComm
from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
from nnconsole.engine.project.io import load_project
from nnconsole.engine.rundir.launch_options import WorkerOptions
from nnconsole.engine.train.trainer import Trainer
if not hasattr(on_the_fly, "DECODE_IN_PROCESSES"):
    sys.exit(3)
on_the_fly.DECODE_IN_PROCESSES = {processes}
run_dir = prepare_run(load_project({project!r}), LaunchRequest(output={out!r}), workers=1)
trainer = Trainer(run_dir, SingleComm(), WorkerOptions())
trainer.setup()
started = time.perf_counter()
trainer.run()
wall = time.perf_counter() - started
trainer.close()
print(json.dumps({{"wall": wall, "records": list(runs.iter_metrics(run_dir, "train"))}}))
"""

SETTINGS = (("threads in the training process (before)", False), ("decode processes, ahead (now)", True))

# Decode only: every batch of one epoch gathered (float32, as training does) in a fresh process, announced
# DECODE_AHEAD batches ahead as the trainer does; with BUSY a thread runs Python code all along (the GIL-holding
# part of a training step: nnabla's Python-side graph calls, the loop's bookkeeping).
DECODE_SCRIPT = """
import json, sys, threading, time
import numpy as np
from nnconsole.engine.data import on_the_fly
from nnconsole.engine.data.loading import load_dataset
if not hasattr(on_the_fly, "DECODE_IN_PROCESSES"):
    sys.exit(3)
on_the_fly.DECODE_IN_PROCESSES = {processes}
ds = load_dataset({csv!r}, {{"x": [3, {size}, {size}], "y": [1]}}, cache_budget=1e-9)
order = np.random.default_rng(0).permutation(ds.size)
batches = [order[i:i + {batch}] for i in range(0, len(order) - {batch} + 1, {batch})]
ds.gather("x", batches[0])  # the decode processes started (a run starts them in its first batch)
done = threading.Event()
def busy():
    while not done.is_set():
        sum(range(1000))
if {busy}:
    threading.Thread(target=busy, daemon=True).start()
started = time.perf_counter()
for k, batch in enumerate(batches):
    for ahead in batches[k:k + 1 + on_the_fly.DECODE_AHEAD]:
        ds.start(["x"], ahead)
    ds.gather("x", batch)
print(json.dumps({{"images_s": len(batches) * {batch} / (time.perf_counter() - started)}}))
done.set()
"""


def decode_only(csv: str, size: int, batch: int, processes: bool, busy: bool, env: dict) -> float:
    code = DECODE_SCRIPT.format(processes=processes, csv=csv, size=size, batch=batch, busy=busy)
    proc = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env, timeout=3600)
    if proc.returncode == 3:
        return float("nan")
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout[-2000:] + proc.stderr[-3000:])
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["images_s"])


def run(project: str, out: str, processes: bool, env: dict) -> Dict[str, float]:
    code = SCRIPT.format(processes=processes, project=project, out=out)
    proc = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env, timeout=3600)
    if proc.returncode == 3:
        return {}
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout[-2000:] + proc.stderr[-3000:])
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    records, rows, last = result["records"], [], 0
    for r in records:
        rows.append((r["iteration"] - last, r))
        last = r["iteration"]
    rows = rows[1:] or rows
    total = sum(n for n, _ in rows)
    return {"images_s": sum(n * r["samples_per_s"] for n, r in rows) / total,
            "share": sum(n * r["data_wait_share"] for n, r in rows) / total,
            "ms": 1000 * sum(n * r["time_per_iter"] for n, r in rows) / total, "wall": result["wall"],
            "iterations": records[-1]["iteration"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=5000, help="generated JPEGs (default 5,000)")
    parser.add_argument("--size", type=int, default=224, help="their width and height (default 224)")
    parser.add_argument("--batch", type=int, default=64, help="batch size (default 64)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, settings interleaved (default 2)")
    parser.add_argument("--quick", action="store_true", help="1,000 images, 1 round")
    args = parser.parse_args()
    images, rounds = (1000, 1) if args.quick else (args.images, args.rounds)
    pin_threads()
    env = bench_env()
    print(f"# on_the_fly: {machine()}; cores {os.cpu_count()}; load {os.getloadavg()[0]:.1f}")
    folder = tempfile.mkdtemp(prefix="nnconsole-bench-otf-")
    measured: Dict[str, List[Dict[str, float]]] = {name: [] for name, _ in SETTINGS}
    decoded: Dict[tuple, List[float]] = {}
    try:
        started = time.perf_counter()
        make_dataset(folder, images, size=args.size, channels=3, fmt="jpg", validation=min(200, images))
        print(f"generated {images:,} {args.size}x{args.size} JPEGs in {time.perf_counter() - started:.1f} s",
              flush=True)
        path = make_project(folder, (3, args.size, args.size), "pool_linear", epochs=1, batch=args.batch)
        project = load_valid_project(path)
        project.datasets.cache_budget = 1e-9  # over the budget: decoded on the fly
        project.config.log_interval = 10
        save_project(project, path, backup=False)
        for rnd in range(rounds):
            for name, processes in SETTINGS:
                load = os.getloadavg()[0]
                s = run(path, os.path.join(folder, "runs"), processes, env)
                if not s:
                    print(f"{name}: not in this installation", flush=True)
                    continue
                measured[name].append(s)
                print(f"round {rnd + 1}, {name}: {s['images_s']:.0f} images/s, data wait {s['share']:.1%}, "
                      f"epoch {s['wall']:.1f} s (load {load:.1f})", flush=True)
            for busy in (False, True):
                for name, processes in SETTINGS:
                    rate = decode_only(os.path.join(folder, "train.csv"), args.size, args.batch, processes, busy, env)
                    decoded.setdefault((name, busy), []).append(rate)
                    print(f"round {rnd + 1}, decode only{' + a busy Python thread' if busy else ''}, {name}: "
                          f"{rate:.0f} images/s", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rows = []
    for name, _ in SETTINGS:
        runs = measured[name]
        if runs:
            rows.append((name, len(runs), median(r["images_s"] for r in runs), median(r["ms"] for r in runs),
                         median(r["share"] for r in runs), median(r["wall"] for r in runs)))
    print(table(("decode", "rounds", "images/s", "ms/iteration", "data wait share", "epoch s"), rows,
                title=f"On-the-fly decode, {images:,} {args.size}x{args.size} JPEGs, batch {args.batch}, average "
                      "pool + affine, 1 epoch (medians)"))
    print(table(("decode", "training thread", "rounds", "images/s"),
                [(name, "busy in Python" if busy else "idle", len(v), median(v)) for (name, busy), v in decoded.items()],
                title="Decode only: one epoch's batches gathered, announced ahead (medians)"))
    if len(rows) < 2:
        return 2
    # the machine's speed drifts between rounds: the ratio of each round's pair, then their median
    pairs = list(zip(*(measured[name] for name, _ in SETTINGS)))
    ratios = [now["images_s"] / before["images_s"] for before, now in pairs]
    ratio = median(ratios)
    print(f"\nprocesses / threads, images per second, per round: {', '.join(f'{r:.2f}' for r in ratios)}; "
          f"median {ratio:.2f}x")
    busy = [p / t for t, p in zip(*(decoded[(name, True)] for name, _ in SETTINGS))]
    idle = [p / t for t, p in zip(*(decoded[(name, False)] for name, _ in SETTINGS))]
    print(f"decode only, processes / threads per round: idle {', '.join(f'{r:.2f}' for r in idle)}; "
          f"busy {', '.join(f'{r:.2f}' for r in busy)}")
    print(f"goal {'met' if ratio >= 1.0 else 'missed'}")
    return 0 if ratio >= 1.0 else 1


if __name__ == "__main__":
    sys.exit(run_main(main))
