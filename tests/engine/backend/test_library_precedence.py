"""The pinned NCCL and cuDNN win over a system's (issue 27 items 2 and 3), shown with the real dynamic loader.

Tiny ELF stand-ins built with the system C compiler play the wheels' libraries and a cluster's: a
"system" ``libnccl.so`` (older NCCL) and a ``module load cudnn`` folder with its own cuDNN sub-library,
both on LD_LIBRARY_PATH. A fresh Python process (the loader's state is per process) runs the engine's
preload and hand-over, then nnabla-ext-cuda 1.39's own search order (``nnabla_nccl_candidates``, read
from libnnabla_cuda-120_8.so's dl_nccl_init) or cuDNN's bare-name dlopen, and reports which library
answered and which files the process mapped (/proc/self/maps).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from nnconsole.engine.backend import gpu_libs
from tests.support.paths import ROOT

pytestmark = pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc to build ELF stand-ins")

WHEEL_NCCL, SYSTEM_NCCL = 22005, 20708  # ncclGetVersion codes: 2.20.5 (the extra's pin), 2.7.8 (< 2.10.3)
WHEEL_CUDNN, MODULE_CUDNN = 8902, 8600


def _build(path, soname, code, runpath=""):
    src = str(path) + ".c"
    with open(src, "w") as fh:
        fh.write(code + "\n")
    flags = [f"-Wl,-soname,{soname}"] + ([f"-Wl,-rpath,{runpath}", "-Wl,--enable-new-dtags"] if runpath else [])
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(path), src, "-ldl"] + flags, check=True)
    os.remove(src)


@pytest.fixture
def machine(tmp_path):
    """site/nvidia/{nccl,cudnn}/lib (the wheels) and system/ (LD_LIBRARY_PATH: a cluster's libraries)."""
    site, system = tmp_path / "site", tmp_path / "system"
    for folder in ("nccl", "cudnn"):
        (site / "nvidia" / folder / "lib").mkdir(parents=True)
    system.mkdir()
    nccl = "int ncclGetVersion(int *v) {{ *v = {}; return 0; }}"
    _build(site / "nvidia" / "nccl" / "lib" / "libnccl.so.2", "libnccl.so.2", nccl.format(WHEEL_NCCL))
    _build(system / "libnccl.so", "libnccl.so.2", nccl.format(SYSTEM_NCCL))  # a system NCCL's soname is .so.2 too
    sub = "int ops_version(void) {{ return {}; }}"
    cudnn = site / "nvidia" / "cudnn" / "lib"
    _build(cudnn / "libcudnn_ops_infer.so.8", "libcudnn_ops_infer.so.8", sub.format(WHEEL_CUDNN), "$ORIGIN")
    _build(system / "libcudnn_ops_infer.so.8", "libcudnn_ops_infer.so.8", sub.format(MODULE_CUDNN))
    # cuDNN 8's dispatcher: opens its sub-library by bare name (libcudnn.so.8 has RUNPATH $ORIGIN, as the wheel's)
    _build(cudnn / "libcudnn.so.8", "libcudnn.so.8",
           "#include <dlfcn.h>\nint sub_version(void) { void *h = dlopen(\"libcudnn_ops_infer.so.8\", RTLD_NOW);"
           " if (!h) return -1; int (*f)(void) = (int (*)(void))dlsym(h, \"ops_version\"); return f(); }", "$ORIGIN")
    return tmp_path


PROBE = r"""
import ctypes, json, os, sys
from nnconsole.engine.backend import gpu_libs
mode = sys.argv[1]
out = {}
if mode in ("engine", "engine-nccl-home-set"):
    result = gpu_libs.preload_wheel_libraries()
    out["preloaded"] = [os.path.basename(p) for p in result.loaded]
    out["nccl_home"] = gpu_libs.give_nnabla_nccl()
else:  # what the engine did before: the dispatcher and libnccl.so.2 preloaded, no NCCL_HOME
    for name in ("libcudnn.so.8", "libnccl.so.2"):
        ctypes.CDLL(gpu_libs.library_file(name), mode=ctypes.RTLD_GLOBAL)
for candidate in gpu_libs.nnabla_nccl_candidates():  # nnabla-ext-cuda's dl_nccl_init, in its order
    try:
        nccl = ctypes.CDLL(candidate, mode=os.RTLD_LAZY)
    except OSError:
        continue
    version = ctypes.c_int()
    nccl.ncclGetVersion(ctypes.byref(version))
    out["nccl_candidate"], out["nccl_version"] = candidate, version.value
    break
cudnn = ctypes.CDLL(gpu_libs.library_file("libcudnn.so.8"), mode=ctypes.RTLD_GLOBAL)
out["cudnn_sub_version"] = cudnn.sub_version()
with open("/proc/self/maps") as fh:
    out["mapped"] = sorted({line.split()[-1] for line in fh if "libnccl" in line or "libcudnn" in line})
print(json.dumps(out))
"""


def _probe(machine, mode, nccl_home=""):
    env = dict(os.environ, LD_LIBRARY_PATH=str(machine / "system"),
               PYTHONPATH=os.pathsep.join([str(machine / "site"), ROOT]), TMPDIR=str(machine))
    env.pop("NCCL_HOME", None)
    if nccl_home:
        env["NCCL_HOME"] = nccl_home
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=60, env=env,
                         cwd=str(machine))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_hazard_a_system_nccl_and_a_module_cudnn_win_without_the_engine(machine):
    """The control: with only the old preloads, the loader picks the cluster's libraries."""
    before = _probe(machine, "before")
    assert before["nccl_candidate"] == "libnccl.so" and before["nccl_version"] == SYSTEM_NCCL, before
    assert before["cudnn_sub_version"] == MODULE_CUDNN, before
    assert str(machine / "system" / "libnccl.so") in before["mapped"]


