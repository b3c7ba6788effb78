"""The GPU test plan's judgement and records (used by scripts/gpu_test_plan.py; no GPU needed to import).

- ``thresholds``: the pass thresholds, read from the table under "## Pass thresholds" in docs/gpu-test-plan.md
  (the document is the one place they are written), and ``judge`` that turns measures into pass/fail.
- ``preconditions_found``: glibc, driver, /dev/shm, container, nccl-tests' build inputs.
- ``WorkerWatch``: which libnccl/libcudnn/libcudart/libmpi each worker process mapped (/proc/PID/maps), its
  rank and, on GPU, its largest GPU memory (nvidia-smi), sampled while a run trains.
- ``nccl_debug``: NCCL's version and transports from NCCL_DEBUG=INFO lines; ``topology``: nvidia-smi topo -m.
"""
from __future__ import annotations

import operator
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAN_DOC = os.path.join(ROOT, "docs", "gpu-test-plan.md")
THRESHOLDS_HEADING = "## Pass thresholds"
OPS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "<": operator.lt, ">": operator.gt}
MAPPED = re.compile(r"lib(nccl|cudnn[a-z_]*|cudart|mpi|nnabla_cuda[^/]*)\.so[.0-9]*$")
MIN_GLIBC = (2, 28)  # nnabla 1.39's and nnabla-ext-cuda120 1.39's wheels are manylinux_2_28
MIN_DRIVER_MAJOR = 550  # NCCL 2.20.5 of the extra is a CUDA 12.4 build
MIN_SHM_BYTES = 1 << 30  # NCCL's shared-memory transport; docker's default 64 MB is too small


def thresholds(doc: str = PLAN_DOC) -> List[Dict[str, Any]]:
    """Rows ``| id | measure | op | limit | on |`` of the doc's pass-threshold table (on: gpu, cpu or both)."""
    with open(doc, encoding="utf-8") as fh:
        text = fh.read()
    start = text.index(THRESHOLDS_HEADING)
    section = text[start:].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("id", "") or set(cells[0]) <= set("-: "):
            continue
        ident, measure, op, limit, on = cells
        if op not in OPS or on not in ("gpu", "cpu", "both"):
            raise ValueError(f"{doc}: threshold row {line.strip()!r}: op must be one of {list(OPS)}, on gpu|cpu|both")
        rows.append({"id": ident, "measure": measure, "op": op, "limit": float(limit), "on": on})
    if not rows:
        raise ValueError(f"{doc}: no rows under '{THRESHOLDS_HEADING}'")
    return rows


def judge(measures: Dict[str, Any], device: str, rows: Optional[List[Dict[str, Any]]] = None) -> List[Dict[str, Any]]:
    """Each threshold that applies on ``device`` ('cuda' or 'cpu') judged: pass, fail, or not run (no value)."""
    verdicts = []
    for row in rows if rows is not None else thresholds():
        if row["on"] not in ("both", "gpu" if device == "cuda" else "cpu"):
            continue
        value = measures.get(row["measure"])
        if value is None and row["measure"].startswith("busbw_") and any(
                k.startswith("busbw_") for k in measures):
            continue  # the bandwidth row of another interconnect than this machine's
        if value is None or isinstance(value, str):
            verdict = "not run"
        else:
            verdict = "pass" if OPS[row["op"]](float(value), row["limit"]) else "fail"
        verdicts.append(dict(row, value=value, verdict=verdict))
    return verdicts


def exit_code(verdicts: List[Dict[str, Any]]) -> int:
    """0: every applicable threshold passed; 1: one failed or could not be measured."""
    return 0 if verdicts and all(v["verdict"] == "pass" for v in verdicts) else 1


# ---- preconditions ------------------------------------------------------------------------------------
def glibc_version() -> Optional[tuple]:
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
        return tuple(int(p) for p in version.split(".")[:2])
    except (ValueError, OSError, AttributeError):
        return None


def driver_version() -> Optional[str]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    out = run_text([smi, "--query-gpu=driver_version", "--format=csv,noheader"], timeout=30)
    return out.splitlines()[0].strip() if out and out[0].isdigit() else None


def in_container() -> bool:
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return True
    try:
        with open("/proc/1/cgroup") as fh:
            return any(k in fh.read() for k in ("docker", "kubepods", "containerd", "lxc"))
    except OSError:
        return False


def preconditions_found() -> Dict[str, Any]:
    """What the GPU steps rely on besides GPUs, with the measure each threshold reads."""
    glibc = glibc_version()
    driver = driver_version()
    try:
        st = os.statvfs("/dev/shm")
        shm = st.f_frsize * st.f_blocks
    except OSError:
        shm = 0
    venv = sys.prefix
    nccl_home = os.path.join(venv, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages",
                             "nvidia", "nccl")
    return {
        "glibc": ".".join(map(str, glibc)) if glibc else "unknown (not glibc)",
        "glibc_ok": int(bool(glibc and glibc >= MIN_GLIBC)),
        "driver": driver or "no nvidia-smi",
        "driver_major": int(driver.split(".")[0]) if driver else None,
        "dev_shm_bytes": shm,
        "container": in_container(),
        "shm_note": "a container needs --ipc=host or --shm-size=1g (NCCL's shared-memory transport)",
        "nccl_tests_inputs": {"mpi.h": os.path.isfile(os.path.join(venv, "include", "mpi.h")),
                              "nccl.h": os.path.isfile(os.path.join(nccl_home, "include", "nccl.h")),
                              "nvcc": shutil.which("nvcc") or "not found (the CUDA toolkit builds nccl-tests)"},
    }


