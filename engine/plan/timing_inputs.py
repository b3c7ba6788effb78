"""The predictor's inputs for a project, and its verdict per layout (what ``plan --hosts`` and CONFIG show).

The formulas (ring all-reduce, the hierarchical cost across hosts) are :mod:`nnconsole.engine.plan.timing`'s; this
module finds what they need for a project:

- the gradient size: the learned-parameter count of shape inference (``engine.shapes``) x 4 bytes (float32), and
  what the all-reduce sends: 4 bytes a gradient, or 2 with ``multi_gpu.allreduce_precision: half`` (float16,
  after one small all-reduce of the messages' scale: its latency is counted too). On GPU
  (``config.device: cuda``) NCCL sends the gradients' own type: 4 bytes, 2 with ``config.precision: half``,
  whatever ``allreduce_precision`` says (``wire_precision``);
- the compute time of one worker per iteration: ``--compute-ms``, else as the project's runs on this machine
  measured it (``plan.measured_runs``: the newest run of each worker count; a layout takes the run with the
  nearest workers per host, since workers sharing a machine compute slower), scaled to each layout's per-worker
  batch; before any run it is "unknown until one run", never 0;
- the all-reduce among the workers of a host: as the run with the nearest worker count (2 or more) measured it,
  carried to other counts by the ring formula (the within-host link scaled so that the formula gives the measured
  time); modelled over shared memory until such a run exists. Which runs were used is said in the assumptions;
- the iterations per epoch of each N: the N-worker plan (``engine.plan``);
- the links: ``--link BANDWIDTH[,LATENCY]`` (as ``doctor --hosts`` measures them), else the project's
  ``multi_gpu.link`` (the CONFIG tab's "Link between hosts"), else an assumed gigabit Ethernet; which, is said.
No nnabla, no Qt.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.plan.hosts import parse_host
from nnconsole.engine.plan.measured_runs import RunTiming, local_run_timings, nearest
from nnconsole.engine.plan.timing import LOCAL_BANDWIDTH, LOCAL_LATENCY, Estimate, Link, allreduce_seconds, parse_rate
from nnconsole.engine.project.structure import all_networks, MAIN_NETWORK
from nnconsole.engine.network.shapes import infer_network

FLOAT32_BYTES = 4
# Bytes per gradient on the wire, by multi_gpu.allreduce_precision (half: engine/comm/half.py sends float16).
WIRE_BYTES = {"float": FLOAT32_BYTES, "half": 2}
WIRE_TYPES = {"float": "float32", "half": "float16"}
UNKNOWN_UNTIL_RUN = "unknown until one run"  # a time per epoch before any run measured the compute
DEFAULT_NETWORK = "1gbit,100us"  # plain gigabit Ethernet, assumed when nothing was given (and said)
LINK_FORM = "BANDWIDTH[,LATENCY], e.g. 1gbit,100us or 100mbit,2ms or 10GB/s,5us"
LINK_SETTING = "multi_gpu.link"
LINK_FIX = "or leave it empty to assume gigabit Ethernet; 'nnconsole doctor --hosts' measures a real link"
_LATENCY_UNITS = (("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0))
MAX_LAYOUT_WORKERS = 1024
# What a link or a compute time can be: beyond these no network or machine exists, and the arithmetic of the
# prediction would print inf or nan (a bandwidth of 5e-324 bytes/s, a latency of inf). Values outside are refused.
MIN_BANDWIDTH = 1e3  # bytes/s: 8 kbit/s, slower than any link a training would run over
MAX_BANDWIDTH = 1e14  # bytes/s: 800 Tbit/s, far above any interconnect
MAX_LATENCY_S = 60.0  # one message taking a minute is not a network
MAX_COMPUTE_MS = 86_400_000.0  # one iteration taking a day


class PredictionError(NnconsoleError, ValueError):
    """A link, host list or timing the prediction cannot use; the message says what to write instead."""

def parse_link(text: str, latency_ms: Optional[float] = None) -> Link:
    """``--link 1gbit,100us`` (or ``--link 0.94gbit --latency-ms 0.12``, as ``doctor --hosts`` suggests)."""
    bandwidth_text, _, latency_text = str(text).partition(",")
    try:
        bandwidth = parse_rate(bandwidth_text)
    except ValueError:
        raise PredictionError(f"'{text}' is not a link; expected {LINK_FORM}") from None
    if not MIN_BANDWIDTH <= bandwidth <= MAX_BANDWIDTH:  # also nan, inf, 0, negative and 5e-324
        raise PredictionError(f"'{text}' is not a link's bandwidth (a finite rate from {MIN_BANDWIDTH * 8 / 1e3:g} "
                              f"kbit/s to {MAX_BANDWIDTH * 8 / 1e12:g} Tbit/s); expected {LINK_FORM}")
    latency = 0.0
    if latency_text.strip():
        t = latency_text.strip().lower()
        unit = next(((u, f) for u, f in _LATENCY_UNITS if t.endswith(u)), None)
        try:
            latency = float(t[: -len(unit[0])]) * unit[1] if unit else float("nan")
        except ValueError:
            latency = float("nan")
        if not 0 <= latency <= MAX_LATENCY_S:
            raise PredictionError(f"'{latency_text.strip()}' in '{text}' is not a latency (a number with s, ms, us "
                                  f"or ns, from 0 to {MAX_LATENCY_S:g} s); expected {LINK_FORM}")
    if latency_ms is not None:
        latency = checked_latency_ms(latency_ms) / 1e3
    return Link(bandwidth, latency)


def checked_latency_ms(latency_ms: float) -> float:
    """``--latency-ms`` when it is a latency (finite, 0 to MAX_LATENCY_S); PredictionError otherwise."""
    if not 0 <= latency_ms <= MAX_LATENCY_S * 1e3:  # nan and inf fail too
        raise PredictionError(f"--latency-ms must be zero or more, finite and at most {MAX_LATENCY_S * 1e3:,.0f}, "
                              f"got {latency_ms}")
    return latency_ms


def checked_compute_ms(compute_ms: float) -> float:
    """``--compute-ms`` when it is a compute time (finite, above 0, at most a day); PredictionError otherwise."""
    if not 0 < compute_ms <= MAX_COMPUTE_MS:  # nan and inf fail too
        raise PredictionError(f"--compute-ms must be above zero, finite and at most {MAX_COMPUTE_MS:,.0f} (a day), "
                              f"got {compute_ms}")
    return compute_ms


def check_prediction_options(link: Optional[str], latency_ms: Optional[float], compute_ms: Optional[float]) -> None:
    """The command line's link, latency and compute time, refused (PredictionError) before anything is printed."""
    if link is not None:
        parse_link(link, latency_ms)
    elif latency_ms is not None:
        checked_latency_ms(latency_ms)
    if compute_ms is not None:
        checked_compute_ms(compute_ms)


