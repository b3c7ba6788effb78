"""Run under mpiexec: the engine's bucketed all-reduce must give the mean of every rank's gradients."""
import json
import sys

import numpy as np
import nnabla as nn
from mpi4py import MPI

from engine.comm import MpiCpuComm

bucket_mb = float(sys.argv[1])
world = MPI.COMM_WORLD
comm = MpiCpuComm(world, bucket_mb=bucket_mb)
shapes = [(3, 5), (7,), (2, 3, 4), (1,), (1000,), (33, 3)]
params = []
for i, shape in enumerate(shapes):
    v = nn.Variable(shape, need_grad=True)
    v.g = np.full(shape, (comm.rank + 1) * (i + 1), dtype=np.float32) + np.arange(np.prod(shape)).reshape(shape)
    params.append(v)
comm.all_reduce_gradients(params)
ok = True
size = comm.size
for i, (shape, v) in enumerate(zip(shapes, params)):
    expected = np.mean([(r + 1) * (i + 1) for r in range(size)]) + np.arange(np.prod(shape)).reshape(shape)
    ok &= bool(np.allclose(v.g, expected, rtol=1e-6))
# Parameters broadcast from rank 0.
data = {"w": nn.Variable((4,))}
data["w"].d = np.full(4, comm.rank + 10, dtype=np.float32)
comm.broadcast_parameters(data)
ok &= bool(np.all(data["w"].d == 10))
if comm.rank == 0:
    print(json.dumps({"ok": ok, "buckets": len(comm._layout), "size": size}))
