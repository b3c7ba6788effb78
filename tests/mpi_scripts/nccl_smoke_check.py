"""Run under mpiexec: the doctor's NCCL smoke test (nnconsole.engine.doctor.gpu_checks.nccl_smoke_worker) on the CPU.

nnabla-ext-cuda's communicator is replaced by fake_nccl's recording stand-in (real MPI collectives,
nnabla-ext-cuda's pack-pool arithmetic, callback reductions finished at device synchronisation) and
the device choice by a CPU context, so the smoke test's own checks (all_reduce sum, one callback
backward at the engine's pack size against the gradient of the mean input) run as on a GPU.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import fake_nccl  # noqa: E402
import nnabla as nn  # noqa: E402
import nnabla.communicators as C  # noqa: E402
from nnabla.ext_utils import get_extension_context  # noqa: E402

from nnconsole.engine.backend.device import DeviceChoice  # noqa: E402
from nnconsole.engine.comm import nccl  # noqa: E402
from nnconsole.engine.doctor import gpu_checks  # noqa: E402

C.MultiProcessDataParallelCommunicator = fake_nccl.RecordingNccl
# Both the communicator and the smoke test synchronise the device: each module's own binding is replaced.
nccl.device_synchronizer = gpu_checks.device_synchronizer = lambda ctx: fake_nccl.synchronize


def cpu_choice(device, precision="float", local_rank=0):
    ctx = get_extension_context("cpu", type_config="float")
    nn.set_default_context(ctx)
    return DeviceChoice("cuda", local_rank, "float", ctx, "test: the GPU path on the CPU")


gpu_checks.select_device = cpu_choice
if "--break-callback" in sys.argv:  # a callback that reduces nothing must be caught
    fake_nccl.RecordingNccl.all_reduce_callback = lambda self, data, pack_size, division=False, **kw: []
gpu_checks.nccl_smoke_worker()