def link_setting_problem(text: str) -> Optional[str]:
    """Why ``multi_gpu.link``'s value cannot be read (None: it can, or it is empty and gigabit Ethernet is assumed).
    One message for ``nnconsole validate``, the GUI's check before Run and the prediction."""
    if not str(text or "").strip():
        return None
    try:
        parse_link(text)
    except PredictionError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class ChosenLink:
    """The link between hosts to predict with, the header's line saying what it is and where it came from, and
    (for the assumed one) an assumption line saying so and where to set a real one."""

    network: Link
    said: str
    hint: str = ""


def chosen_link(project, link: Optional[str] = None, latency_ms: Optional[float] = None) -> ChosenLink:
    """``--link`` (and ``--latency-ms``) first, else the project's ``multi_gpu.link``, else gigabit Ethernet."""
    own = str(getattr(getattr(project, "multi_gpu", None), "link", "") or "").strip()
    if link is not None:
        network = parse_link(link, latency_ms)
        return ChosenLink(network, f"link between hosts: {describe_link(network)} (--link" +
                          (f", instead of {LINK_SETTING} '{own}')" if own else ")"))
    if own:
        try:
            network = parse_link(own, latency_ms)
        except PredictionError as exc:
            raise PredictionError(f"{LINK_SETTING}: {exc} ({LINK_FIX})") from None
        return ChosenLink(network, f"link from the project ({LINK_SETTING}): {describe_link(network)}" +
                          (" (latency from --latency-ms)" if latency_ms is not None else ""))
    network = parse_link(DEFAULT_NETWORK, latency_ms)
    return ChosenLink(network, f"link between hosts: {describe_link(network)}",
                      f"link between hosts assumed ({DEFAULT_NETWORK}): gigabit Ethernet; set the real one in "
                      f"{LINK_SETTING} (CONFIG: Link between hosts) or plan --link, as 'nnconsole doctor --hosts' "
                      "measures it")


