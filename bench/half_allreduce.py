"""Less to send (issue 20): the CPU all-reduce with float16 messages against the plain float32 one.

1. Time: the engine's all-reduce (``MpiCpuComm``) of 1 and 10 MB of float32 gradients between 2 ranks on this
   host (the launcher's one-host flags, shared memory: loopback, no throttled link), plain and with
   ``half=True``, the two taking turns; median seconds per call.
2. Accuracy: the digits template (20 epochs, batch 32, 2 workers) trained with ``multi_gpu.allreduce_precision``
   float and half from the same seed; the final validation accuracy of each (goal: within 0.3 points; one
   validation image of 360 is 0.28 points).
On throttled links between simulated hosts, with and without overlap: bench/link_overlap.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from common import (PYTHON, ROOT, bench_env, digits_project, median, mpi_env, mpi_prefix, parse_quick, parse_result,
                    pin_threads, print_result, run_main, scratch, table)
from nnconsole.engine.check.project_file import load_valid_project

pin_threads(1)
GOAL_POINTS = 0.3


def allreduce_worker(quick: bool) -> None:
    from mpi4py import MPI

    from allreduce import interleaved, layout, make_params
    from nnconsole.engine.comm.cpu import MpiCpuComm

    world = MPI.COMM_WORLD
    rows = []
    for mb in (1, 10):
        shapes = layout(mb * 2 ** 20, "layers")
        plain, plain_params = MpiCpuComm(world), make_params(shapes)
        half, half_params = MpiCpuComm(world, half=True), make_params(shapes)
        t = interleaved(world, {"float32": lambda: plain.all_reduce_gradients(plain_params, average=False),
                                "float16": lambda: half.all_reduce_gradients(half_params, average=False)},
                        (8 if mb > 1 else 20) if quick else (30 if mb > 1 else 80))
        rows.append({"mb": mb, "float32": median(t["float32"]), "float16": median(t["float16"])})
    if world.Get_rank() == 0:
        print_result({"rows": rows})


def allreduce_times(quick: bool) -> list:
    cmd = mpi_prefix(2) + [PYTHON, os.path.abspath(__file__), "--allreduce-worker"] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), cwd=ROOT, timeout=600)
    result = parse_result(proc.stdout)
    if proc.returncode != 0 or result is None:
        raise RuntimeError(f"all-reduce measurement failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return result["rows"]


def final_accuracy(project: str, precision: str, out: str) -> dict:
    """Train the project on 2 workers with the given all-reduce precision; the last validation record."""
    from nnconsole.engine.rundir import store as runs
    from nnconsole.engine.project.io import save_project

    p = load_valid_project(project)
    p.multi_gpu.allreduce_precision = precision
    path = project.replace(".yaml", f"_{precision}.yaml")
    save_project(p, path, backup=False)
    start = time.perf_counter()
    proc = subprocess.run([PYTHON, "-m", "nnconsole.engine.cli.main", "train", path, "--gpus", "2", "-o", out, "-q"],
                          capture_output=True, text=True, env=bench_env(), cwd=os.path.dirname(path), timeout=1800)
    run_dir = next((line.split(": ", 1)[1].strip() for line in proc.stdout.splitlines()
                    if line.startswith("run directory: ")), None)
    if proc.returncode != 0 or run_dir is None:
        raise RuntimeError(f"training failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    last = list(runs.iter_metrics(run_dir, "validation"))[-1]
    share = median([r["allreduce_share"] for r in runs.iter_metrics(run_dir, "train") if r["epoch"] > 1.0] or [0])
    return {"accuracy": 100 * (1 - last["error"]), "count": last["count"], "wall": time.perf_counter() - start,
            "share": share}


def main() -> int:
    args = parse_quick(__doc__).parse_args()
    rows = allreduce_times(args.quick)
    print(table(["gradients MB", "float32 ms", "float16 ms", "float16 / float32"],
                [[r["mb"], r["float32"] * 1e3, r["float16"] * 1e3, r["float16"] / r["float32"]] for r in rows],
                "Engine all-reduce, 2 ranks on this host (median per call)"))
    folder = scratch("half_allreduce")
    project = digits_project(folder, epochs=5 if args.quick else 20)
    acc = {p: final_accuracy(project, p, os.path.join(folder, "runs")) for p in ("float", "half")}
    gap = abs(acc["float"]["accuracy"] - acc["half"]["accuracy"])
    print(table(["all-reduce", "final validation accuracy %", "images", "all-reduce share", "wall s"],
                [[p, a["accuracy"], a["count"], a["share"], a["wall"]] for p, a in acc.items()],
                f"digits_cnn, 2 workers: gap {gap:.2f} points (goal <= {GOAL_POINTS})"))
    print(json.dumps({"allreduce": rows, "accuracy": acc, "gap_points": gap}))
    return 0 if gap <= GOAL_POINTS else 1


if __name__ == "__main__":
    if "--allreduce-worker" in sys.argv:
        allreduce_worker("--quick" in sys.argv)
    else:
        sys.exit(run_main(main))
