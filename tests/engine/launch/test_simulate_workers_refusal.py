"""Issue 30: the launcher decides a run's simulated workers by the rule CONFIG's plan panel shows
(``plan.worker_plan.simulation_problem`` / ``simulated_count``): refused with the same message, counted alike."""
from __future__ import annotations

import pytest

from nnconsole.engine.launch.launcher import LaunchError, LaunchRequest, simulated_workers
from nnconsole.engine.project.model import Project


def test_the_launcher_refuses_and_counts_by_the_same_rule():
    project = Project()
    project.multi_gpu.simulate_workers = 6
    with pytest.raises(LaunchError, match="multi_gpu.simulate_workers 6 on 4 workers"):
        simulated_workers(LaunchRequest(), project, 4)
    with pytest.raises(LaunchError, match="--simulate-workers 3 on 2 workers"):
        simulated_workers(LaunchRequest(simulate_workers=3, workers=2), project, 2)
    assert simulated_workers(LaunchRequest(), project, 2) == 6
    assert simulated_workers(LaunchRequest(workers=2), project, 2) == 0  # --gpus alone: real workers only
