"""Run under mpiexec: nnabla-ext-cuda's libmpi search before and after ``give_nnabla_libmpi``.

nnabla-ext-cuda (dl_mpi.cpp) dlopens $OMPI_HOME/lib/libmpi.so, then libmpi.so, /usr/lib64/libmpi.so,
/usr/lib/libmpi.so and /opt/openmpi/lib/libmpi.so, and calls MPI through the first handle that loads.
This script runs the same search with ctypes (gpu_libs.nnabla_libmpi_search) once before the engine
does anything, and once inside a stand-in ``nnabla_ext.cuda`` imported by the engine's own
``nnconsole.engine.backend.device.cuda_diagnosis`` (the import is when nnabla-ext-cuda searches). It then calls
MPI_Initialized and MPI_Comm_size(MPI_COMM_WORLD) through the handle nnabla would use: they only
answer 1 and the world size when that handle is the MPI instance mpi4py started. One JSON line per rank.
With ``--device-first`` the engine's device check runs before anything imported mpi4py.
"""
import ctypes
import json
import os
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from nnconsole.engine.backend import gpu_libs  # noqa: E402

DEVICE_FIRST = "--device-first" in sys.argv
if not DEVICE_FIRST:
    from mpi4py import MPI  # noqa: E402  (starts MPI, as the engine's workers do before any nnabla_ext.cuda)


def search():
    found, failures = gpu_libs.nnabla_libmpi_search()
    return {"found": found, "failures": failures, "problem": gpu_libs.nnabla_libmpi_problem()}


before = None if DEVICE_FIRST else search()
# A stand-in nnabla_ext.cuda that runs nnabla's search when imported, as the real one does.
fake = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fake-ext-{os.getpid()}")
os.makedirs(os.path.join(fake, "nnabla_ext", "cuda"), exist_ok=True)
with open(os.path.join(fake, "nnabla_ext", "cuda", "__init__.py"), "w") as fh:
    fh.write("from nnconsole.engine.backend import gpu_libs\n"
             "found, failures = gpu_libs.nnabla_libmpi_search()\n"
             "SEARCH = {'found': found, 'failures': failures, 'problem': gpu_libs.nnabla_libmpi_problem()}\n"
             "def get_device_count():\n    return 0\n")
sys.path.insert(0, fake)
from nnconsole.engine.backend.device import cuda_diagnosis  # noqa: E402

diagnosis = cuda_diagnosis()
import nnabla_ext.cuda  # noqa: E402

after = nnabla_ext.cuda.SEARCH
from mpi4py import MPI  # noqa: E402,F811
home = os.environ.get("OMPI_HOME")
flag, size = ctypes.c_int(-1), ctypes.c_int(-1)
if after["found"]:  # nnabla would register its NCCL communicator and call MPI through this handle
    handle = ctypes.CDLL(after["found"], mode=os.RTLD_LAZY)
    handle.MPI_Initialized(ctypes.byref(flag))
    world = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(handle, "ompi_mpi_comm_world")))
    handle.MPI_Comm_size(world, ctypes.byref(size))
with open("/proc/self/maps") as fh:
    mapped = {os.path.realpath(line.split()[-1]) for line in fh if "libmpi.so" in line}
print(json.dumps({"rank": MPI.COMM_WORLD.Get_rank(), "before": before, "after": after, "ompi_home": home,
                  "mpi_initialized_through_nnabla_handle": flag.value,
                  "size_through_nnabla_handle": size.value, "mapped_libmpi_files": len(mapped),
                  "diagnosis": diagnosis,
                  "home_mode": oct(stat.S_IMODE(os.stat(home).st_mode)) if home else None}), flush=True)
