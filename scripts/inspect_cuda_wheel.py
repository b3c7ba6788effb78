#!/usr/bin/env python3
"""Which shared libraries nnabla-ext-cuda really needs, read from the wheels themselves with readelf.

Downloads (``pip download --no-deps``) the ``cuda`` extra's wheels exactly as pinned in pyproject.toml,
reads every shared object's NEEDED entries, and follows them from the extension's own objects through
NVIDIA's libraries. Names the extension (and cuDNN's dispatcher) dlopen at run time are found in their
strings. The result, engine/backend/resources/cuda_wheel_needs.json, is what ``nnconsole.engine.backend.gpu_libs`` preloads and what
tests/engine/backend/test_gpu_libs.py checks the extra against. Rerun it whenever a pin in the extra changes:

    .venv/bin/python scripts/inspect_cuda_wheel.py [--wheels DIR] [--out FILE]

Needs network access to the package index (or DIR already holding the wheels) and binutils' readelf.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "engine", "backend", "resources", "cuda_wheel_needs.json")
SONAME_IN_TEXT = re.compile(rb"lib[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*?\.so(?:\.\d+)*(?![A-Za-z0-9_.])")
# Objects whose strings name libraries they dlopen: nnabla-ext-cuda's own objects (libnccl, libmpi) and
# cuDNN 8's dispatcher (its sub-libraries). Scanning all of NVIDIA's 2 GB is slow and adds nothing.
SCAN_FOR_DLOPEN = ("libnnabla_cuda", "init.cpython", "nvtx.cpython", "libcudnn.so.8")
# Names no wheel of the extra provides, and who provides them. Anything else unresolved is an error, so
# a new dependency after a version change is noticed instead of silently missing from the extra.
OUTSIDE_THE_EXTRA = {
    "libcuda.so.1": "the NVIDIA driver",
    "libnnabla.so": "the nnabla wheel",
    "libmpi.so": "Open MPI (nnconsole.engine.backend.gpu_libs gives nnabla the libmpi that mpi4py loaded)",
    "libnccl.so": "nnabla tries $NCCL_HOME/lib/libnccl.so, then libnccl.so BEFORE libnccl.so.2; the engine's "
                  "NCCL_HOME makes it the wheel's libnccl.so.2 (nnconsole.engine.backend.gpu_libs.give_nnabla_nccl)",
    "libnvToolsExt.so": "NVTX profiling markers, optional (nnabla_ext.cuda.nvtx only)",
    "libnvrtc.so": "cuDNN runtime-fusion engines, optional (not used by nnabla)",
}
SYSTEM = re.compile(r"^(ld-linux.*|lib(c|m|dl|rt|pthread|gcc_s|stdc\+\+|z|util)\.so(\.\d+)*)$")


def cuda_extra(pyproject: str) -> list:
    """The requirement strings of the [project.optional-dependencies] cuda list."""
    text = open(pyproject, encoding="utf-8").read()
    block = re.search(r"^cuda = \[(.*?)^\]", text, re.S | re.M)
    if not block:
        raise SystemExit(f"{pyproject}: no 'cuda = [...]' extra found")
    return re.findall(r'"([^"]+)"', block.group(1))


def download(requirements: list, folder: str) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", folder] + requirements
    subprocess.run(cmd, check=True)


def wheel_for(requirement: str, folder: str) -> str:
    name, _, version = requirement.partition("==")
    stem = re.sub(r"[-_.]+", "_", name).lower()
    hits = [p for p in glob.glob(os.path.join(folder, "*.whl"))
            if os.path.basename(p).lower().startswith(f"{stem}-{version.lower()}-")]
    if len(hits) != 1:
        raise SystemExit(f"expected one wheel for {requirement} in {folder}, found {hits}")
    return hits[0]


def readelf(path: str) -> dict:
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)
    soname = re.findall(r"\(SONAME\)\s+Library soname: \[(.+?)\]", out)
    runpath = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.+?)\]", out)
    return {"needed": needed, "soname": soname[0] if soname else os.path.basename(path),
            "runpath": runpath[0] if runpath else ""}


def dlopened_names(path: str) -> list:
    with open(path, "rb") as fh:
        names = {m.decode() for m in SONAME_IN_TEXT.findall(fh.read())}
    return sorted(n for n in names if not SYSTEM.match(n))


def inspect(requirements: list, wheels: str) -> dict:
    """Read every shared object of the pinned wheels and follow the extension's dependencies."""
    objects = {}  # soname -> {package, path in wheel, needed, runpath, dlopens}
    extension = []
    with tempfile.TemporaryDirectory() as tmp:
        for req in requirements:
            name = req.partition("==")[0].split("~=")[0].strip()
            wheel = wheel_for(req, wheels)
            with zipfile.ZipFile(wheel) as zf:
                for member in zf.namelist():
                    if not re.search(r"\.so(\.\d+)*$", member):
                        continue
                    path = zf.extract(member, tmp)
                    info = readelf(path)
                    base = os.path.basename(member)
                    info.update(package=name, file=member,
                                dlopens=dlopened_names(path) if base.startswith(SCAN_FOR_DLOPEN) else [])
                    if name.startswith("nnabla-ext-cuda"):
                        extension.append(info)
                    objects[info["soname"]] = info
                    os.remove(path)
    needs, unresolved, queue = {}, {}, []
    for obj in extension:
        queue += [(n, obj["soname"], "NEEDED") for n in obj["needed"]]
        queue += [(n, obj["soname"], "dlopen") for n in obj["dlopens"] if n not in obj["needed"]]
    while queue:
        name, by, how = queue.pop(0)
        if SYSTEM.match(name) or name in {o["soname"] for o in extension}:
            continue
        if name not in objects:
            unresolved.setdefault(name, set()).add(by)
            continue
        entry = needs.get(name)
        if entry:
            entry["needed_by"] = sorted(set(entry["needed_by"]) | {by})
            continue
        obj = objects[name]
        folder = obj["file"].split("/")[1] if obj["file"].startswith("nvidia/") else ""
        needs[name] = {"package": obj["package"], "folder": folder, "file": os.path.basename(obj["file"]),
                       "how": how, "needed_by": [by], "needs": [n for n in obj["needed"] if not SYSTEM.match(n)]}
        queue += [(n, name, "NEEDED") for n in obj["needed"]]
        queue += [(n, name, "dlopen") for n in obj["dlopens"] if n not in obj["needed"] and n != name]
    unknown = sorted(n for n in unresolved if n not in OUTSIDE_THE_EXTRA)
    if unknown:
        raise SystemExit(f"needed but in no wheel of the extra and not known to be outside it: {unknown}; "
                         "add the NVIDIA package to the cuda extra or describe it in OUTSIDE_THE_EXTRA")
    ext_objects = {o["soname"] for o in extension}
    return {
        "generated_by": "scripts/inspect_cuda_wheel.py (rerun when a pin of the cuda extra changes)",
        "requirements": requirements,
        "preload_order": preload_order(needs, ext_objects),
        "libraries": dict(sorted(needs.items())),
        "outside_the_extra": {n: {"provided_by": OUTSIDE_THE_EXTRA[n], "needed_by": sorted(unresolved[n])}
                              for n in sorted(unresolved)},
        "not_needed": sorted(s for s, o in objects.items() if s not in needs and s not in ext_objects),
    }


