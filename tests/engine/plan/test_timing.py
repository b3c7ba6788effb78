"""The epoch-time predictor (engine/plan/timing.py): ring all-reduce cost and 'more machines are slower'."""
from __future__ import annotations

import pytest

from nnconsole.engine.plan.timing import (Link, allreduce_seconds, compare, estimate, parse_rate, render,
                                          ring_allreduce_seconds)


def test_ring_cost_is_two_n_minus_one_over_n_of_the_size_plus_latency_steps():
    link = Link(bandwidth=1e8, latency=0.001)
    assert ring_allreduce_seconds(1e8, 1, link) == 0.0
    assert ring_allreduce_seconds(1e8, 2, link) == pytest.approx(1.0 + 2 * 0.001)
    assert ring_allreduce_seconds(1e8, 4, link) == pytest.approx(1.5 + 6 * 0.001)
    # within one host only the local link counts; across hosts the network ring is added
    assert allreduce_seconds(1e8, 1, 2, Link(1e6), local=Link(1e9)) == pytest.approx(0.1)
    assert allreduce_seconds(1e8, 2, 1, Link(1e8), local=Link(1e9)) == pytest.approx(1.0)


def test_two_machines_on_a_slow_network_are_slower_than_one_machine():
    # The seeds' example: 2 machines x 2 GPUs against 1 machine x 2 GPUs, 100 MB of gradients.
    kwargs = dict(samples=60000, batch_per_worker=64, compute_s=0.05, gradient_bytes=100e6,
                  candidates=[(1, 1), (1, 2), (2, 2)])
    slow = {(e.hosts, e.workers_per_host): e for e in compare(network=Link(parse_rate("1gbit"), 1e-4), **kwargs)}
    assert slow[(2, 2)].epoch_s > slow[(1, 2)].epoch_s
    assert "slower than 1 host(s) x 2 worker(s)" in slow[(2, 2)].note and not slow[(1, 2)].note
    fast = {(e.hosts, e.workers_per_host): e for e in compare(network=Link(parse_rate("100gbit"), 5e-6), **kwargs)}
    assert fast[(2, 2)].epoch_s < fast[(1, 2)].epoch_s and not fast[(2, 2)].note
    assert "slower than" in render(list(slow.values())) and "speed-up" in render(list(fast.values()))


def test_iterations_follow_the_logical_batch():
    e = estimate(samples=1000, batch_per_worker=10, compute_s=0.01, gradient_bytes=0, hosts=2,
                 workers_per_host=2, network=Link(1e9))
    assert e.iterations == 25 and e.epoch_s == pytest.approx(0.25, rel=0.01) and e.allreduce_share < 0.01


def test_rates():
    assert parse_rate("1gbit") == 125e6 and parse_rate("100mbit") == 12.5e6 and parse_rate("250MB/s") == 250e6
    # as link speeds are usually written: Mbps/Gbit/s are bits, MBps bytes (was: '100Mbps' refused)
    assert parse_rate("100Mbps") == parse_rate("100Mbit/s") == 12.5e6 and parse_rate("10Gbps") == 1.25e9
    assert parse_rate("250MBps") == 250e6 and parse_rate("1e6") == 1e6 and parse_rate("800kbit") == 1e5
    with pytest.raises(ValueError):
        parse_rate("fast")
