#!/usr/bin/env python3
"""The GPU day's plan (docs/gpu-test-plan.md): runs every step, judges it against the doc's thresholds.

    .venv/bin/python scripts/gpu_test_plan.py [--gpus 2] [--out gpu-report] [--epochs 3] [--batch 32]
                                              [--template digits_cnn] [--nccl-tests DIR] [--rehearse]

Steps: preconditions (glibc >= 2.28, driver >= 550, /dev/shm or --ipc=host, nccl-tests' inputs); doctor;
the user's path (``nnconsole train project.yaml --gpus N`` with ``device: auto``) and ``--device cuda``
(with NCCL_DEBUG=INFO: NCCL's version and transports); 1 vs N GPU parameter agreement; samples/s and
scaling; half precision on 1 and N GPUs; synchronized BatchNormalization; several optimizers (gan_2d);
a shared-weight model above one all-reduce pack (sine_rnn with 512 hidden units, 1 vs N agreement);
LSTMSequence; stop on N GPUs and resume on 1; a killed rank; nnabla's all-reduce bus bandwidth against
nccl-tests'. Every run records which libnccl/libcudnn/libcudart/libmpi each worker mapped (/proc/PID/maps)
and its GPU memory; the report has ``nvidia-smi topo -m`` and the TF32 settings.

Each threshold of the doc's "Pass thresholds" table is judged (scripts/gpu_plan_checks.py); the exit code is
0 when all that apply passed, 1 when one failed or could not be measured, 2 when no GPU is usable (nothing
run). ``--rehearse`` runs every step a CPU can (device cpu in place of cuda, the CPU rows of the table):
the CI's check of this script.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional



def _sibling(name: str) -> Any:
    """scripts/<name>.py loaded by path (scripts are not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                     f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


checks = _sibling("gpu_plan_checks")
ROOT = checks.ROOT
NO_GPU_EXIT = 2
PINNED_NCCL = "2.20.5"


def gpus_usable(gpus: int) -> Dict[str, Any]:
    """Whether the GPU steps can run: nnabla-ext-cuda loads and sees at least ``gpus`` GPUs."""
    from nnconsole.engine.backend.device import cuda_diagnosis, gpu_count

    diagnosis = cuda_diagnosis()
    visible = gpu_count() if diagnosis is None else 0
    reasons = [] if visible >= gpus else [f"NO GPU: {visible} usable GPU(s) here, {gpus} needed "
                                          f"({diagnosis or 'too few GPUs'})"]
    return {"cuda_diagnosis": diagnosis or "usable", "gpus_visible": visible, "python": sys.version.split()[0],
            "ready": not reasons, "not_ready_because": reasons}


# ---- projects and runs ----------------------------------------------------------------------------------
class Runner:
    """Writes project variants into copies of the templates and runs ``nnconsole train`` on them."""

    def __init__(self, work: str, device: str, epochs: int) -> None:
        self.work, self.device, self.epochs = work, device, epochs
        self.workers: Dict[str, List[Dict[str, Any]]] = {}  # run name -> what each worker mapped

    def project(self, template: str, name: str, batch: int, precision: str = "float", device: str = "auto",
                change: Any = None) -> str:
        import yaml

        folder = os.path.join(self.work, template)
        if not os.path.isdir(folder):
            shutil.copytree(os.path.join(ROOT, "project_templates", template), folder)
        with open(os.path.join(folder, "project.yaml"), encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
        data["config"].update(batch_size=batch, precision=precision, device=device, log_interval=1)
        data.setdefault("multi_gpu", {})["scaling"] = "none"
        if change:
            change(data)
        path = os.path.join(folder, f"{name}.yaml")
        with open(path, "w", encoding="utf-8") as fh:
            yaml.safe_dump(data, fh, sort_keys=False)
        return path

    def command(self, project: str, workers: int, device: Optional[str], epochs: Optional[int] = None,
                resume: str = "") -> List[str]:
        cmd = [sys.executable, "-m", "nnconsole.engine.cli.main", "train"] + (
            ["--resume", resume] if resume else [project]) + ["--gpus", str(workers), "--quiet"]
        cmd += ["--device", device] if device else []
        cmd += ["--epochs", str(epochs or self.epochs)] if not resume else []
        return cmd + (["--oversubscribe"] if self.device == "cpu" else [])

    def train(self, name: str, project: str, workers: int, device: Optional[str], env: Optional[dict] = None,
              epochs: Optional[int] = None, resume: str = "") -> Dict[str, Any]:
        """Run to the end; returns the run directory, exit code, seconds and a summary of its metrics."""
        started = time.monotonic()
        with checks.WorkerWatch(os.path.dirname(project)) as watch:
            out = subprocess.run(self.command(project, workers, device, epochs, resume), capture_output=True,
                                 text=True, timeout=3600, cwd=ROOT, env=dict(os.environ, **(env or {})))
        self.workers[name] = watch.by_rank()
        run_dir = resume or newest_run(project)
        result = {"run_dir": run_dir, "exit_code": out.returncode, "seconds": time.monotonic() - started,
                  "output_tail": (out.stdout + out.stderr)[-1500:]}
        result.update(metrics(run_dir) if run_dir else {})
        return result

    def interrupted(self, name: str, project: str, workers: int, action: str) -> Dict[str, Any]:
        """Start a run, and at its first train record ``stop`` it (STOP file) or ``kill`` its rank 1."""
        from nnconsole.engine.rundir import store as runs

        from nnconsole.engine.test_seams import seam_environment

        before = set(all_runs(project))
        # A stop must land mid-run however fast the device is: every rank waits at iteration 2 until the STOP
        # file comes (engine.test_seams), then goes on exactly as before. Without it a short run on a fast
        # machine finished before the stop (the rehearsal saw 'finished' instead of 'stopped').
        env = dict(os.environ, **seam_environment(pause_at_iteration=2)) if action == "stop" else None
        child = subprocess.Popen(self.command(project, workers, self.device), cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, env=env)
        run_dir = ""
        with checks.WorkerWatch(os.path.dirname(project)) as watch:
            def first_record() -> bool:
                nonlocal run_dir
                new = sorted(set(all_runs(project)) - before)
                run_dir = new[-1] if new else ""
                return bool(run_dir) and any(True for _ in runs.iter_metrics(run_dir, "train"))

            reached = checks.wait_for(first_record, 600)
            acted = time.monotonic()
            if reached and action == "stop":
                open(os.path.join(run_dir, "STOP"), "w").close()
            elif reached and action == "kill":
                victims = [w["pid"] for w in watch.by_rank() if w["rank"] == 1]
                for pid in victims:
                    os.kill(pid, signal.SIGKILL)
            output = child.communicate(timeout=600)[0]
        self.workers[name] = watch.by_rank()
        status = runs.read_status(run_dir) if run_dir else None
        return {"run_dir": run_dir, "reached_training": reached, "exit_code": child.returncode,
                "seconds_after_action": time.monotonic() - acted, "failed_rank": getattr(status, "failed_rank", None),
                "status": getattr(status, "status", None), "output_tail": output[-1500:]}


def all_runs(project: str) -> List[str]:
    root = os.path.join(os.path.dirname(project), "results", os.path.splitext(os.path.basename(project))[0])
    return sorted(os.path.join(root, d) for d in os.listdir(root)) if os.path.isdir(root) else []


def newest_run(project: str) -> str:
    found = all_runs(project)
    return max(found, key=os.path.getmtime) if found else ""


def metrics(run_dir: str) -> Dict[str, Any]:
    """Samples/s and all-reduce share after the first epoch, validation errors, losses, the sync check."""
    from nnconsole.engine.rundir import store as runs

    train = list(runs.iter_metrics(run_dir, "train"))
    steady = [r for r in train if r.get("epoch", 0) > 1.0] or train
    errors = [r["error"] for r in runs.iter_metrics(run_dir, "validation")]
    syncs = list(runs.iter_metrics(run_dir, "sync_check"))
    status = runs.read_status(run_dir)
    return {"status": getattr(status, "status", None),
            "samples_per_s": statistics.median(r["samples_per_s"] for r in steady) if steady else None,
            "allreduce_share": statistics.median(r.get("allreduce_share", 0.0) for r in steady) if steady else None,
            "best_error": min(errors) if errors else None, "losses": [round(r["loss"], 6) for r in train][:5],
            "finite": all(r["loss"] == r["loss"] and abs(r["loss"]) != float("inf") for r in train),
            "ranks_identical": all(s.get("identical") for s in syncs) if syncs else None,
            "warnings": [w["message"] for w in runs.iter_metrics(run_dir, "warning")][:5]}


def finished(result: Dict[str, Any]) -> int:
    """1 when the run ended normally with finite losses and, with several workers, identical ranks."""
    return int(result.get("exit_code") == 0 and result.get("status") == "finished" and result.get("finite", False)
               and result.get("ranks_identical") is not False)


def compare_parameters(run_a: str, run_b: str) -> Dict[str, Any]:
    import h5py
    import numpy as np

    def load(run: str) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        with h5py.File(os.path.join(run, "parameters_final.h5"), "r") as f:
            f.visititems(lambda k, v: out.__setitem__(k, np.array(v)) if isinstance(v, h5py.Dataset) else None)
        return out

    a, b = load(run_a), load(run_b)
    return {"parameters": len(a), "max_abs_diff": max(float(np.abs(a[k] - b[k]).max()) for k in a),
            "max_rel_diff": max(float(np.abs(a[k] - b[k]).max() / max(np.abs(a[k]).max(), 1e-30)) for k in a)}


# ---- project variants -----------------------------------------------------------------------------------
def sine_hidden(size: int) -> Any:
    """sine_rnn with ``size`` hidden units, trained by plain SGD: Adam's first steps divide tiny gradients by
    their own size, which turns float rounding into sign flips; SGD keeps 1 vs N agreement a test of sums."""
    def change(data: dict) -> None:
        data["optimizer"].update(solver="Sgd", solver_params={}, learning_rate=0.05)
        for layer in data["network"]["layers"]:
            if layer["name"] == "fc":
                layer["params"]["out_shape"] = size
            if layer["type"] == "Delay":
                layer["params"]["size"] = [size]
    return change


def lstm_sequence(data: dict) -> None:
    data["network"]["layers"] = [
        {"name": "x", "type": "Input", "inputs": [], "params": {"shape": [16, 1], "variable": "x"}},
        {"name": "rnn", "type": "LSTMSequence", "inputs": ["x"], "params": {"hidden_size": 32, "output": "last_state"}},
        {"name": "out", "type": "Affine", "inputs": ["rnn"], "params": {"out_shape": 1}},
        {"name": "y", "type": "Input", "inputs": [], "params": {"shape": [1], "variable": "y"}},
        {"name": "loss", "type": "SquaredError", "inputs": ["out", "y"]}]


def synced_batchnorm(data: dict) -> None:
    """Every BatchNormalization layer synchronized; a template without one gets one after its first Affine."""
    layers = data["network"]["layers"]
    if not any(layer["type"] == "BatchNormalization" for layer in layers):
        first = next(i for i, layer in enumerate(layers) if layer["type"] == "Affine")
        name = layers[first]["name"]
        for layer in layers:
            layer["inputs"] = ["bn_sync" if i == name else i for i in layer.get("inputs", [])]
        layers.insert(first + 1, {"name": "bn_sync", "type": "BatchNormalization", "inputs": [name], "params": {}})
    for layer in layers:
        if layer["type"] == "BatchNormalization":
            layer.setdefault("params", {})["sync_across_workers"] = True


# ---- the plan --------------------------------------------------------------------------------------------
def run_plan(args: Any, out: str, device: str) -> Dict[str, Any]:
    """Every step for ``device`` ('cuda', or 'cpu' in the rehearsal); returns the report with its measures."""
    n, b, gpu = args.gpus, args.batch, device == "cuda"
    runner = Runner(os.path.join(out, "work"), device, args.epochs)
    report: Dict[str, Any] = {"steps": {}, "measures": {}}
    steps, m = report["steps"], report["measures"]
    pre = report["system"] = checks.preconditions_found()
    m.update(glibc_ok=pre["glibc_ok"], driver_major=pre["driver_major"], dev_shm_gib=pre["dev_shm_bytes"] / 2 ** 30)
    report["nccl_tests_build"] = checks.nccl_tests_build()
    report["topology"] = checks.topology()
    report["tf32"] = checks.tf32_state()
    if gpu:
        steps["doctor"] = checks.run_text([sys.executable, "-m", "nnconsole.engine.cli.main", "doctor", "--gpus",
                                           str(n)])
    t = args.template
    # The user's path: device auto from the project, --gpus N, nothing else; then --device cuda explicitly.
    user = runner.train("user_path", runner.project(t, "user_path", b), n, None)
    debug = {"NCCL_DEBUG": "INFO"} if gpu else {}
    explicit = runner.train("device_cuda", runner.project(t, "device_cuda", b), n, device, env=debug)
    steps.update(user_path=user, device_cuda=explicit)
    m["user_path_finished"], m["device_cuda_finished"] = finished(user), finished(explicit)
    m["user_path_on_gpu"] = int(any("CUDA GPU" in line for line in _rank_log(user["run_dir"])))
    if gpu:
        nccl = checks.nccl_debug(_launcher_log(explicit["run_dir"]))
        steps["nccl_debug"] = nccl
        m["nccl_version_is_pinned"] = int(nccl["version"] == PINNED_NCCL)
    one_big = runner.train("one_batch_NB", runner.project(t, "one_batch_NB", n * b), 1, device)
    one_small = runner.train("one_batch_B", runner.project(t, "one_batch_B", b), 1, device)
    steps["equivalence"] = compare_parameters(one_big["run_dir"], explicit["run_dir"])
    m["equivalence_max_rel_diff"] = steps["equivalence"]["max_rel_diff"]
    single, multi = one_small.get("samples_per_s"), explicit.get("samples_per_s")
    steps["scaling"] = {"samples_per_s_1": single, f"samples_per_s_{n}": multi,
                        "samples_per_s_per_gpu": multi / n if multi else None,
                        "allreduce_share": explicit.get("allreduce_share")}
    if gpu and single and multi:
        m["scaling_efficiency"] = multi / (n * single)
        cpu = runner.train("cpu_reference", runner.project(t, "cpu_reference", b, device="cpu"), 1, "cpu")
        steps["scaling"]["cpu_samples_per_s"] = cpu.get("samples_per_s")
        m["gpu_over_cpu_worker"] = (multi / n) / cpu["samples_per_s"] if cpu.get("samples_per_s") else None
    if gpu:  # nnabla's CPU backend computes in float only
        half_1 = runner.train("half_1", runner.project(t, "half_1", b, "half"), 1, device)
        half_n = runner.train("half_n", runner.project(t, "half_n", b, "half"), n, device)
        steps["half"] = {"one": half_1, "several": half_n}
        m["half_finished"] = finished(half_1) * finished(half_n)
        if half_1.get("best_error") is not None and one_small.get("best_error") is not None:
            m["half_best_error_gap"] = abs(half_1["best_error"] - one_small["best_error"])
    else:
        steps["half"] = "not run: half precision needs a GPU (nnabla's CPU backend computes in float)"
    bn = runner.train("sync_bn", runner.project(args.bn_template, "sync_bn", b, change=synced_batchnorm), n, device)
    gan = runner.train("several_optimizers", runner.project("gan_2d", "several_optimizers", b), n, device)
    lstm = runner.train("lstm_sequence", runner.project("sine_rnn", "lstm_sequence", b, change=lstm_sequence), n,
                        device)
    steps.update(sync_bn=bn, several_optimizers=gan, lstm_sequence=lstm)
    m.update(sync_bn_finished=finished(bn), several_optimizers_finished=finished(gan), lstm_finished=finished(lstm))
    hidden = sine_hidden(args.shared_hidden)
    shared_n = runner.train("shared_n", runner.project("sine_rnn", "shared_n", b, change=hidden), n, device)
    shared_1 = runner.train("shared_1", runner.project("sine_rnn", "shared_1", n * b, change=hidden), 1, device)
    steps["shared_weights"] = dict(compare_parameters(shared_1["run_dir"], shared_n["run_dir"]),
                                   several=shared_n, one=shared_1)
    m["shared_weights_max_rel_diff"] = steps["shared_weights"]["max_rel_diff"] if finished(shared_n) else None
    long_run = runner.project("iris_mlp", "stop_resume", 16)
    stopped = runner.interrupted("stop", long_run, n, "stop")
    resumed = runner.train("resume_on_1", long_run, 1, device, resume=stopped["run_dir"]) if stopped["run_dir"] else {}
    steps["stop_resume"] = {"stopped": stopped, "resumed_on_1": resumed}
    m["resume_across_counts_finished"] = int(stopped.get("status") == "stopped" and finished(resumed) == 1)
    killed = runner.interrupted("kill", runner.project("iris_mlp", "killed_rank", 16), n, "kill")
    steps["killed_rank"] = killed
    m["killed_rank_named"] = int(killed["reached_training"] and killed["exit_code"] != 0 and killed["failed_rank"] == 1)
    m["killed_rank_seconds"] = killed["seconds_after_action"] if killed["reached_training"] else None
    if gpu:
        steps["bandwidth"] = bandwidth(n, args.nccl_tests)
        m.update(steps["bandwidth"].pop("measures"))
    report["workers"] = runner.workers
    m.update(mapped_measures(runner.workers, gpu))
    return report


def _rank_log(run_dir: str) -> List[str]:
    try:
        with open(os.path.join(run_dir, "logs", "rank0.log"), encoding="utf-8") as fh:
            return fh.read().splitlines()
    except OSError:
        return []


def _launcher_log(run_dir: str) -> str:
    try:
        with open(os.path.join(run_dir, "logs", "launcher.log"), encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def mapped_measures(workers: Dict[str, List[Dict[str, Any]]], gpu: bool) -> Dict[str, Any]:
    """Whether each sampled worker mapped one libmpi (and, on GPU, one libnccl, the wheel's, and one cuDNN)."""
    sampled = [w for run in workers.values() for w in run if w["mapped"]]
    if not sampled:
        return {}

    def files(w: Dict[str, Any], stem: str) -> List[str]:
        return [p for p in w["mapped"] if os.path.basename(p).startswith(stem)]

    found = {"one_libmpi_per_worker": int(all(len({os.path.realpath(p) for p in files(w, "libmpi")}) <= 1
                                                for w in sampled))}
    if gpu:
        found["one_nccl_per_worker"] = int(all(len(files(w, "libnccl")) == 1 and "nvidia/nccl" in files(w, "libnccl")[0]
                                               for w in sampled if files(w, "libnnabla_cuda")))
        found["one_cudnn_folder_per_worker"] = int(all(len({os.path.dirname(p) for p in files(w, "libcudnn")}) == 1
                                                       for w in sampled if files(w, "libcudnn")))
    return found


def bandwidth(n: int, nccl_tests: str) -> Dict[str, Any]:
    """nnabla's NCCL all_reduce bus bandwidth per size, nccl-tests' in-place busbw, their ratio from 16 MB."""
    from nnconsole.engine.launch.launcher import find_mpiexec, mpi_environment

    sweep = checks.run_text([find_mpiexec(), "-n", str(n), "--bind-to", "none", sys.executable,
                             os.path.abspath(__file__), "--allreduce-sweep"], env=mpi_environment())
    rows = [json.loads(line) for line in sweep.splitlines() if line.startswith("{")]
    nnabla = {r["bytes"]: r["busbw_gbs"] for r in rows[-1]["nnabla_allreduce"]} if rows else {}
    perf = os.path.join(nccl_tests, "all_reduce_perf") if nccl_tests else shutil.which("all_reduce_perf") or ""
    reference = nccl_tests_busbw(perf, n) if perf and os.path.isfile(perf) else {}
    measures: Dict[str, Any] = {}
    link = checks.interconnect(checks.topology())
    if nnabla and link:
        measures[f"busbw_{link.replace('-', '_')}_gbs"] = nnabla.get(256 << 20)
    ratios = [nnabla[s] / reference[s] for s in nnabla if s >= 16 << 20 and reference.get(s)]
    measures["nnabla_over_nccl_tests"] = min(ratios) if ratios else None
    return {"nnabla_busbw_gbs": nnabla, "nccl_tests_busbw_gbs": reference or "all_reduce_perf not found",
            "interconnect": link, "raw_tail": sweep[-1500:] if not rows else "", "measures": measures}


def nccl_tests_busbw(perf: str, n: int) -> Dict[int, float]:
    from nnconsole.engine.launch.launcher import find_mpiexec, mpi_environment

    venv_nccl = os.path.join(sys.prefix, "lib", "python3.10", "site-packages", "nvidia", "nccl", "lib")
    env = dict(mpi_environment(), LD_LIBRARY_PATH=os.pathsep.join([venv_nccl, os.path.join(sys.prefix, "lib")]))
    out = checks.run_text([find_mpiexec(), "-n", str(n), "--bind-to", "none", "-x", "LD_LIBRARY_PATH", perf,
                           "-b", "256K", "-e", "256M", "-f", "2", "-g", "1"], env=env)
    rows = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 12 and cols[0].isdigit():
            rows[int(cols[0])] = float(cols[11])  # in-place busbw (GB/s)
    return rows


def allreduce_sweep_worker() -> None:
    """Under mpiexec: nnabla's NCCL all_reduce (in place, one array) from 256 KB to 256 MB, busbw per size."""
    from mpi4py import MPI

    from nnconsole.engine.backend.device import select_device
    from nnconsole.engine.comm.cpu import create_communicator
    from nnconsole.engine.comm.nccl import NcclGpuComm, bus_bandwidth_gbs, device_synchronizer, time_nccl_all_reduce

    world = MPI.COMM_WORLD
    n = world.Get_size()
    choice = select_device("cuda", "float", create_communicator(require_mpi=n > 1).local_rank)
    comm = NcclGpuComm(world, choice.context, {})
    sync = device_synchronizer(choice.context)
    rows = []
    for k in range(18, 29):
        t = time_nccl_all_reduce(comm, 1 << k, sync, warmup=5, reps=20)
        rows.append({"bytes": 1 << k, "time_us": t * 1e6, "busbw_gbs": bus_bandwidth_gbs(1 << k, t, n)})
    if world.Get_rank() == 0:
        print(json.dumps({"nnabla_allreduce": rows}), flush=True)


def report_markdown(r: Dict[str, Any]) -> str:
    mode = "REHEARSAL on the CPU: plumbing and CPU thresholds only" if r.get("rehearsal") else f"{r['gpus']} GPUs"
    lines = ["# GPU test report", "", f"Generated {r['generated']} by scripts/gpu_test_plan.py ({mode}).", "",
             f"**Verdict: {r.get('verdict', 'NOT RUN')}** (exit code {r.get('exit_code')})", "", "## Preconditions", ""]
    lines += [f"- {k}: {v}" for k, v in r["preconditions"].items() if k not in ("ready", "not_ready_because")]
    if not r["preconditions"].get("ready") and not r.get("rehearsal"):
        return "\n".join(lines + ["", "**NOT RUN: " + "; ".join(r["preconditions"]["not_ready_because"]) +
                                  ".** No GPU figures in this report."]) + "\n"
    lines += ["", "## Thresholds (docs/gpu-test-plan.md)", "", "| id | measure | value | limit | verdict |",
              "|---|---|---|---|---|"]
    lines += [f"| {v['id']} | {v['measure']} | {v['value']} | {v['op']} {v['limit']:g} | {v['verdict']} |"
              for v in r.get("verdicts", [])]
    lines += ["", "## nccl-tests against the venv's NCCL and MPI", "", "```", *r.get("nccl_tests_build", []), "```"]
    for key in ("system", "topology", "tf32", "workers", "steps"):
        lines += ["", f"## {key}", "", "```", r[key] if isinstance(r.get(key), str) else
                  json.dumps(r.get(key), indent=1, default=str), "```"]
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--out", default="gpu-report")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32, help="per-GPU batch B")
    parser.add_argument("--template", default="digits_cnn")
    parser.add_argument("--nccl-tests", default="", help="folder with nccl-tests' all_reduce_perf")
    parser.add_argument("--shared-hidden", type=int, default=512, help="sine_rnn's hidden units for the shared-weight "
                        "step (512: its recurrent weight is used 16 times, above one 2,097,152-element pack)")
    parser.add_argument("--bn-template", default="shapes_resnet", help="template whose BatchNormalization layers "
                        "are synchronized")
    parser.add_argument("--rehearse", "--cpu-rehearsal", dest="rehearse", action="store_true",
                        help="run every step a CPU can, judged by the CPU thresholds")
    parser.add_argument("--allreduce-sweep", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.allreduce_sweep:
        allreduce_sweep_worker()
        return 0
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    usable = gpus_usable(args.gpus)
    report: Dict[str, Any] = {"generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "gpus": args.gpus,
                              "rehearsal": args.rehearse, "preconditions": usable}
    if not usable["ready"]:
        print("NO GPU RUN: " + "; ".join(usable["not_ready_because"]), file=sys.stderr)
    code = NO_GPU_EXIT
    if usable["ready"] or args.rehearse:
        device = "cuda" if usable["ready"] and not args.rehearse else "cpu"
        report.update(run_plan(args, out, device))
        report["verdicts"] = checks.judge(report["measures"], device)
        code = checks.exit_code(report["verdicts"])
        report["verdict"] = "PASS" if code == 0 else "FAIL"
        for v in report["verdicts"]:
            print(f"[{v['verdict'].upper():8}] {v['id']}: {v['measure']} = {v['value']} ({v['op']} {v['limit']:g})")
    report["exit_code"] = code
    with open(os.path.join(out, "gpu_report.json"), "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1, default=str)
    with open(os.path.join(out, "gpu_report.md"), "w", encoding="utf-8") as fh:
        fh.write(report_markdown(report))
    print(f"report: {os.path.join(out, 'gpu_report.md')}")
    return code


if __name__ == "__main__":
    sys.exit(main())
