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
median window and the 90th percentile (the "good" windows). A third case runs two independent 1-worker
trainings at the same moment: what two processes get from the machine with no communication at all
(memory bandwidth, shared caches, the host's scheduling). The ceiling with both cores busy is that
share times the all-reduce ceiling; the 2-worker efficiency is compared with it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

from common import (PYTHON, ROOT, bench_env, digits_project, machine, median, mpi_env, mpi_prefix,  # noqa: E402
                    parse_quick, parse_result, pin_threads, print_result, run_main, scratch, table)
from nnconsole.engine.check.project_file import load_valid_project

pin_threads(1)

MODEL = "wide_cnn"
BATCH = 64


def percentile(values: list, q: float) -> float:
    import numpy as np
    return float(np.percentile(values, q)) if values else float("nan")


def train(project: str, workers: int, out: str) -> dict:
    """One CLI run; the train records after epoch 1 and the run's wall time."""
    return train_together(project, [workers], out)[0]


def train_together(project: str, worker_counts: list, out: str) -> list:
    """CLI runs started at the same moment (one per entry of ``worker_counts``); each run's records."""
    from nnconsole.engine.rundir import store as runs

    start = time.perf_counter()
    procs = [subprocess.Popen([PYTHON, "-m", "nnconsole.engine.cli.main", "train", project, "--gpus", str(n), "-o", out,
                               "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=bench_env(),
                              cwd=os.path.dirname(project)) for n in worker_counts]
    results = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=900)
        wall = time.perf_counter() - start
        run_dir = next((line.split(": ", 1)[1].strip() for line in stdout.splitlines()
                        if line.startswith("run directory: ")), None)
        if proc.returncode != 0 or run_dir is None:
            raise RuntimeError(f"training failed ({proc.returncode}):\n{stdout[-2000:]}\n{stderr[-2000:]}")
        records = [r for r in runs.iter_metrics(run_dir, "train") if r["epoch"] > 1.0]
        results.append({"samples_per_s": [r["samples_per_s"] for r in records],
                        "time_per_iter": [r["time_per_iter"] for r in records],
                        "share": [r["allreduce_share"] for r in records], "wall": wall})
    return results


def allreduce_time(shapes: list, quick: bool) -> dict:
    """The engine's all-reduce of these gradient shapes between 2 ranks, started with the launcher's own
    one-host flags (as the 2-worker training runs are), seconds."""
    cmd = mpi_prefix(2) + [PYTHON, os.path.abspath(__file__), "--allreduce-worker",
                           json.dumps(shapes)] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), cwd=ROOT, timeout=600)
    result = parse_result(proc.stdout)
    if proc.returncode != 0 or result is None:
        raise RuntimeError(f"all-reduce measurement failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return result


def allreduce_worker(shapes: list, quick: bool) -> None:
    from mpi4py import MPI

    from allreduce import interleaved, make_params
    from nnconsole.engine.comm.cpu import MpiCpuComm

    world = MPI.COMM_WORLD
    params = make_params([tuple(s) for s in shapes])
    comm = MpiCpuComm(world)
    t = interleaved(world, {"engine": lambda: comm.all_reduce_gradients(params, average=False)}, 10 if quick else 40)
    if world.Get_rank() == 0:
        print_result({"min": min(t["engine"]), "median": median(t["engine"])})


def gradient_shapes(project_path: str) -> list:
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    project = load_valid_project(project_path)
    nn.clear_parameters()
    build_graph(project.network, BATCH, "train")
    shapes = [list(v.shape) for v in nn.get_parameters(grad_only=True).values()]
    nn.clear_parameters()
    return shapes


def main() -> int:
    parser = parse_quick(doc=__doc__)
    parser.add_argument("--rounds", type=int, default=0, help="runs per worker count (default 4, quick 1)")
    parser.add_argument("--allreduce-worker", default=None, help=argparse.SUPPRESS)
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
    pairs = []  # two independent 1-worker runs at once: the machine's compute with both cores busy
    for r in range(rounds):
        for n in ((1, 2, "pair") if r % 2 == 0 else ("pair", 2, 1)):
            if n == "pair":
                pairs.append(train_together(project, [1, 1], os.path.join(folder, "runs")))
            else:
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
    # Two runs that share nothing but the machine: their summed throughput is what 2 workers could
    # reach with no communication at all (memory bandwidth, caches and the host's scheduling included).
    pair_med = median([median(a["samples_per_s"]) + median(b["samples_per_s"]) for a, b in pairs])
    pair_p90 = median([percentile(a["samples_per_s"], 90) + percentile(b["samples_per_s"], 90) for a, b in pairs])
    busy = pair_med / (2 * thr[1][0])  # what sharing the machine alone costs
    rows.append(("2 x 1 (independent, at once)", len(pairs), sum(len(a["samples_per_s"]) + len(b["samples_per_s"])
                                                                  for a, b in pairs), pair_med, pair_p90,
                 median([v for a, b in pairs for v in a["time_per_iter"] + b["time_per_iter"]]) * 1e3, 0.0,
                 busy, pair_p90 / (2 * thr[1][1]), "-", median(max(a["wall"], b["wall"]) for a, b in pairs)))
    print(table(("workers", "runs", "windows", "samples/s median", "samples/s p90", "ms/iter median",
                 "all-reduce share", "efficiency (median)", "efficiency (p90)", "ceiling", "run wall s"), rows,
                title="Throughput (samples/s over all workers; efficiency = thr_N / (N x thr_1))"))
    eff2 = thr[2][0] / (2 * thr[1][0])
    print(f"\nceiling with both cores busy = {busy:.3f} (two independent runs) x {ceiling:.3f} (all-reduce) = "
          f"{busy * ceiling:.3f}; 2 workers reach {eff2:.3f}, i.e. {eff2 / (busy * ceiling):.2f} of it (median windows)")
    # The host's speed drifts over minutes (a VM's vCPUs), so each round's three runs, made one after
    # the other, are also compared with each other.
    rows = []
    for r, (one, two, pair) in enumerate(zip(results[1], results[2], pairs)):
        t1, t2 = median(one["samples_per_s"]), median(two["samples_per_s"])
        tp = median(pair[0]["samples_per_s"]) + median(pair[1]["samples_per_s"])
        rows.append((r + 1, t1, t2, tp, t2 / (2 * t1), tp / (2 * t1), t2 / tp, median(two["share"])))
    print(table(("round", "1 worker samples/s", "2 workers samples/s", "2 x 1 independent samples/s",
                 "efficiency", "independent / (2 x 1)", "2 workers / independent", "all-reduce share"), rows,
                title="Per round (medians of each run's windows)"))
    print(f"\nceiling inputs: compute {tpi1 * 1e3:.1f} ms/iteration (1 worker, p90 window), all-reduce of "
          f"{len(shapes)} gradients ({n_params * 4 / 1e6:.2f} MB) {ar['min'] * 1e3:.2f} ms min / "
          f"{ar['median'] * 1e3:.2f} ms median between 2 ranks")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