def preload_order(needs: dict, ext_objects: set) -> list:
    """Dependencies first: every library the extension reaches, NEEDED or dlopened, the libraries an NVIDIA
    library dlopens included. cuDNN 8's dispatcher opens its sub-libraries by bare name, and the loader
    searches LD_LIBRARY_PATH before the dispatcher's RUNPATH: only a preloaded sub-library (matched by soname)
    is sure to be the wheel's. ``ext_objects``: the extension's own objects (never preloaded)."""
    wanted = {name for name in needs if name not in ext_objects}
    order, done = [], set()

    def place(name: str) -> None:
        if name in done:
            return
        done.add(name)
        for dep in needs[name]["needs"]:
            if dep in wanted:
                place(dep)
        order.append(name)

    for name in sorted(wanted):
        place(name)
    return order


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", default=os.path.join(tempfile.gettempdir(), "nnconsole-cuda-wheels"),
                        help="folder for the downloaded wheels (reused when they are already there)")
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--pyproject", default=os.path.join(ROOT, "pyproject.toml"))
    args = parser.parse_args(argv)
    requirements = cuda_extra(args.pyproject)
    loose = [r for r in requirements if "==" not in r]
    if loose:
        raise SystemExit(f"pin every package of the cuda extra with '==' first (the inspection must match "
                         f"what users install): {loose}")
    os.makedirs(args.wheels, exist_ok=True)
    missing = []
    for req in requirements:
        try:
            wheel_for(req, args.wheels)
        except SystemExit:
            missing.append(req)
    if missing:
        download(missing, args.wheels)
    result = inspect(requirements, args.wheels)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1, sort_keys=False)
        fh.write("\n")
    os.replace(tmp, args.out)
    print(f"{args.out}: {len(result['libraries'])} libraries needed, preload order "
          f"{', '.join(result['preload_order'])}; outside the extra: {', '.join(result['outside_the_extra'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
