"""Run under mpiexec: the float16 all-reduce (multi_gpu.allreduce_precision: half) against the float32 one.

Prints one JSON line (rank 0): per check the worst error relative to the largest |value| of its message, and
whether it is within TOLERANCE; the ranks' parameters after training must be bit-identical.
"""
import json
import sys

import numpy as np
import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from mpi4py import MPI

from nnconsole.engine.comm.cpu import MpiCpuComm

TOLERANCE = 2.0 ** -10  # float16 keeps 11 bits: one rounding of each rank's value and one of the sum
bucket_mb = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
world = MPI.COMM_WORLD
half = MpiCpuComm(world, bucket_mb=bucket_mb, half=True)
exact = MpiCpuComm(world, bucket_mb=bucket_mb)
size, rank = half.size, half.rank
checks, errors = {}, {}


def reduce_both(values, average=True):
    """The same gradients reduced by both communicators: (float16 result, float32 result)."""
    out = []
    for comm in (half, exact):
        params = []
        for v in values:
            p = nn.Variable(v.shape, need_grad=True)
            p.g = v
            params.append(p)
        comm.all_reduce_gradients(params, average=average)
        out.append([np.array(p.g, copy=True) for p in params])
    return out


def worst(got, want):
    top = max(float(np.max(np.abs(w))) for w in want) or 1.0
    return max(float(np.max(np.abs(g - w))) for g, w in zip(got, want)) / top


# 1. Magnitudes from 1e-6 to 4e4: the sum of two 4e4 (8e4) does not fit float16 unscaled.
rng = np.random.RandomState(rank)
values = [rng.randn(300).astype(np.float32) * s for s in (1e-6, 1e-3, 1.0, 4e4)]
for name, average in (("mean", True), ("sum", False)):
    got, want = reduce_both(values, average)
    per = [worst([g], [w]) for g, w in zip(got, want)]  # each tensor its own message only with tiny buckets
    errors[name] = worst(got, want)
    checks[name] = errors[name] <= TOLERANCE and all(np.isfinite(g).all() for g in got)
    errors[name + "_per_tensor"] = per

# 2. A NaN on one rank: that message goes in float32 and comes back NaN, as without float16.
nan_values = [np.ones(8, dtype=np.float32), np.ones(8, dtype=np.float32)]
if rank == 1:
    nan_values[0][3] = np.nan
fallbacks = half.half.float32_fallbacks
got, want = reduce_both(nan_values)
checks["nan"] = bool(np.isnan(got[0][3]) and np.isnan(want[0][3])) and half.half.float32_fallbacks > fallbacks
checks["zeros"] = bool(np.all(reduce_both([np.zeros(5, dtype=np.float32)])[0][0] == 0))

# 3. Training: the same network and data, 30 SGD steps with each communicator from the same start.
finals = []
for comm in (half, exact):
    nn.clear_parameters()
    nn.random.seed(0)  # the same initial weights for both communicators
    x, t = nn.Variable((16, 10)), nn.Variable((16, 1))
    with nn.parameter_scope("net"):
        y = PF.affine(F.tanh(PF.affine(x, 32, name="fc1")), 4, name="fc2")
    loss = F.mean(F.softmax_cross_entropy(y, t))
    params = nn.get_parameters()
    solver = S.Momentum(0.1)
    solver.set_parameters(params)
    data = np.random.RandomState(100 + rank)
    for _ in range(30):
        x.d = data.randn(16, 10)
        t.d = data.randint(0, 4, (16, 1))
        solver.zero_grad()
        loss.forward()
        loss.backward()
        comm.all_reduce_gradients(list(params.values()))
        solver.update()
    finals.append(np.concatenate([p.d.ravel() for p in params.values()]))
errors["training"] = float(np.max(np.abs(finals[0] - finals[1])) / np.max(np.abs(finals[1])))
checks["training"] = errors["training"] <= 1e-3
checks["identical"] = bool(np.array_equal(finals[0], world.bcast(finals[0], root=0)))

all_checks = world.gather(checks, root=0)
if rank == 0:
    ok = all(v for c in all_checks for v in c.values())
    print(json.dumps({"ok": ok, "checks": all_checks, "errors": errors, "tolerance": TOLERANCE, "size": size}))
