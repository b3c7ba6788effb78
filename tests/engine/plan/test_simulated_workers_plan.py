"""Issue 30: the rule that decides whether and how N workers are simulated on M devices (shared by the launcher
and CONFIG's plan panel), and the predicted time per epoch of such a simulation."""
from __future__ import annotations

import pytest

from nnconsole.engine.plan.timing import Estimate, simulated_estimate
from nnconsole.engine.plan.worker_plan import simulated_count, simulation_problem


@pytest.mark.parametrize("asked, processes, expected", [(0, 1, 0), (1, 1, 0), (8, 1, 8), (8, 2, 8), (4, 4, 0),
                                                         (2, 4, 0), (0, 3, 0)])
def test_simulated_count_is_n_only_above_the_real_workers(asked, processes, expected):
    assert simulated_count(asked, processes) == expected


def test_simulation_problem_names_the_setting_and_two_multiples():
    assert simulation_problem(8, 2) is None and simulation_problem(1, 4) is None and simulation_problem(0, 4) is None
    message = simulation_problem(6, 4)
    assert message == ("multi_gpu.simulate_workers 6 on 4 workers: each worker simulates the same number of "
                       "workers, so it must be a multiple of 4 (e.g. 4 or 8), or use --gpus 1")
    assert simulation_problem(10, 4, "--simulate-workers").startswith("--simulate-workers 10 on 4 workers")
    assert "(e.g. 8 or 12)" in simulation_problem(10, 4)


def test_simulated_epoch_counts_each_device_s_micro_batches_in_turn_and_its_all_reduce():
    on_two = Estimate(hosts=1, workers_per_host=2, iterations=23, compute_s=0.010, allreduce_s=0.002,
                      epoch_s=23 * 0.012, basis="compute as in run r1")
    sim = simulated_estimate(on_two, workers=8, iterations=6)
    assert sim.compute_s == pytest.approx(4 * 0.010)  # 8 workers on 2 devices: 4 micro-batches each
    assert sim.allreduce_s == pytest.approx(0.002)
    assert sim.epoch_s == pytest.approx(6 * (0.040 + 0.002))
    assert (sim.hosts, sim.workers_per_host, sim.iterations, sim.basis) == (1, 2, 6, "compute as in run r1")
    half = simulated_estimate(on_two, workers=8, iterations=6, batch_ratio=0.5)  # keep-logical-batch: B / 4
    assert half.compute_s == pytest.approx(0.020)
    unknown = simulated_estimate(Estimate(1, 1, 45, 0.0, 0.0, 0.0, compute_known=False), 4, 12)
    assert not unknown.compute_known and unknown.epoch_s == 0.0
