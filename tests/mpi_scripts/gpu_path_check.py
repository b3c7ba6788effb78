"""Run under mpiexec: the engine's GPU training path on CPU, through ``nnconsole.engine.train.worker.run_worker``.

    gpu_path_check.py RUN_DIR MODE PRECISION [DELAY] [INJECT]

MODE ``gpu``: the worker believes it has a GPU (a DeviceChoice with backend 'cuda' around a CPU
context) and gets the recording NCCL stand-in of ``fake_nccl`` instead of nnabla-ext-cuda's
communicator; DELAY is the per-reduction communication time the fake's synchronisation costs.
MODE ``cpu``: the ordinary CPU path (MpiCpuComm), as a reference.
PRECISION ``half``: the worker runs its half-precision update step (dynamic loss scaling) while
computing in float on the CPU. INJECT ``RANK:UPDATE``: that rank puts inf into one gradient after
the all-reduce of that update (1-based), as an fp16 overflow seen by one rank only would.
Prints one JSON line (rank 0) with every rank's records.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import fake_nccl  # noqa: E402
import nnabla as nn  # noqa: E402
import nnabla.communicators as C  # noqa: E402
from mpi4py import MPI  # noqa: E402
from nnabla.ext_utils import get_extension_context  # noqa: E402

import nnconsole.engine.comm.nccl  # noqa: E402
from nnconsole.engine.comm.cpu import MpiCpuComm  # noqa: E402
from nnconsole.engine.backend.device import DeviceChoice  # noqa: E402
from nnconsole.engine.train.worker import run_worker  # noqa: E402

run_dir, mode, precision = sys.argv[1], sys.argv[2], sys.argv[3]
fake_nccl.DELAY[0] = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
inject = tuple(int(v) for v in sys.argv[5].split(":")) if len(sys.argv) > 5 else None
world = MPI.COMM_WORLD
rank = world.Get_rank()

C.MultiProcessDataParallelCommunicator = fake_nccl.RecordingNccl
nnconsole.engine.comm.nccl.device_synchronizer = lambda ctx: fake_nccl.synchronize
ctx = get_extension_context("cpu", type_config="float")
nn.set_default_context(ctx)
choice = DeviceChoice("cuda" if mode == "gpu" else "cpu", 0, precision, ctx, f"test: {mode} path on the CPU")
trace = {"injected": False, "after_injection": None}
injected_parameters = []


class InjectingComm(MpiCpuComm):
    """MpiCpuComm that, on one rank, makes one update's reduced gradients non-finite."""

    updates = 0

    def all_reduce_gradients(self, params, average=True):
        super().all_reduce_gradients(params, average)
        self.updates += 1
        crc = [np.array(p.d, copy=True) for p in params]
        if trace["injected"] and trace["after_injection"] is None:  # unchanged since: the update was skipped
            trace["after_injection"] = bool(all(np.array_equal(a, b) for a, b in zip(crc, injected_parameters)))
        if inject and self.updates == inject[1]:
            trace["injected"] = True
            injected_parameters[:] = crc
            if rank == inject[0]:
                grad = params[0].g
                grad.flat[0] = np.inf
                params[0].g = grad


comm = InjectingComm(world) if mode == "cpu" else None
outcome = run_worker(run_dir, comm=comm, device_choice=choice)
record = dict(fake_nccl.RECORD, outcome=outcome, trace=trace, rank=rank)
everyone = world.gather(record, root=0)
if rank == 0:
    print(json.dumps({"ranks": everyone}))