def test_nnabla_finds_the_wheels_nccl_through_nccl_home(machine):
    after = _probe(machine, "engine")
    wheel = str(machine / "site" / "nvidia" / "nccl" / "lib" / "libnccl.so.2")
    assert after["nccl_version"] == WHEEL_NCCL, after
    assert after["nccl_candidate"] == os.path.join(after["nccl_home"], "lib", "libnccl.so"), after  # the first
    assert os.path.basename(after["nccl_home"]).startswith("nnconsole-nccl-")
    nccl_files = [path for path in after["mapped"] if "libnccl" in path]
    assert nccl_files == [wheel], after  # one NCCL in the process: the wheel's, the system's never mapped
    assert not list(machine.glob("nnconsole-nccl-*")), "the private NCCL_HOME outlived its process"


def test_a_cluster_modules_nccl_home_is_replaced_by_the_pinned_one(machine):
    module = machine / "module-nccl"
    (module / "lib").mkdir(parents=True)
    shutil.copy(machine / "system" / "libnccl.so", module / "lib" / "libnccl.so")
    after = _probe(machine, "engine-nccl-home-set", nccl_home=str(module))
    assert after["nccl_version"] == WHEEL_NCCL, after


def test_cudnn_sub_libraries_come_from_the_wheel_whatever_ld_library_path_holds(machine):
    after = _probe(machine, "engine")
    assert "libcudnn_ops_infer.so.8" in after["preloaded"], after
    assert after["cudnn_sub_version"] == WHEEL_CUDNN, after
    assert str(machine / "system" / "libcudnn_ops_infer.so.8") not in after["mapped"], after


def test_every_cudnn_sub_library_is_preloaded_after_what_it_links():
    needs = gpu_libs.wheel_needs()
    order = needs["preload_order"]
    subs = {name for name, entry in needs["libraries"].items()
            if entry["package"] == "nvidia-cudnn-cu12" and entry["how"] == "dlopen"}
    assert subs == {f"libcudnn_{kind}_{use}.so.8" for kind in ("ops", "cnn", "adv") for use in ("infer", "train")}
    assert subs <= set(order), sorted(subs - set(order))
    for position, name in enumerate(order):
        assert set(needs["libraries"][name]["needs"]) <= set(order[:position]), name


def test_the_needs_file_says_nnabla_tries_libnccl_so_first():
    said = gpu_libs.wheel_needs()["outside_the_extra"]["libnccl.so"]["provided_by"]
    assert "BEFORE libnccl.so.2" in said and "NCCL_HOME" in said
    assert gpu_libs.nnabla_nccl_candidates({})[:2] == ["libnccl.so", "libnccl.so.2"]
    assert gpu_libs.nnabla_nccl_candidates({"NCCL_HOME": "/h"})[:2] == ["/h/lib/libnccl.so", "/h/lib/libnccl.so.2"]
