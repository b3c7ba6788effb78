"""``nnconsole train --allreduce-precision {float,half} --allreduce-overlap/--no-allreduce-overlap`` (issue 20).

They override the project's ``multi_gpu.allreduce_precision`` / ``allreduce_overlap`` for one run: the run's own
project.yaml (what the workers load, what replay and resume use) records the value used, the user's file and the
run's snapshot of it keep theirs; a resumed run can change them, and the workers really use them."""
from __future__ import annotations

import os

import pytest

from nnconsole.engine.cli.main import build_parser
from nnconsole.engine.launch.launcher import LaunchRequest
from nnconsole.engine.project.io import load_project, save_project
from nnconsole.engine.launch.overrides import OverrideError, apply_overrides
from nnconsole.engine.rundir.protocol import RESOLVED_FILE, SNAPSHOT_FILE
from tests.support.cli import nnconsole, run_dir_from
from tests.support.projects import tabular_project
from tests.support.training import final_params, max_relative_error
from nnconsole.engine.check.project_file import load_valid_project


def _comm(path: str):
    m = load_project(path).multi_gpu
    return m.allreduce_precision, m.allreduce_overlap


def test_the_options_parse_and_refuse_what_is_not_a_precision(capsys):
    parser = build_parser()
    args = parser.parse_args(["train", "p.yaml", "--allreduce-precision", "half", "--no-allreduce-overlap"])
    assert (args.allreduce_precision, args.allreduce_overlap) == ("half", False)
    args = parser.parse_args(["train", "p.yaml", "--allreduce-overlap"])
    assert (args.allreduce_precision, args.allreduce_overlap) == (None, True)
    args = parser.parse_args(["train", "p.yaml"])
    assert (args.allreduce_precision, args.allreduce_overlap) == (None, None)  # the project's own values
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["train", "p.yaml", "--allreduce-precision", "double"])
    assert exit_.value.code == 2 and "invalid choice: 'double'" in capsys.readouterr().err


def test_overrides_replace_only_what_was_given(tmp_path):
    project = load_project(tabular_project(str(tmp_path / "p")))
    project.multi_gpu.allreduce_precision, project.multi_gpu.allreduce_overlap = "half", True
    assert not apply_overrides(project, LaunchRequest().__dict__)
    assert (project.multi_gpu.allreduce_precision, project.multi_gpu.allreduce_overlap) == ("half", True)
    assert apply_overrides(project, LaunchRequest(allreduce_overlap=False).__dict__)
    assert (project.multi_gpu.allreduce_precision, project.multi_gpu.allreduce_overlap) == ("half", False)
    assert apply_overrides(project, LaunchRequest(allreduce_precision="float").__dict__)
    assert project.multi_gpu.allreduce_precision == "float"
    with pytest.raises(OverrideError, match="allreduce_precision.*'quarter'.*float, half"):
        apply_overrides(project, {"allreduce_precision": "quarter"})


def test_the_run_records_the_values_used_and_the_users_file_keeps_its_own(tmp_path):
    path = tabular_project(str(tmp_path / "p"), n=32, batch=8, epochs=1)
    with open(path, "rb") as f:
        original = f.read()
    out = nnconsole(["train", path, "-q", "--allreduce-precision", "half", "--no-allreduce-overlap"])
    run = run_dir_from(out.stdout)
    assert _comm(os.path.join(run, RESOLVED_FILE)) == ("half", False)  # what the workers loaded
    assert _comm(os.path.join(run, SNAPSHOT_FILE)) == ("float", True)  # the project as the user wrote it
    with open(path, "rb") as f:
        assert f.read() == original
    assert "this run: multi_gpu.allreduce_precision half, multi_gpu.allreduce_overlap off" in out.stdout


@pytest.mark.slow  # four trainings
def test_replay_keeps_the_values_used_and_a_resume_may_change_them(tmp_path):
    path = tabular_project(str(tmp_path / "p"), n=32, batch=8, epochs=1)
    run = run_dir_from(nnconsole(["train", path, "-q", "--allreduce-precision", "half",
                                  "--no-allreduce-overlap"]).stdout)
    replayed = nnconsole(["replay", run, "-q"])  # trains again with the values the run used
    copy = next(line.split(" into ", 1)[1].strip() for line in replayed.stdout.splitlines() if " into " in line)
    assert _comm(os.path.join(copy, RESOLVED_FILE)) == ("half", False) and "metrics reproduced" in replayed.stdout

    # resumed with the other values: the run's project records them from then on
    resumed = nnconsole(["train", "--resume", run, "--epochs", "2", "-q", "--allreduce-precision", "float"])
    assert run_dir_from(resumed.stdout) == run
    assert _comm(os.path.join(run, RESOLVED_FILE)) == ("float", False)
    again = nnconsole(["train", "--resume", run, "--epochs", "3", "-q"])  # nothing given: as recorded
    assert run_dir_from(again.stdout) == run and _comm(os.path.join(run, RESOLVED_FILE)) == ("float", False)


@pytest.mark.mpi
@pytest.mark.slow
def test_two_workers_use_the_values_given_on_the_command_line(tmp_path):
    """The project says float, overlap off; ``--allreduce-precision half --allreduce-overlap`` on 2 workers (the
    test seam lets one host overlap) reaches the workers' communicator and ends within 1e-3 of the float run but
    not bit-equal to it (the float16 path ran), as a project saying half does (tests/engine/comm/test_half.py)."""
    from nnconsole.engine.test_seams import seam_environment

    path = tabular_project(str(tmp_path / "p"), n=64, batch=8, epochs=4, lr=0.2, scaling="none", workers=2)
    project = load_valid_project(path, check_datasets=False)
    project.multi_gpu.allreduce_overlap = False
    assert project.multi_gpu.allreduce_precision == "float"
    save_project(project, path, backup=False)
    env = seam_environment(overlap_on_one_host=True)
    runs = {}
    for name, extra in (("project", []), ("given", ["--allreduce-precision", "half", "--allreduce-overlap"])):
        run = run_dir_from(nnconsole(["train", path, "-q", *extra], env=env).stdout)
        with open(os.path.join(run, "logs", "rank0.log"), encoding="utf-8") as f:
            communicator = next(line for line in f if "communicator" in line)
        runs[name] = (communicator, final_params(run))
    assert "float16 messages" not in runs["project"][0] and "overlapped" not in runs["project"][0]
    assert "float16 messages, overlapped with backward" in runs["given"][0]
    assert 0 < max_relative_error(runs["project"][1], runs["given"][1]) <= 1e-3
