"""Predict the time per epoch of each worker/host layout from measured costs (pure Python, no MPI).

Data-parallel training with a fixed per-worker batch B on N workers runs ceil(samples / (B x N))
iterations per epoch; each iteration costs the compute time of one worker plus the gradient all-reduce.
A ring all-reduce of S bytes over n participants sends 2(n-1)/n x S through each link and takes
2(n-1) steps, each paying the link's latency. Across hosts it is modelled hierarchically, as NCCL and
Open MPI do it: within a host over shared memory (fast), then a ring of the hosts over the network,
which is where a slow link makes more machines slower than fewer (the seeds' two-machine example).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

LOCAL_BANDWIDTH = 5e9  # bytes/s within one host (shared memory); bench/allreduce.py measures the real one
LOCAL_LATENCY = 5e-6


@dataclass
class Link:
    """A network link as doctor --hosts measures it: bytes per second and one-way latency in seconds."""

    bandwidth: float
    latency: float = 0.0


@dataclass
class Estimate:
    """One layout's predicted costs."""

    hosts: int
    workers_per_host: int
    iterations: int  # per epoch
    compute_s: float  # per iteration
    allreduce_s: float  # per iteration
    epoch_s: float
    note: str = ""
    compute_known: bool = True  # False: no run measured the compute yet, so epoch_s counts the all-reduce only
    basis: str = ""  # where the compute and all-reduce figures came from (the prediction's measured runs)

    @property
    def workers(self) -> int:
        return self.hosts * self.workers_per_host

    @property
    def allreduce_share(self) -> float:
        total = self.compute_s + self.allreduce_s
        return self.allreduce_s / total if total else 0.0


def ring_allreduce_seconds(size_bytes: float, participants: int, link: Link) -> float:
    """Ring all-reduce of ``size_bytes`` among ``participants``: 2(n-1)/n x size / bandwidth + 2(n-1) x latency."""
    if participants <= 1:
        return 0.0
    steps = 2 * (participants - 1)
    return steps / participants * size_bytes / link.bandwidth + steps * link.latency


def allreduce_seconds(size_bytes: float, hosts: int, workers_per_host: int, network: Link,
                      local: Optional[Link] = None) -> float:
    """All-reduce time of one iteration's gradients for ``hosts`` x ``workers_per_host`` workers."""
    local = local or Link(LOCAL_BANDWIDTH, LOCAL_LATENCY)
    within = ring_allreduce_seconds(size_bytes, workers_per_host, local)
    return within + ring_allreduce_seconds(size_bytes, hosts, network)


def estimate(samples: int, batch_per_worker: int, compute_s: float, gradient_bytes: float, hosts: int,
             workers_per_host: int, network: Link, local: Optional[Link] = None) -> Estimate:
    """Predicted epoch time of one layout (``compute_s``: measured seconds per iteration of one worker)."""
    workers = hosts * workers_per_host
    iterations = max(1, math.ceil(samples / (batch_per_worker * workers)))
    comm = allreduce_seconds(gradient_bytes, hosts, workers_per_host, network, local)
    return Estimate(hosts, workers_per_host, iterations, compute_s, comm, iterations * (compute_s + comm))


def simulated_estimate(real: Estimate, workers: int, iterations: int, batch_ratio: float = 1.0) -> Estimate:
    """The epoch time of ``workers`` simulated on the ``real.workers`` devices of layout ``real``
    (--simulate-workers N on M): each device computes N/M micro-batches one after another per iteration, then
    the M devices all-reduce as ``real`` does. ``iterations``: the N-worker plan's per epoch; ``batch_ratio``:
    its per-worker batch over the M-worker plan's (1 unless the policy divides the batch)."""
    compute = real.compute_s * batch_ratio * workers / max(real.workers, 1)
    return Estimate(real.hosts, real.workers_per_host, iterations, compute, real.allreduce_s,
                    iterations * (compute + real.allreduce_s), compute_known=real.compute_known, basis=real.basis)


def layouts(max_hosts: int, slots_per_host: int) -> List[Tuple[int, int]]:
    """(hosts, workers per host) to compare: 1 worker, then each host count with 1..slots workers each."""
    found = [(1, 1)]
    for h in range(1, max_hosts + 1):
        for w in range(1, slots_per_host + 1):
            if (h, w) != (1, 1):
                found.append((h, w))
    return found


def compare(samples: int, batch_per_worker: int, compute_s: float, gradient_bytes: float,
            candidates: Sequence[Tuple[int, int]], network: Link, local: Optional[Link] = None) -> List[Estimate]:
    """Estimates of every candidate layout; a layout slower than one with fewer workers says so in ``note``."""
    results = [estimate(samples, batch_per_worker, compute_s, gradient_bytes, h, w, network, local)
               for h, w in candidates]
    for e in results:
        fewer = [o for o in results if o.workers < e.workers and o.epoch_s < e.epoch_s]
        if fewer:
            best = min(fewer, key=lambda o: o.epoch_s)
            e.note = (f"slower than {best.hosts} host(s) x {best.workers_per_host} worker(s): "
                      f"the network all-reduce ({e.allreduce_s * 1000:.1f} ms per iteration) costs more than "
                      f"the compute it saves")
    return results


def render(results: List[Estimate]) -> str:
    """A table for the CLI and the plan panel."""
    base = next((e.epoch_s for e in results if e.workers == 1), None)
    lines = [f"{'hosts x workers':>15}  {'iter/epoch':>10}  {'compute ms':>10}  {'all-reduce ms':>13}  "
             f"{'epoch s':>8}  {'speed-up':>8}"]
    for e in results:
        speed = f"{base / e.epoch_s:.2f}x" if base and e.epoch_s else "-"
        lines.append(f"{e.hosts:>7} x {e.workers_per_host:<5}  {e.iterations:>10}  {e.compute_s * 1000:>10.1f}  "
                     f"{e.allreduce_s * 1000:>13.1f}  {e.epoch_s:>8.2f}  {speed:>8}" +
                     (f"  ! {e.note}" if e.note else ""))
    return "\n".join(lines)


_BIT_UNITS = {"g": 1e9 / 8, "m": 1e6 / 8, "k": 1e3 / 8, "": 1 / 8}
_BYTE_UNITS = {"g": 1e9, "m": 1e6, "k": 1e3, "": 1}


def parse_rate(text: str) -> float:
    """Bytes per second from a link speed as people write it: '1gbit', '100mbit', '100Mbps', '1Gbit/s' (bits),
    '250MB/s', '250MBps', '250mb' (bytes), or a plain number of bytes/s. 'Mbps' is bits, 'MBps' bytes."""
    t = text.strip()
    if t.endswith("/s"):
        t = t[:-2]
    if t.lower().endswith("bps"):  # b = bits, B = bytes
        bits = t[-3] == "b"
        t = t[:-3]
    elif t.lower().endswith("bit"):
        bits, t = True, t[:-3]
    elif t.lower().endswith("b"):
        bits, t = False, t[:-1]
    else:
        return float(t)
    prefix = t[-1:].lower() if t[-1:].isalpha() else ""
    number = t[: len(t) - len(prefix)]
    units = _BIT_UNITS if bits else _BYTE_UNITS
    if prefix not in units:
        raise ValueError(f"could not convert string to float: {text!r}")
    return float(number) * units[prefix]
