"""Run under mpiexec: backward with the all-reduce overlapped (multi_gpu.allreduce_overlap) against the plain
backward-then-all-reduce, in float32 and float16 messages.

Two copies of one network (a layer applied twice, a parameter the loss never reaches, tiny buckets so that
every parameter has its own) take 5 SGD steps on rank-dependent data; the overlapped copy must end with
bit-identical gradients and parameters, on every rank. Prints one JSON line (rank 0).
"""
import json

import numpy as np
import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from mpi4py import MPI

from nnconsole.engine.comm.cpu import MpiCpuComm

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
checks = {}


def network(scope: str, x, t):
    with nn.parameter_scope(scope):
        h = F.tanh(PF.affine(x, 16, name="fc1"))
        h = F.tanh(PF.affine(h, 16, name="shared"))
        h = F.tanh(PF.affine(h, 16, name="shared"))  # the same parameters a second time
        y = PF.affine(h, 3, name="out")
        PF.affine(x, 2, name="unused")
        params = nn.get_parameters(grad_only=True)
    return F.mean(F.softmax_cross_entropy(y, t)), params


for half in (False, True):
    nn.clear_parameters()
    x, t = nn.Variable((8, 6)), nn.Variable((8, 1))
    runs = {}
    for name, overlap in (("plain", False), ("overlapped", True)):
        loss, params = network(name, x, t)
        if name == "overlapped":  # the same start as the plain copy, on every rank (rank 0's)
            for p, q in zip(params.values(), runs["plain"][1]):
                p.d = world.bcast(np.array(q.d), root=0)
        else:
            for p in params.values():
                p.d = world.bcast(np.array(p.d), root=0)
        comm = MpiCpuComm(world, bucket_mb=0.0001, half=half, overlap=overlap)
        solver = S.Sgd(0.1)
        solver.set_parameters(params)
        runs[name] = (loss, list(params.values()), comm, solver)
    start = np.concatenate([p.d.ravel() for p in runs["plain"][1]])
    rng = np.random.RandomState(rank)
    for step in range(5):
        x.d, t.d = rng.randn(8, 6), rng.randint(0, 3, (8, 1))
        grads = {}
        for name, (loss, params, comm, solver) in runs.items():
            solver.zero_grad()
            loss.forward()
            if comm.overlaps_backward:
                comm.backward(loss, 1.0 / size, params, reduce=True, average=False)
            else:
                loss.backward(1.0 / size, clear_buffer=True)
                comm.all_reduce_gradients(params, average=False)
            grads[name] = [np.array(p.g, copy=True) for p in params]
            solver.update()
        same = all(np.array_equal(a, b) for a, b in zip(grads["plain"], grads["overlapped"]))
        checks[f"{'half' if half else 'float'} step {step} gradients"] = bool(same)
    final = [np.concatenate([p.d.ravel() for p in runs[name][1]]) for name in ("plain", "overlapped")]
    key = "half" if half else "float"
    checks[f"{key} parameters"] = bool(np.array_equal(final[0], final[1]))
    checks[f"{key} ranks agree"] = bool(np.array_equal(final[1], world.bcast(final[1], root=0)))
    checks[f"{key} trained"] = bool(not np.array_equal(final[1], start))

everyone = world.gather(checks, root=0)
if rank == 0:
    print(json.dumps({"ok": all(all(c.values()) for c in everyone), "checks": checks, "size": size}))