def describe_link(link: Link) -> str:
    bits = link.bandwidth * 8
    rate = f"{bits / 1e9:.3g} Gbit/s" if bits >= 1e9 else f"{bits / 1e6:.3g} Mbit/s"
    delay = f"{link.latency * 1e3:.3g} ms" if link.latency >= 1e-3 else f"{link.latency * 1e6:.3g} us"
    return f"{rate}, {delay}"


def host_slots(entry: str, default: int = 1) -> int:
    """The slot count of a ``host``, ``host:slots`` or ``[v6]:slots`` entry (read by ``plan.hosts.parse_host``;
    a bad entry raises its HostsError, a ValueError)."""
    slots = parse_host(entry).slots
    return default if slots is None else slots


def layouts_for(hosts: Sequence[str], worker_counts: Sequence[int] = ()) -> List[Tuple[int, int]]:
    """(hosts, workers per host) to compare: 1 worker, then 1..H hosts with 1..S workers each (S: the fewest
    slots of any host, so the ring is balanced); without hosts, ``worker_counts`` on one host.
    Hosts ``a:2,b:2`` give the seeds' example: 1 x 1, 1 x 2, 2 x 1, 2 x 2."""
    per_host = min(host_slots(h) for h in hosts) if hosts else 0
    largest = max([len(hosts) * per_host, *worker_counts, 1])  # counted before any layout is built
    if largest > MAX_LAYOUT_WORKERS:
        shape = f"{len(hosts)} hosts x {per_host} workers" if largest == len(hosts) * per_host else f"{largest} workers"
        raise PredictionError(f"{shape} = {largest:,} workers: the prediction compares layouts of at most "
                              f"{MAX_LAYOUT_WORKERS:,} workers; list fewer hosts or slots to compare")
    found = {(1, 1)} | {(1, n) for n in worker_counts}
    found |= {(h, w) for h in range(1, len(hosts) + 1) for w in range(1, per_host + 1)}
    return sorted(found, key=lambda hw: (hw[0] * hw[1], hw[0]))


def layout_label(e: Estimate) -> str:
    return f"{e.hosts} host{'s' if e.hosts > 1 else ''} x {e.workers_per_host}"


def gradient_bytes(project) -> int:
    """Bytes all-reduced per iteration: every learned parameter of the training network as float32."""

    return infer_network(project.network, all_networks(project), MAIN_NETWORK).total_params * FLOAT32_BYTES


def measured_assumptions(timings: Sequence[RunTiming]) -> List[str]:
    """The assumption lines that say which runs the prediction used (or that none measured anything yet)."""
    if not timings:
        return [f"compute time {UNKNOWN_UNTIL_RUN} of this project on this machine: only the all-reduce is "
                "counted; train once (or give --compute-ms)"]
    lines = ["measured on this machine: " + "; ".join(t.describe() for t in timings)]
    if not any(t.workers > 1 for t in timings):
        lines.append("all-reduce among the workers of a host: modelled until a run with 2 or more workers "
                     "measures it")
    return lines


