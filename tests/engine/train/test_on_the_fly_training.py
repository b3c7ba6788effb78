"""Training on images decoded on the fly by the decode processes (issue 31): the parameters of a cached run,
and a killed training process takes its decode processes along."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.project.io import save_project
from tests.support.cli import start_paused_training, wait_for_pause
from tests.support.datasets import cache_entries
from tests.support.image_projects import cycled_image_project
from tests.support.training import final_params, results_of, train_in_process
from tests.support.processes import decode_processes, live_processes, wait_until_exited


def _on_the_fly(folder: Path) -> bool:
    (entry,) = [e for e in cache_entries(folder / ".nnconsole-cache")
                if json.loads((e / "meta.json").read_text())["size"] == 96]  # the training set's entry
    return bool(json.loads((entry / "meta.json").read_text())["index"]["on_the_fly"])


@pytest.mark.slow
def test_a_run_decoding_on_the_fly_ends_with_a_cached_runs_parameters(tmp_path):
    results = {}
    for name, budget in (("cached", 0.0), ("on_the_fly", 1e-9)):
        project = load_valid_project(cycled_image_project(str(tmp_path / name), rows=96, files=40, batch=16))
        project.datasets.cache_budget = budget
        run_dir, losses = train_in_process(project, str(tmp_path / name / "results"))
        results[name] = (losses, final_params(run_dir))
        assert _on_the_fly(tmp_path / name) == (budget > 0)
    assert results["cached"][0] == results["on_the_fly"][0]
    for k, v in results["cached"][1].items():
        assert v.tobytes() == results["on_the_fly"][1][k].tobytes(), k


@pytest.mark.slow
def test_a_killed_training_process_leaves_no_decode_process_behind(tmp_path):
    path = cycled_image_project(str(tmp_path / "p"), rows=96, files=40, batch=16)
    project = load_valid_project(path)
    project.datasets.cache_budget = 1e-9
    project.config.log_interval = 2
    save_project(project, path, backup=False)
    shm_before = set(os.listdir("/dev/shm"))
    proc = start_paused_training(path, pause_at=4)
    try:
        run_dir = wait_for_pause(proc, results_of(path), pause_at=4)
        [worker] = [pid for pid, args in live_processes(run_dir) if "nnconsole.engine.train.worker" in args]
        decoders = decode_processes(worker)
        assert decoders, "the worker decodes in decode processes"
        os.kill(worker, signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    wait_until_exited(decoders, 10, "decode processes outlived the killed training process")
    left = [n for n in set(os.listdir("/dev/shm")) - shm_before if not n.startswith("nnconsole-")]
    assert not left


@pytest.mark.mpi
def test_two_ranks_on_one_host_decode_on_the_fly_with_their_share_of_the_cores(tmp_path):
    from tests.support.cli import nnconsole, run_dir_from

    params = {}
    for name, budget in (("cached", 0.0), ("on_the_fly", 1e-9)):
        path = cycled_image_project(str(tmp_path / name), rows=96, files=40, batch=8, workers=2)
        project = load_valid_project(path)
        project.datasets.cache_budget = budget
        save_project(project, path, backup=False)
        params[name] = final_params(run_dir_from(nnconsole(["train", path, "-q"]).stdout))
        assert _on_the_fly(tmp_path / name) == (budget > 0)
    for k, v in params["cached"].items():
        assert v.tobytes() == params["on_the_fly"][k].tobytes(), k

    paused = str(tmp_path / "paused")
    proc = start_paused_training(path, "-o", paused, pause_at=4)  # the on-the-fly project again, paused mid-epoch
    try:
        run_dir = wait_for_pause(proc, paused, pause_at=4)
        ranks = [pid for pid, args in live_processes(run_dir) if "nnconsole.engine.train.worker" in args
                 and "mpiexec" not in args and "prterun" not in args]
        decoders = {r: decode_processes(r) for r in ranks}
        assert len(ranks) == 2 and all(len(d) == max(1, (os.cpu_count() or 1) // 2) for d in decoders.values())
        for rank in ranks:
            os.kill(rank, signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    wait_until_exited([d for found in decoders.values() for d in found], 10,
                      "decode processes outlived their killed ranks")