def nccl_tests_build(venv: str = sys.prefix) -> List[str]:
    """The commands that build nccl-tests against the venv's NCCL (the cuda extra's wheel) and Open MPI."""
    nccl = f"{venv}/lib/python3.10/site-packages/nvidia/nccl"
    return [
        f"ln -sf libnccl.so.2 {nccl}/lib/libnccl.so      # the wheel ships only the versioned name",
        "git clone https://github.com/NVIDIA/nccl-tests && cd nccl-tests",
        f"make -j MPI=1 MPI_HOME={venv} NCCL_HOME={nccl} CUDA_HOME=${{CUDA_HOME:-/usr/local/cuda}}",
        f"LD_LIBRARY_PATH={nccl}/lib:{venv}/lib {venv}/bin/mpiexec -n 2 --bind-to none "
        "./build/all_reduce_perf -b 256K -e 256M -f 2 -g 1",
    ]


def run_text(cmd: List[str], timeout: float = 600, env: Optional[dict] = None) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{cmd[0]}: {exc}"
    return (out.stdout + out.stderr).strip()


def topology() -> str:
    smi = shutil.which("nvidia-smi")
    return run_text([smi, "topo", "-m"], timeout=30) if smi else "nvidia-smi not found"


def interconnect(topo: str) -> Optional[str]:
    """GPU0 to GPU1 in ``nvidia-smi topo -m``: 'nvlink' (NV#), 'pcie-switch' (PIX/PXB), 'pcie-host' (PHB/NODE/SYS)."""
    for line in topo.splitlines():
        cells = line.split()
        if cells[:1] == ["GPU0"] and len(cells) > 2:
            link = cells[2]
            if link.startswith("NV"):
                return "nvlink"
            if link in ("PIX", "PXB"):
                return "pcie-switch"
            if link in ("PHB", "NODE", "SYS"):
                return "pcie-host"
    return None


def nccl_debug(text: str) -> Dict[str, Any]:
    """NCCL's version and the transports its channels use, from NCCL_DEBUG=INFO output."""
    version = re.findall(r"NCCL version ([0-9.]+)", text)
    transports = sorted(set(re.findall(r"via (P2P/[A-Za-z/]+|SHM(?:/[A-Za-z/]+)?|NET/[A-Za-z_]+(?:/\d+)?)", text)))
    return {"version": version[0] if version else None, "transports": transports}


# ---- what each worker mapped --------------------------------------------------------------------------
def _read(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def _exe(pid: str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def gpu_memory_by_pid() -> Dict[int, int]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return {}
    out = run_text([smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"], timeout=10)
    found = {}
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            found[int(parts[0])] = int(parts[1])
    return found


class WorkerWatch:
    """Samples the worker processes of runs under ``folder`` every ``interval`` seconds while it runs."""

    def __init__(self, folder: str, interval: float = 0.5) -> None:
        self.folder, self.interval = os.path.abspath(folder), interval
        self.workers: Dict[int, Dict[str, Any]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> "WorkerWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def pids(self) -> List[int]:
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and os.path.basename(_exe(entry)).startswith("python"):  # not mpiexec
                cmd = _read(f"/proc/{entry}/cmdline").split("\0")
                if "nnconsole.engine.train.worker" in " ".join(cmd) and any(a.startswith(self.folder) for a in cmd):
                    found.append(int(entry))
        return found

    def sample(self) -> None:
        memory = gpu_memory_by_pid()
        for pid in self.pids():
            record = self.workers.setdefault(pid, {"rank": None, "mapped": [], "gpu_memory_mib": 0})
            env = dict(v.split("=", 1) for v in _read(f"/proc/{pid}/environ").split("\0") if "=" in v)
            rank = env.get("OMPI_COMM_WORLD_RANK", env.get("PMIX_RANK"))
            record["rank"] = int(rank) if rank and rank.isdigit() else record["rank"] or 0
            maps = {line.split()[-1] for line in _read(f"/proc/{pid}/maps").splitlines()
                    if MAPPED.search(line.split()[-1] if line.split() else "")}
            record["mapped"] = sorted(set(record["mapped"]) | maps)
            record["gpu_memory_mib"] = max(record["gpu_memory_mib"], memory.get(pid, 0))

    def by_rank(self) -> List[Dict[str, Any]]:
        return sorted(({"pid": pid, **r} for pid, r in self.workers.items()), key=lambda r: (r["rank"] or 0, r["pid"]))


def tf32_state() -> Dict[str, Any]:
    """What decides TF32 in nnabla-ext-cuda 1.39 (its strings: NNABLA_CUDA_ALLOW_TF32, NVIDIA_TF32_OVERRIDE)."""
    state = {name: os.environ.get(name) for name in ("NNABLA_CUDA_ALLOW_TF32", "NVIDIA_TF32_OVERRIDE")}
    smi = shutil.which("nvidia-smi")
    state["compute_capability"] = run_text([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], timeout=30) \
        if smi else None
    return state


def wait_for(predicate: Any, timeout: float, step: float = 0.2) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return False