def verdict(e: Estimate, estimates: Sequence[Estimate], compute_known: bool = True) -> str:
    """'slower than <layout>' when a layout with no more hosts and no more workers has a shorter epoch;
    else the speed-up over one worker."""
    if e.workers == 1 and e.hosts == 1:
        return "baseline"
    if not compute_known:
        return "compute time unknown"
    smaller = [o for o in estimates if o is not e and o.hosts <= e.hosts and o.workers <= e.workers]
    best = min(smaller, key=lambda o: o.epoch_s, default=None)
    if best is not None and best.epoch_s < e.epoch_s:
        return f"slower than {layout_label(best)} ({e.epoch_s / best.epoch_s:.2f}x the time)"
    base = next((o for o in estimates if o.workers == 1), None)
    return f"{base.epoch_s / e.epoch_s:.2f}x faster than 1 worker" if base and e.epoch_s else "-"


@dataclass
class ProjectPrediction:
    """Each layout's estimate (``note``: its verdict) and the assumptions they rest on (shown with them)."""

    estimates: List[Estimate]
    gradient_bytes: int
    network: Link
    local: Link
    assumptions: List[str]
    link_said: str = ""  # which link between hosts, and where it came from (ChosenLink.said)
    precision: str = "float"  # multi_gpu.allreduce_precision: what the all-reduce sends
    wire_bytes: int = 0  # what it sends per iteration (gradient_bytes, or half of it as float16)

    def header(self) -> str:
        link = self.link_said or f"link between hosts: {describe_link(self.network)}"
        sent = WIRE_TYPES.get(self.precision, "float32")
        size = f"gradients: {self.gradient_bytes / 1e6:.3g} MB per iteration, sent as {sent}"
        if self.wire_bytes != self.gradient_bytes:
            size += (f": {self.wire_bytes / 1e6:.3g} MB (multi_gpu.allreduce_precision: {self.precision}), after "
                     "a small all-reduce of their scale")
        return "\n".join([size, f"{link}; within a host: {describe_link(self.local)}", *self.assumptions])

    def table(self) -> str:
        rows = [("layout", "iter/epoch", "compute ms", "all-reduce ms", "comm %", "s / epoch", "verdict")]
        for e in self.estimates:
            known = e.compute_known
            rows.append((layout_label(e), str(e.iterations), f"{e.compute_s * 1e3:.3g}" if known else "?",
                         f"{e.allreduce_s * 1e3:.3g}", f"{e.allreduce_share * 100:.0f}" if known else "?",
                         f"{e.epoch_s:.3g}" if known else "?", e.note))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


GPU_WIRE_DEVICES = ("cuda", "gpu", "cudnn")  # devices whose all-reduce is nnabla's NCCL one


def wire_precision(project, device: Optional[str] = None) -> str:
    """What one gradient travels as ('float' | 'half'): on GPU the compute precision (nnabla's NCCL all-reduce
    keeps the gradients' type), elsewhere ``multi_gpu.allreduce_precision`` (the CPU all-reduce's messages)."""
    device = str(device or project.config.device).lower()
    if device in GPU_WIRE_DEVICES:
        return "half" if project.config.precision == "half" else "float"
    return project.multi_gpu.allreduce_precision


