"""scripts/inspect_cuda_wheel.py follows NEEDED and dlopen names through wheels (tiny ELF stand-ins).

Built with the system C compiler: an "extension" that links liba and the driver and names libnccl in
its strings, an NVIDIA-style wheel where liba links libb, a NCCL wheel, and a library nobody needs.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import zipfile

import pytest

from tests.support.paths import ROOT, load_script

pytestmark = pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("readelf")), reason="needs gcc and readelf")


def _script():
    return load_script(os.path.join(ROOT, "scripts", "inspect_cuda_wheel.py"))


def _lib(folder, soname, code="int f(void) { return 0; }", links=()):
    src = folder / (soname + ".c")
    src.write_text(code + "\n")
    out = folder / soname
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(src), f"-Wl,-soname,{soname}",
                    "-Wl,--no-as-needed", f"-L{folder}"] + [f"-l:{name}" for name in links], check=True)
    return out


def _wheel(wheels, name, version, members):
    path = wheels / f"{name.replace('-', '_')}-{version}-py3-none-manylinux1_x86_64.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for arcname, file in members.items():
            zf.write(file, arcname)


@pytest.fixture
def wheels(tmp_path):
    build, wheels = tmp_path / "build", tmp_path / "wheels"
    build.mkdir()
    wheels.mkdir()
    libb = _lib(build, "libb.so.1")
    liba = _lib(build, "liba.so.1", links=["libb.so.1"])
    spare = _lib(build, "libspare.so.1", links=["liba.so.1"])
    nccl = _lib(build, "libnccl.so.2")
    driver = _lib(build, "libcuda.so.1")
    ext = _lib(build, "libnnabla_cuda-120_8.so", code='const char *n = "libnccl.so.2"; int g(void) { return 0; }',
               links=["liba.so.1", "libcuda.so.1"])
    del driver  # linked against, but shipped by no wheel: the NVIDIA driver
    _wheel(wheels, "nnabla-ext-cuda120", "1.39.0", {"nnabla_ext/cuda/libnnabla_cuda-120_8.so": ext})
    _wheel(wheels, "nvidia-alpha-cu12", "1.0",
           {"nvidia/alpha/lib/liba.so.1": liba, "nvidia/alpha/lib/libspare.so.1": spare})
    _wheel(wheels, "nvidia-beta-cu12", "2.0", {"nvidia/beta/lib/libb.so.1": libb})
    _wheel(wheels, "nvidia-nccl-cu12", "2.20.5", {"nvidia/nccl/lib/libnccl.so.2": nccl})
    return wheels


REQUIREMENTS = ["nnabla-ext-cuda120==1.39.0", "nvidia-alpha-cu12==1.0", "nvidia-beta-cu12==2.0",
                "nvidia-nccl-cu12==2.20.5"]


def test_needed_closure_dlopen_names_and_load_order(wheels):
    result = _script().inspect(REQUIREMENTS, str(wheels))
    libraries = result["libraries"]
    assert set(libraries) == {"liba.so.1", "libb.so.1", "libnccl.so.2"}
    assert libraries["libb.so.1"] == {"package": "nvidia-beta-cu12", "folder": "beta", "file": "libb.so.1",
                                      "how": "NEEDED", "needed_by": ["liba.so.1"], "needs": []}
    assert libraries["libnccl.so.2"]["how"] == "dlopen"
    order = result["preload_order"]
    assert sorted(order) == ["liba.so.1", "libb.so.1", "libnccl.so.2"]
    assert order.index("libb.so.1") < order.index("liba.so.1")  # dependencies first
    assert result["not_needed"] == ["libspare.so.1"]
    assert result["outside_the_extra"]["libcuda.so.1"]["provided_by"] == "the NVIDIA driver"


def test_a_needed_library_no_wheel_provides_stops_the_script(wheels):
    """Dropping a wheel from the extra (as cuSOLVER was) is an error, not a shorter list."""
    with pytest.raises(SystemExit) as caught:
        _script().inspect([r for r in REQUIREMENTS if not r.startswith("nvidia-beta")], str(wheels))
    assert "libb.so.1" in str(caught.value)
