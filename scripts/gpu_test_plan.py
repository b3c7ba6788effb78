#!/usr/bin/env python3
"""The GPU day's measurements (docs/gpu-test-plan.md), run in order and written to one report.

    .venv/bin/python scripts/gpu_test_plan.py [--gpus 2] [--out gpu-report] [--epochs 3]
                                              [--template digits_cnn] [--nccl-tests DIR]

1. Preconditions a CPU can check: CPython 3.10, nnabla 1.39, nnabla-ext-cuda and the libraries of
   the cuda extra, the NVIDIA driver, nvidia-smi, GPUs visible to nnabla, mpiexec, nccl-tests.
   Without at least --gpus usable GPUs the report says so and the script exits 2.
2. ``nnconsole doctor --gpus N`` (its NCCL smoke test: all_reduce, one callback backward, bandwidth).
3. Parameter equivalence: 1 GPU with batch N*B against N GPUs with batch B each (scaling none).
4. Samples/s per GPU and scaling efficiency: 1 GPU against N GPUs at the same per-GPU batch B.
5. nnabla's NCCL all-reduce bus bandwidth, 256 KB to 256 MB, against nccl-tests' all_reduce_perf.
6. Half against float: the same 1-GPU run with config.precision half; validation errors and losses.

Writes OUT/gpu_report.md and OUT/gpu_report.json; ``--cpu-rehearsal`` runs steps 3, 4 and 6's
plumbing on the CPU (no figures worth keeping) to check the script itself.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_GPU_EXIT = 2


def preconditions(gpus: int, nccl_tests: str) -> dict:
    """Everything checkable without running on a GPU; ``ready`` says whether the GPU steps can run."""
    from nnconsole.engine.doctor import gpu_checks as doctor_gpu
    from nnconsole.engine.backend import gpu_libs
    from nnconsole.engine.backend.device import cuda_diagnosis, gpu_count

    found = {"python": sys.version.split()[0], "python_ok": sys.version_info[:2] == (3, 10)}
    try:
        import nnabla

        found["nnabla"] = nnabla.__version__
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        found["nnabla"] = f"not importable: {exc}"
    found["extension_installed"] = gpu_libs.extension_installed()
    libraries = gpu_libs.preload_wheel_libraries() if found["extension_installed"] else None
    found["cuda_libraries"] = (libraries.problem() or f"{len(libraries.loaded)} loaded") if libraries else "n/a"
    found["driver"] = gpu_libs.driver_problem() or f"CUDA {doctor_gpu.driver_version()}"
    smi = shutil.which("nvidia-smi")
    found["nvidia_smi"] = _run([smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]) \
        if smi else "nvidia-smi not found"
    diagnosis = cuda_diagnosis()
    found["cuda_diagnosis"] = diagnosis or "usable"
    found["gpus_visible"] = gpu_count() if diagnosis is None else 0
    found["mpiexec"] = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
    perf = os.path.join(nccl_tests, "all_reduce_perf") if nccl_tests else shutil.which("all_reduce_perf")
    found["nccl_tests"] = perf if perf and os.path.isfile(perf) else "all_reduce_perf not found (build nccl-tests)"
    reasons = []
    if not found["python_ok"]:
        reasons.append(f"CPython {found['python']}, not 3.10")
    if found["gpus_visible"] < gpus:
        reasons.append(f"NO GPU: {found['gpus_visible']} usable GPU(s) here, {gpus} needed "
                       f"({found['cuda_diagnosis']})")
    found["ready"] = not reasons
    found["not_ready_because"] = reasons
    return found


def _run(cmd: list, timeout: float = 3600, env: dict = None) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    return (out.stdout + out.stderr).strip()


def _project(work: str, template: str, name: str, batch: int, precision: str, device: str) -> str:
    """A copy of the template's project with the given per-worker batch and precision (scaling none)."""
    import yaml

    folder = os.path.join(work, name)
    if not os.path.isdir(folder):
        shutil.copytree(os.path.join(ROOT, "project_templates", template), folder)
    path = os.path.join(folder, "project.yaml")
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    data["config"].update(batch_size=batch, precision=precision, device=device)
    data.setdefault("multi_gpu", {})["scaling"] = "none"
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(data, fh, sort_keys=False)
    return path