def predict_project(project, layouts: Sequence[Tuple[int, int]], plan_for_workers: Callable,
                    link: Optional[str] = None, latency_ms: Optional[float] = None,
                    compute_ms: Optional[float] = None) -> ProjectPrediction:
    """Predict each (hosts, workers per host) layout; ``plan_for_workers(N)`` gives the N-worker plan.

    ``compute_ms``: one worker's compute per iteration at the project's own batch on one worker.
    """
    chosen = chosen_link(project, link, latency_ms)
    network = chosen.network
    assumptions = [chosen.hint] if chosen.hint else []
    local = Link(LOCAL_BANDWIDTH, LOCAL_LATENCY)
    plans = {n: plan_for_workers(n) for n in sorted({h * w for h, w in layouts})}
    unknown = [n for n, p in plans.items() if p.iterations_per_epoch is None]
    if unknown:
        raise PredictionError("the training set's size is unknown (datasets.training is not set or unreadable): "
                              "the time per epoch needs it")
    nbytes = gradient_bytes(project)
    precision = wire_precision(project)
    sent = nbytes // FLOAT32_BYTES * WIRE_BYTES.get(precision, FLOAT32_BYTES)  # only the all-reduce changes
    on_gpu = str(project.config.device).lower() in GPU_WIRE_DEVICES  # NCCL: no comm_half, the compute type

    def modelled(hosts: int, per_host: int, within: Link) -> float:
        comm = allreduce_seconds(sent, hosts, per_host, network, within)
        if precision == "half" and not on_gpu:  # comm_half first all-reduces each message's largest |gradient|
            comm += allreduce_seconds(0, hosts, per_host, network, within)
        return comm

    timings: List[RunTiming] = []
    if compute_ms is not None:
        checked_compute_ms(compute_ms)
        assumptions.append(f"compute: {compute_ms:g} ms per iteration at batch {plans[1].per_worker_batch} (given)")
    else:
        timings = local_run_timings(getattr(project, "path", None), getattr(plans[1], "device", ""))
        assumptions.extend(measured_assumptions(timings))
    estimates = []
    for hosts, per_host in layouts:
        plan = plans[hosts * per_host]
        basis = []
        if compute_ms is not None:
            compute = compute_ms / 1e3 / plans[1].per_worker_batch * plan.per_worker_batch
        else:
            by = nearest(timings, per_host)  # compute slows as workers share a machine: the nearest count's
            compute = by.seconds_per_sample * plan.per_worker_batch if by else 0.0
            basis.append(f"compute as in run {by.name} ({by.workers} on this machine)" if by else "compute unknown")
        comm = modelled(hosts, per_host, local)
        measured = nearest([t for t in timings if t.workers > 1], per_host) if per_host > 1 else None
        if measured is not None:  # this machine's all-reduce among workers, scaled to per_host by the ring model
            scale = measured.allreduce_s / max(modelled(1, measured.workers, local), 1e-12)
            within = Link(local.bandwidth / scale, local.latency * scale) if scale > 0 else local
            comm = modelled(hosts, per_host, within)
            basis.append(f"all-reduce among {per_host} as measured in run {measured.name} ({measured.workers} "
                         "workers)" + (" plus the link between hosts" if hosts > 1 else ""))
        iterations = plan.iterations_per_epoch
        estimates.append(Estimate(hosts, per_host, iterations, compute, comm, iterations * (compute + comm),
                                  compute_known=compute_ms is not None or bool(timings), basis="; ".join(basis)))
    for e in estimates:
        e.note = verdict(e, estimates, e.compute_known)
    if on_gpu and precision != project.multi_gpu.allreduce_precision:
        assumptions.append(f"on GPU the gradients travel in their compute type ({WIRE_TYPES[precision]}), not as "
                           f"multi_gpu.allreduce_precision {project.multi_gpu.allreduce_precision} says")
    return ProjectPrediction(estimates, nbytes, network, local, assumptions, chosen.said, precision, sent)


def prediction_report(project, hosts: Sequence[str], worker_counts: Sequence[int], plan_for_workers: Callable,
                      link: Optional[str] = None, latency_ms: Optional[float] = None,
                      compute_ms: Optional[float] = None) -> str:
    """What ``nnconsole plan --hosts ...`` prints: the assumptions, then one row per layout."""
    result = predict_project(project, layouts_for(hosts, worker_counts), plan_for_workers, link, latency_ms,
                             compute_ms)
    return f"Predicted time per epoch (ring all-reduce)\n{result.header()}\n\n{result.table()}"
