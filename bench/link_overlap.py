"""Less to send, on throttled links (issue 20): float16 messages and overlap with backward, measured.

One MPI job per link runs a small CNN's training step (batch 16 per rank: input 1x32x32, two 3x3
convolutions with 16 maps, max pooling, affine 4096 -> 256 -> 3; 1.05 M parameters, 4.2 MB of float32
gradients, most of them in the affine layer that backward reaches first, while the convolutions' compute
comes last) with the engine's own communicator (``MpiCpuComm``) in five variants, taking turns step by step
in the same processes: compute only (no all-reduce), float32 after backward (the engine's plain path),
float32 overlapped, float16 after backward, float16 overlapped. Each step is forward + backward + all-reduce,
timed between barriers, the slower rank counting; medians. Links: 1 host x 2 ranks (shared memory) and two
simulated hosts (tests/support/netns_hosts.py, root) whose veths tc limits to 1 Gbit/s and 100 Mbit/s; each link is
first measured by ``nnconsole doctor --hosts`` and the predictor (engine/plan/timing.py) gives the float32 and
float16 times from that link and the compute-only step (the predictor does not model overlap).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from common import PYTHON, ROOT, median, mpi_env, mpi_prefix, parse_result, pin_threads, print_result, table

pin_threads(1)
VARIANTS = ("compute only", "float32", "float32 overlapped", "float16", "float16 overlapped")
BATCH = 16


def build_step(scope: str, comm, overlap: bool):
    """A training step (forward, backward, gradients summed over ranks) of the CNN under ``scope``."""
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF
    import numpy as np

    rng = np.random.RandomState(comm.rank if comm else 0)
    x, y = nn.Variable((BATCH, 1, 32, 32)), nn.Variable((BATCH, 1))
    x.d, y.d = rng.randn(*x.shape), rng.randint(0, 3, size=y.shape)
    with nn.parameter_scope(scope):
        h = F.relu(PF.convolution(x, 16, (3, 3), pad=(1, 1), name="conv1"))
        h = F.max_pooling(F.relu(PF.convolution(h, 16, (3, 3), pad=(1, 1), name="conv2")), (2, 2))
        h = PF.affine(F.tanh(PF.affine(h, 256, name="fc1")), 3, name="fc2")
        loss = F.mean(F.softmax_cross_entropy(h, y))
        params = list(nn.get_parameters(grad_only=True).values())
    size = comm.size if comm else 1

    def step() -> None:
        for p in params:
            p.grad.zero()
        loss.forward(clear_no_need_grad=True)
        if comm is None:
            loss.backward(1.0, clear_buffer=True)
        elif overlap:
            comm.backward(loss, 1.0 / size, params, reduce=True, average=False)
        else:
            loss.backward(1.0 / size, clear_buffer=True)
            comm.all_reduce_gradients(params, average=False)
    return step, 4 * sum(int(np.prod(p.shape)) for p in params)


def worker(reps: int) -> None:
    from mpi4py import MPI

    from allreduce import interleaved
    from nnconsole.engine.comm.cpu import MpiCpuComm

    world = MPI.COMM_WORLD
    comms = {"compute only": None, "float32": MpiCpuComm(world), "float32 overlapped": MpiCpuComm(world, overlap=True),
             "float16": MpiCpuComm(world, half=True), "float16 overlapped": MpiCpuComm(world, half=True, overlap=True)}
    steps = {}
    for index, (name, comm) in enumerate(comms.items()):
        steps[name], nbytes = build_step(f"v{index}", comm, "overlapped" in name)
    times = interleaved(world, steps, reps)
    if world.Get_rank() == 0:
        print_result({"median": {name: median(t) for name, t in times.items()}, "bytes": nbytes})


def run_job(prefix: list, env: dict, reps: int, wrap=lambda argv: argv) -> dict:
    cmd = wrap(prefix + [PYTHON, os.path.abspath(__file__), "--worker", str(reps)])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    result = parse_result(proc.stdout)
    if proc.returncode != 0 or result is None:
        raise RuntimeError(f"link measurement failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return result


def rows_for(label: str, result: dict, link=None) -> list:
    from nnconsole.engine.plan.timing import ring_allreduce_seconds

    t = result["median"]
    base, compute = t["float32"], t["compute only"]
    rows = []
    for name in VARIANTS:
        predicted = "-"
        if link is not None and name in ("float32", "float16"):
            wire = result["bytes"] // (2 if name == "float16" else 1)
            predicted = f"{(compute + ring_allreduce_seconds(wire, 2, link)) * 1e3:.1f}"
        rows.append([label, name, f"{t[name] * 1e3:.1f}", f"{t[name] / base:.2f}", predicted])
    return rows


def main() -> int:
    from slow_links import measure_link

    from common import test_support
    from nnconsole.engine.launch.launcher import worker_command
    from nnconsole.engine.plan.timing import Link
    from nnconsole.engine.helper_processes import python_module_command

    quick = "--quick" in sys.argv
    rows = rows_for("1 host x 2 (shared memory)", run_job(mpi_prefix(2), mpi_env(), 10 if quick else 30))
    harness = test_support("netns_hosts")
    reason = harness.namespaces_unavailable()
    if reason:
        print(f"link_overlap: no simulated hosts ({reason}); only the shared-memory rows")
    else:
        sim = harness.make_hosts(tempfile.mkdtemp(prefix="link-overlap-"), 2)
        try:
            env = dict(mpi_env(), NNCONSOLE_MPI_NETWORK=sim.subnet, **sim.environment())
            tail = len(python_module_command("nnconsole.engine.train.worker")) + 1
            prefix = worker_command("RUN", 2, hosts=sim.host_list().split(","), network=sim.subnet)[:-tail]
            for rate, reps in (("1gbit", 6 if quick else 16), ("100mbit", 3 if quick else 8)):
                sim.throttle(rate)
                bandwidth, latency = measure_link(sim, env)
                result = run_job(prefix, env, reps, wrap=lambda argv: sim.command(sim.hosts[0], argv))
                rows += rows_for(f"2 hosts x 1, {rate} (bus {bandwidth * 8 / 1e6:.0f} Mbit/s)", result,
                                 Link(bandwidth, latency))
        finally:
            harness.remove(sim)
    print(table(["link", "all-reduce", "ms / step", "vs float32", "predicted ms"], rows,
                "CNN step (4.2 MB of gradients), 2 ranks: medians, variants interleaved"))
    return 0


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker(int(sys.argv[sys.argv.index("--worker") + 1]))
    else:
        from common import run_main
        sys.exit(run_main(main))