def train(project: str, workers: int, epochs: int, device: str) -> str:
    """Run ``nnconsole train``; returns the run directory."""
    cmd = [sys.executable, "-m", "nnconsole.engine.cli.main", "train", project, "--gpus", str(workers), "--device", device,
           "--epochs", str(epochs), "--quiet"] + (["--oversubscribe"] if device == "cpu" else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, cwd=ROOT,
                         env=dict(os.environ))
    run_dirs = [line.split(": ", 1)[1].strip() for line in out.stdout.splitlines() if line.startswith("run directory: ")]
    if out.returncode != 0 or not run_dirs:
        raise RuntimeError(f"{' '.join(cmd)} exited {out.returncode}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return run_dirs[-1]


def metrics(run_dir: str) -> dict:
    """Median samples/s and time per iteration after the first epoch; validation errors; first losses."""
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    steady = [r for r in records if r.get("type") == "train" and r.get("epoch", 0) > 1.0] or \
        [r for r in records if r.get("type") == "train"]
    errors = [r["error"] for r in records if r.get("type") == "validation"]
    return {"samples_per_s": statistics.median(r["samples_per_s"] for r in steady) if steady else None,
            "allreduce_share": statistics.median(r.get("allreduce_share", 0.0) for r in steady) if steady else None,
            "validation_error": errors, "best_error": min(errors) if errors else None,
            "first_losses": [round(r["loss"], 6) for r in records if r.get("type") == "train"][:5]}


def compare_parameters(run_a: str, run_b: str) -> dict:
    """Largest absolute and relative difference of parameters_final.h5 between two runs."""
    import h5py
    import numpy as np

    def load(run):
        out = {}
        with h5py.File(os.path.join(run, "parameters_final.h5"), "r") as f:
            f.visititems(lambda k, v: out.__setitem__(k, np.array(v)) if isinstance(v, h5py.Dataset) else None)
        return out

    a, b = load(run_a), load(run_b)
    worst_abs = max(float(np.abs(a[k] - b[k]).max()) for k in a)
    worst_rel = max(float(np.abs(a[k] - b[k]).max() / max(np.abs(a[k]).max(), 1e-30)) for k in a)
    return {"parameters": len(a), "max_abs_diff": worst_abs, "max_rel_diff": worst_rel}


def allreduce_sweep_worker() -> None:
    """Under mpiexec: nnabla's NCCL all_reduce (in place, one array) from 256 KB to 256 MB, busbw per size."""
    from mpi4py import MPI

    from nnconsole.engine.comm.cpu import create_communicator
    from nnconsole.engine.comm.nccl import NcclGpuComm, bus_bandwidth_gbs, device_synchronizer, time_nccl_all_reduce
    from nnconsole.engine.backend.device import select_device

    world = MPI.COMM_WORLD
    n = world.Get_size()
    choice = select_device("cuda", "float", create_communicator(require_mpi=n > 1).local_rank)
    comm = NcclGpuComm(world, choice.context, {})
    sync = device_synchronizer(choice.context)
    rows = []
    for k in range(18, 29):
        nbytes = 1 << k
        t = time_nccl_all_reduce(comm, nbytes, sync, warmup=5, reps=20)
        rows.append({"bytes": nbytes, "time_us": t * 1e6, "algbw_gbs": nbytes / t / 1e9,
                     "busbw_gbs": bus_bandwidth_gbs(nbytes, t, n)})
    if world.Get_rank() == 0:
        print(json.dumps({"nnabla_allreduce": rows}), flush=True)


def nccl_tests_busbw(perf: str, gpus: int) -> dict:
    """nccl-tests' all_reduce_perf (one GPU per process), its in-place busbw column per size."""
    from nnconsole.engine.launch.launcher import mpi_environment

    out = _run([shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or "mpiexec", "-n", str(gpus), perf,
                "-b", "256K", "-e", "256M", "-f", "2", "-g", "1"], env=mpi_environment())
    rows = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 12 and cols[0].isdigit():
            rows[int(cols[0])] = float(cols[11])  # in-place busbw (GB/s)
    return {"busbw_gbs": rows, "raw_tail": out[-3000:]}


def report_markdown(r: dict) -> str:
    pre = r["preconditions"]
    mode = "CPU rehearsal: plumbing only, no GPU figures" if r.get("cpu_rehearsal") else f"{r['gpus']} GPUs"
    lines = ["# GPU test report", "", f"Generated {r['generated']} by scripts/gpu_test_plan.py ({mode}).", "",
             "## Preconditions", ""]
    lines += [f"- {k}: {v}" for k, v in pre.items() if k not in ("ready", "not_ready_because")]
    if not pre["ready"]:
        lines += ["", "**NOT RUN: " + "; ".join(pre["not_ready_because"]) + ".** No GPU figures in this report."]
        if not r.get("cpu_rehearsal"):
            return "\n".join(lines) + "\n"
    for title, key in (("Doctor", "doctor"), ("1 vs N GPU parameter equivalence", "equivalence"),
                       ("Samples/s and scaling efficiency", "scaling"), ("All-reduce bus bandwidth", "bandwidth"),
                       ("Half vs float", "half_vs_float")):
        value = r.get(key)
        shown = "not run (needs GPUs)" if value is None else value if isinstance(value, str) else \
            json.dumps(value, indent=1)
        lines += ["", f"## {title}", "", "```", shown, "```"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--out", default="gpu-report")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32, help="per-GPU batch B")
    parser.add_argument("--template", default="digits_cnn")
    parser.add_argument("--nccl-tests", default="", help="folder with nccl-tests' all_reduce_perf")
    parser.add_argument("--cpu-rehearsal", action="store_true", help="run the training steps on the CPU")
    parser.add_argument("--allreduce-sweep", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.allreduce_sweep:
        allreduce_sweep_worker()
        return 0
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    report = {"generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "gpus": args.gpus,
              "cpu_rehearsal": args.cpu_rehearsal, "preconditions": preconditions(args.gpus, args.nccl_tests)}
    ready = report["preconditions"]["ready"]
    if not ready:
        print("NO GPU RUN: " + "; ".join(report["preconditions"]["not_ready_because"]), file=sys.stderr)
    if ready or args.cpu_rehearsal:
        _measure(report, args, out, device="cuda" if ready and not args.cpu_rehearsal else "cpu")
    with open(os.path.join(out, "gpu_report.json"), "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)
    with open(os.path.join(out, "gpu_report.md"), "w", encoding="utf-8") as fh:
        fh.write(report_markdown(report))
    print(f"report: {os.path.join(out, 'gpu_report.md')}")
    return 0 if ready else NO_GPU_EXIT


def _measure(report: dict, args, out: str, device: str) -> None:
    n, b, work = args.gpus, args.batch, os.path.join(out, "work")
    if device == "cuda":
        report["doctor"] = _run([sys.executable, "-m", "nnconsole.engine.cli.main", "doctor", "--gpus", str(n)])
    one_big = train(_project(work, args.template, "one_gpu_batch_NB", n * b, "float", device), 1, args.epochs, device)
    n_small = train(_project(work, args.template, "n_gpus_batch_B", b, "float", device), n, args.epochs, device)
    one_small = train(_project(work, args.template, "one_gpu_batch_B", b, "float", device), 1, args.epochs, device)
    report["equivalence"] = dict(compare_parameters(one_big, n_small), runs=[one_big, n_small])
    single, multi = metrics(one_small), metrics(n_small)
    report["scaling"] = {
        "samples_per_s_1": single["samples_per_s"], f"samples_per_s_{n}": multi["samples_per_s"],
        "samples_per_s_per_gpu": (multi["samples_per_s"] or 0) / n,
        "scaling_efficiency": (multi["samples_per_s"] or 0) / (n * single["samples_per_s"])
        if single["samples_per_s"] else None, "allreduce_share": multi["allreduce_share"]}
    if device == "cuda":
        from nnconsole.engine.launch.launcher import mpi_environment

        sweep = _run([shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or "mpiexec", "-n", str(n),
                      sys.executable, os.path.abspath(__file__), "--allreduce-sweep"], env=mpi_environment())
        rows = [json.loads(line) for line in sweep.splitlines() if line.startswith("{")]
        perf = report["preconditions"]["nccl_tests"]
        report["bandwidth"] = {"nnabla": rows[-1]["nnabla_allreduce"] if rows else sweep[-3000:],
                               "nccl_tests": nccl_tests_busbw(perf, n) if os.path.isfile(perf) else perf}
    half = train(_project(work, args.template, "one_gpu_half", b, "half" if device == "cuda" else "float", device),
                 1, args.epochs, device)
    report["half_vs_float"] = {"float": single, "half": metrics(half)}


if __name__ == "__main__":
    sys.exit(main())
