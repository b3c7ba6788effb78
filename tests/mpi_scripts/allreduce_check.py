"""Run under mpiexec: the engine's bucketed all-reduce must give the mean (or sum) of every rank's gradients.

Covers what re-homing gradients into flat buckets could break: gradients written by a real backward
through the bucket views over several iterations with ``solver.zero_grad()`` in between, a parameter
that is zeroed but never reached by backward, a 0-d tensor, chunked messages (tiny bucket size), the
plain sum, and a second communicator taking over the same parameters.
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

bucket_mb = float(sys.argv[1])
world = MPI.COMM_WORLD
comm = MpiCpuComm(world, bucket_mb=bucket_mb)
size, rank = comm.size, comm.rank
checks = {}


def gathered(arrays):
    """Every rank's copy of ``arrays`` (before reduction), as a list per rank."""
    return world.allgather([np.array(a, copy=True) for a in arrays])


# 1. Hand-set gradients of assorted shapes, one of them 0-d.
shapes = [(3, 5), (7,), (2, 3, 4), (), (1000,), (33, 3)]
params = []
for i, shape in enumerate(shapes):
    v = nn.Variable(shape, need_grad=True)
    v.g = np.full(shape, (rank + 1) * (i + 1), dtype=np.float32) + np.arange(int(np.prod(shape))).reshape(shape)
    params.append(v)
before = gathered([p.g for p in params])
comm.all_reduce_gradients(params)
checks["mean"] = all(np.allclose(p.g, np.mean([b[i] for b in before], axis=0), rtol=1e-6)
                     for i, p in enumerate(params))
checks["buckets"] = len(comm._buckets)

# 2. A real network: backward writes into the bucket views; zero_grad between iterations; a parameter
# outside the loss's graph is zeroed and must come back as zero, not as a stale bucket value.
nn.clear_parameters()
rng = np.random.RandomState(rank)
x, t = nn.Variable((4, 6)), nn.Variable((4, 1))
with nn.parameter_scope("net"):
    h = F.relu(PF.affine(x, 9, name="fc1"))
    y = PF.affine(h, 3, name="fc2")
    PF.affine(x, 2, name="unused")
loss = F.mean(F.softmax_cross_entropy(y, t))
net_params = list(nn.get_parameters().values())
solver = S.Sgd(0.1)
solver.set_parameters(nn.get_parameters())
ok_net = True
for iteration in range(3):
    x.d = rng.randn(4, 6)
    t.d = rng.randint(0, 3, (4, 1))
    solver.zero_grad()
    loss.forward()
    loss.backward()
    local = gathered([p.g for p in net_params])
    comm.all_reduce_gradients(net_params, average=False)
    for i, p in enumerate(net_params):
        ok_net &= bool(np.allclose(p.g, np.sum([b[i] for b in local], axis=0), rtol=1e-5, atol=1e-7))
    unused = [p for name, p in nn.get_parameters().items() if "unused" in name]
    ok_net &= all(bool(np.all(p.g == 0)) for p in unused)
    solver.update()
    # Every rank must hold the same parameters after the update.
    crc = np.concatenate([p.d.ravel() for p in net_params])
    ok_net &= bool(np.array_equal(crc, world.bcast(crc, root=0)))
checks["network"] = ok_net

# 3. A second communicator re-homes the same gradients; the first notices and plans again.
other = MpiCpuComm(world, bucket_mb=bucket_mb)
for p in net_params:
    p.g = np.ones(p.shape, dtype=np.float32) * (rank + 1)
other.all_reduce_gradients(net_params, average=False)
for p in net_params:
    p.g = np.ones(p.shape, dtype=np.float32) * (rank + 1)
comm.all_reduce_gradients(net_params, average=False)
checks["takeover"] = all(bool(np.allclose(p.g, size * (size + 1) / 2)) for p in net_params)

# 4. Two parameter lists taking turns (a GAN's two optimizers): each keeps its buckets, nothing is planned
# again after the first round, and every sum is still right.
import nnconsole.engine.comm.cpu as comm_module  # noqa: E402

turns = MpiCpuComm(world, bucket_mb=bucket_mb)
first, second = net_params[:2], net_params[2:]
ok_turns, plans_after_first_round = True, None
for round_ in range(3):
    for group in (first, second):
        for p in group:
            p.g = np.full(p.shape, (rank + 1) * (round_ + 1), dtype=np.float32)
        turns.all_reduce_gradients(group, average=False)
        ok_turns &= all(bool(np.allclose(p.g, (round_ + 1) * size * (size + 1) / 2)) for p in group)
    if round_ == 0:
        plans_after_first_round = comm_module._PLANS[0]
checks["turns"] = ok_turns and comm_module._PLANS[0] == plans_after_first_round

# Parameters broadcast from rank 0.
data = {"w": nn.Variable((4,))}
data["w"].d = np.full(4, rank + 10, dtype=np.float32)
comm.broadcast_parameters(data)
checks["broadcast"] = bool(np.all(data["w"].d == 10))

# Every rank's checks count: rank 0 alone would trivially pass the broadcast and the crc comparison.
all_checks = world.gather(checks, root=0)
if rank == 0:
    ok = len(all_checks) == size and all(v for rank_checks in all_checks
                                         for k, v in rank_checks.items() if k != "buckets")
    # Every rank must have planned the same buckets for the same parameters.
    ok = ok and len({rank_checks["buckets"] for rank_checks in all_checks}) == 1
    merged = dict(checks)
    merged.update({f"rank{r}": rank_checks for r, rank_checks in enumerate(all_checks)})
    print(json.dumps({"ok": ok, "checks": merged, "buckets": checks["buckets"], "size": size}))
