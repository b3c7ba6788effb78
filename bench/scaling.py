"""Scaling: training throughput with 1 and 2 CPU workers on a compute-bound model, and its ceiling.

Each run is a real ``nnconsole train PROJECT --gpus N`` (the CLI, the launcher, mpiexec for N=2), one
thread per worker (OMP_NUM_THREADS=1 etc.; nnabla's CPU backend is single-threaded anyway, and with 2
cores 2 workers x 1 thread is the fair setting). Runs with 1 and 2 workers alternate. Throughput comes
from the runs' own metrics.jsonl records (samples/s per monitor window; validation is outside the
windows), epoch 1 dropped as warm-up.

Model: ``wide_cnn`` on the digits data (conv 64 -> conv 128 -> affine 10: ~1.3 M multiply-adds per
sample for 80 k parameters), per-worker batch 64 (linear scaling: logical batch 128 with 2 workers).

Efficiency = throughput_2 / (2 x throughput_1). Ceiling = t_compute / (t_compute + t_allreduce), with
t_compute the measured 1-worker time per iteration and t_allreduce the measured time of the engine's
all-reduce of this model's gradients between 2 ranks (MpiCpuComm, the fastest of 40 repetitions).
On a shared machine a window where another process took a core is slow, so the table gives both the
median window and the 90th percentile (the "good" windows); the latter is compared with the ceiling.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ENGINE_ROOT, bench_env, digits_project, machine, median, parse_quick,  # noqa: E402
                    pin_threads, scratch, table)

pin_threads(1)

MODEL = "wide_cnn"
BATCH = 64


def percentile(values: list, q: float) -> float:
    import numpy as np
    return float(np.percentile(values, q)) if values else float("nan")


def train(project: str, workers: int, out: str) -> dict:
    """One CLI run; the train records after epoch 1 and the run's wall time."""
    from engine import runs

    cmd = [sys.executable, "-m", "engine.cli", "train", project, "--gpus", str(workers), "-o", out, "-q"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=bench_env(), cwd=os.path.dirname(project),
                          timeout=900)
    wall = time.perf_counter() - start
    run_dir = next((line.split(": ", 1)[1].strip() for line in proc.stdout.splitlines()
                    if line.startswith("run directory: ")), None)
    if proc.returncode != 0 or run_dir is None:
        raise RuntimeError(f"training failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    records = [r for r in runs.iter_metrics(run_dir, "train") if r["epoch"] > 1.0]
    return {"samples_per_s": [r["samples_per_s"] for r in records],
            "time_per_iter": [r["time_per_iter"] for r in records],
            "share": [r["allreduce_share"] for r in records], "wall": wall}


def allreduce_time(shapes: list, quick: bool) -> dict:
    """The engine's all-reduce of these gradient shapes between 2 ranks (mpiexec), seconds."""
    from engine.launch import find_mpiexec, mpi_environment

    env = dict(mpi_environment(), **bench_env())
    cmd = [find_mpiexec(), "-n", "2", "--bind-to", "none", sys.executable, os.path.abspath(__file__),
           "--allreduce-worker", json.dumps(shapes)] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ENGINE_ROOT, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"all-reduce measurement failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1][7:])


def allreduce_worker(shapes: list, quick: bool) -> None:
    from mpi4py import MPI

    from allreduce import interleaved, make_params
    from engine.comm import MpiCpuComm

    world = MPI.COMM_WORLD
    params = make_params([tuple(s) for s in shapes])
    comm = MpiCpuComm(world)
    t = interleaved(world, {"engine": lambda: comm.all_reduce_gradients(params, average=False)}, 10 if quick else 40)
    if world.Get_rank() == 0:
        print("RESULT " + json.dumps({"min": min(t["engine"]), "median": median(t["engine"])}), flush=True)


def gradient_shapes(project_path: str) -> list:
    import nnabla as nn

    from engine.graph import build_graph
    from engine.project.io import load_project

    project = load_project(project_path)
    nn.clear_parameters()
    build_graph(project.network, BATCH, "train")
    shapes = [list(v.shape) for v in nn.get_parameters(grad_only=True).values()]
    nn.clear_parameters()
    return shapes


def main() -> int:
    parser = parse_quick(doc=__doc__)
    parser.add_argument("--rounds", type=int, default=0, help="runs per worker count (default 4, quick 1)")
    parser.add_argument("--allreduce-worker", default=None, help=argparse_hidden())
    args = parser.parse_args()
    if args.allreduce_worker is not None:
        allreduce_worker(json.loads(args.allreduce_worker), args.quick)
        return 0
    rounds = args.rounds or (1 if args.quick else 4)
    epochs = 3 if args.quick else 6
    folder = scratch("scaling")
    project = digits_project(folder, MODEL, epochs=epochs, batch=BATCH, monitor=5)
    print(f"scaling: {machine()}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}; model {MODEL}, per-worker batch {BATCH}, {epochs} "
          f"epochs per run (epoch 1 dropped), {rounds} run(s) per worker count, alternating; "
          f"OMP_NUM_THREADS={bench_env()['OMP_NUM_THREADS']} per worker")
    results = {1: [], 2: []}
    for r in range(rounds):
        for n in ((1, 2) if r % 2 == 0 else (2, 1)):
            results[n].append(train(project, n, os.path.join(folder, "runs")))
    shapes = gradient_shapes(project)
    n_params = sum(int(__import__("numpy").prod(s)) for s in shapes)
    ar = allreduce_time(shapes, args.quick)

    def pooled(n, key):
        return [v for run in results[n] for v in run[key]]

    thr = {n: (median(pooled(n, "samples_per_s")), percentile(pooled(n, "samples_per_s"), 90)) for n in (1, 2)}
    tpi1 = BATCH / thr[1][1]  # compute time per iteration from the good 1-worker windows
    ceiling = tpi1 / (tpi1 + ar["min"])
    rows = []
    for n in (1, 2):
        eff_med = thr[n][0] / (n * thr[1][0])
        eff_p90 = thr[n][1] / (n * thr[1][1])
        rows.append((n, len(results[n]), len(pooled(n, "samples_per_s")), thr[n][0], thr[n][1],
                     median(pooled(n, "time_per_iter")) * 1e3, median(pooled(n, "share")),
                     eff_med, eff_p90, ceiling if n == 2 else 1.0, median(run["wall"] for run in results[n])))
    print(table(("workers", "runs", "windows", "samples/s median", "samples/s p90", "ms/iter median",
                 "all-reduce share", "efficiency (median)", "efficiency (p90)", "ceiling", "run wall s"), rows,
                title="Throughput (samples/s over all workers; efficiency = thr_N / (N x thr_1))"))
    print(f"\nceiling inputs: compute {tpi1 * 1e3:.1f} ms/iteration (1 worker, p90 window), all-reduce of "
          f"{len(shapes)} gradients ({n_params * 4 / 1e6:.2f} MB) {ar['min'] * 1e3:.2f} ms min / "
          f"{ar['median'] * 1e3:.2f} ms median between 2 ranks")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


def argparse_hidden() -> str:
    import argparse
    return argparse.SUPPRESS


if __name__ == "__main__":
    raise SystemExit(main())
