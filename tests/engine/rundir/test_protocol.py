"""The run-directory protocol (nnconsole.engine.rundir.protocol): exit codes, errors as data, one writer per
status field, typed metrics records, the machine-readable run directory announcement, the test seam."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.errors import NnconsoleError, RunFailedError
from nnconsole.engine.launch.watch import diagnose_failure
from nnconsole.engine.rundir.protocol import (LAUNCHER, RUN_DIR_EVENT, STATUS_FIELD_OWNERS, STATUS_FILE, WORKER,
                                              error_file, read_error_records, read_events, record_problems)
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.test_seams import SEAMS_VARIABLE, seam, seam_environment
from tests.support.cli import nnconsole, run_dir_from
from tests.support.paths import ROOT
from tests.support.projects import tabular_project


# ---- one error base class with an exit code ---------------------------------------------------------------
def _engine_error_classes():
    from nnconsole.engine.runtime.checkpoint import CheckpointError, NonFiniteParametersError
    from nnconsole.engine.network.parameter_files import ParameterFileError
    from nnconsole.engine.backend.mpi import CommError
    from nnconsole.engine.data.loading import DatasetError
    from nnconsole.engine.backend.device import DeviceError
    from nnconsole.engine.evaluate.evaluation import EvaluationError
    from nnconsole.engine.interop.report import InteropError
    from nnconsole.engine.launch.launcher import LaunchError
    from nnconsole.engine.plan.record import PlanError
    from nnconsole.engine.project.errors import ProjectError
    from nnconsole.engine.rundir.typed_json import RunFileError
    from nnconsole.engine.rundir.lock import RunBusyError
    from nnconsole.engine.errors import TrainingError

    return {ProjectError: 2, DatasetError: 2, PlanError: 2, LaunchError: 2, RunBusyError: 2, RunFileError: 2,
            InteropError: 2, EvaluationError: 2, ParameterFileError: 2, CheckpointError: 1, CommError: 1,
            DeviceError: 1, TrainingError: 1, NonFiniteParametersError: 1}


def test_every_engine_error_derives_from_the_base_class_with_its_exit_code():
    for cls, code in _engine_error_classes().items():
        assert issubclass(cls, NnconsoleError) and cls.user_error, cls
        assert cls.exit_code == code, cls


def test_the_cli_maps_any_engine_error_to_its_exit_code_without_a_traceback(monkeypatch, capsys):
    from nnconsole.engine.cli import main as cli

    class BrandNewError(RunFailedError):
        """An error type no list in the CLI knows by name."""

    def failing(args):
        raise BrandNewError("the thing failed; do this to fix it")

    monkeypatch.setattr(cli, "cmd_templates", failing)
    assert cli.main(["templates"]) == ExitCode.FAILED == 1
    err = capsys.readouterr().err
    assert "nnconsole templates: the thing failed; do this to fix it" in err and "Traceback" not in err


# ---- errors crossing processes as data ---------------------------------------------------------------------
def _write_error(run_dir: str, rank: int, **fields) -> None:
    os.makedirs(os.path.join(run_dir, "logs"), exist_ok=True)
    record = {"rank": rank, "type": "X", "message": "m", "traceback": "Traceback (most recent call last):\n  boom",
              "time": 1.0, "errno": None}
    record.update(fields)
    with open(error_file(run_dir, rank), "w") as fh:
        json.dump(record, fh)


def test_the_launcher_reads_the_user_error_flag_not_the_exception_name(tmp_path):
    run_dir = str(tmp_path)
    # A type no name list knows, flagged as bad input: plain message, exit code 2.
    _write_error(run_dir, 1, type="ShapeMismatchInData", message="x.csv: column 3 is not a number",
                 user_error=True, exit_code=2)
    rank, message, code = diagnose_failure(run_dir, 1)
    assert (rank, code) == (1, ExitCode.BAD_INPUT)
    assert "x.csv: column 3 is not a number" in message and "Traceback" not in message
    # A famous name without the flag (a crash that happens to be called DatasetError): traceback, exit 1.
    _write_error(run_dir, 1, type="DatasetError", message="internal", user_error=False, exit_code=2)
    rank, message, code = diagnose_failure(run_dir, 1)
    assert code == ExitCode.FAILED and "Traceback" in message


def test_a_hostile_error_record_cannot_turn_a_failure_into_success(tmp_path):
    _write_error(str(tmp_path), 0, user_error=True, exit_code=0)
    _, _, code = diagnose_failure(str(tmp_path), 1)
    assert code == ExitCode.FAILED
    _write_error(str(tmp_path), 0, user_error="yes", exit_code="2", diverged=1)
    [record] = read_error_records(str(tmp_path))
    assert record["user_error"] is False and record["diverged"] is False and record["exit_code"] == 1


def test_a_failing_worker_writes_its_flags_from_the_exception_class(tmp_path):
    from nnconsole.engine.runtime.checkpoint import NonFiniteParametersError
    from nnconsole.engine.data.loading import DatasetError
    from nnconsole.engine.train.worker import _report_failure

    for rank, exc, flags in ((0, DatasetError("bad csv"), (True, 2, False)),
                             (1, RuntimeError("bug"), (False, 1, False)),
                             (2, NonFiniteParametersError("nan"), (True, 1, True))):
        _report_failure(str(tmp_path), rank, exc)
        with open(error_file(str(tmp_path), rank)) as fh:
            record = json.load(fh)
        assert (record["user_error"], record["exit_code"], record["diverged"]) == flags, exc
        assert record["type"] == type(exc).__name__ and record["message"] == str(exc)


# ---- one writer per status.json field ----------------------------------------------------------------------
def test_every_status_field_has_one_owner_and_others_are_refused(tmp_path):
    assert set(STATUS_FIELD_OWNERS) == set(runs.StatusRecord().to_dict())
    runs.write_status(str(tmp_path), runs.StatusRecord())
    runs.update_status(str(tmp_path), WORKER, iteration=5)
    runs.update_status(str(tmp_path), LAUNCHER, status="stopped")
    with pytest.raises(ValueError, match="status"):
        runs.update_status(str(tmp_path), WORKER, status="finished")
    with pytest.raises(ValueError, match="iteration"):
        runs.update_status(str(tmp_path), LAUNCHER, iteration=9)
    status = runs.read_status(str(tmp_path))
    assert (status.status, status.iteration) == ("stopped", 5)


# ---- a real run: events file, typed records, test seam -----------------------------------------------------
@pytest.fixture(scope="module")
def announced_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("announced")
    project = tabular_project(str(folder / "p"), n=32, batch=8, epochs=1)
    events = str(folder / "events.jsonl")
    other = str(tmp_path_factory.mktemp("elsewhere"))  # relative paths from another working folder
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-m", "nnconsole", "train", os.path.relpath(project, other), "-q",
                          "--events", os.path.relpath(events, other)], cwd=other, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return run_dir_from(out.stdout), events


@pytest.mark.slow
def test_the_cli_announces_the_run_directory_as_json(announced_run):
    run_dir, events = announced_run
    found, offset = read_events(events)
    assert [e["event"] for e in found] == [RUN_DIR_EVENT]
    assert found[0]["run_dir"] == run_dir and os.path.isabs(found[0]["run_dir"])
    assert isinstance(found[0]["pid"], int) and offset == os.path.getsize(events)


@pytest.mark.slow
def test_a_replay_announces_its_new_run_directory(announced_run, tmp_path):
    run_dir, _ = announced_run
    events = str(tmp_path / "replay-events.jsonl")
    out = nnconsole(["replay", run_dir, "-q", "--events", events])
    [event], _ = read_events(events)
    assert event["event"] == RUN_DIR_EVENT and event["replay_of"] == run_dir
    assert event["run_dir"] != run_dir and f"into {event['run_dir']}" in out.stdout
    assert os.path.isfile(os.path.join(event["run_dir"], STATUS_FILE))


@pytest.mark.slow
def test_metrics_records_have_the_fields_their_typed_record_declares(announced_run):
    run_dir, _ = announced_run
    records = list(runs.iter_metrics(run_dir))
    assert {"train", "validation"} <= {r["type"] for r in records}
    assert [p for r in records for p in record_problems(r)] == []


def test_a_record_that_breaks_its_declaration_is_named():
    assert record_problems({"type": "warning", "iteration": None, "message": "m"}) == []
    problems = record_problems({"type": "validation", "epoch": 1, "iteration": 2, "loss": "high", "error": 0.5,
                                "count": 3, "best": 1, "elapsed": 1, "colour": "red"})
    assert problems == ["validation: unknown field 'colour'", "validation: field 'loss' is str, declared <class "
                        "'float'>", "validation: field 'best' is int, declared <class 'bool'>"]
    assert record_problems({"type": "train"})[0] == "train: field 'allreduce_share' missing"
    assert record_problems({"type": "epoch"}) == ["unknown record type 'epoch'"]


@pytest.mark.slow
def test_fault_injection_is_a_test_seam_not_a_command_line_option(tmp_path):
    project = tabular_project(str(tmp_path / "p"), n=32, batch=8, epochs=1)
    out = nnconsole(["train", project, "--fail-at-iteration", "1"], check=False)
    assert out.returncode == 2 and "unrecognized arguments: --fail-at-iteration" in out.stderr
    assert seam("fail_at_iteration", {SEAMS_VARIABLE: json.dumps({"fail_at_iteration": 3})}) == 3
    assert seam("fail_at_iteration", {}) is None and seam("fail_rank", {SEAMS_VARIABLE: "not json"}) is None
    with pytest.raises(KeyError):
        seam_environment(fail_at=3)
    out = nnconsole(["train", project, "-q"], check=False, env=seam_environment(fail_at_iteration=1))
    assert out.returncode == 1 and "deliberate failure at iteration 1 (test seam)" in out.stderr
    with open(os.path.join(run_dir_from(out.stdout), "launch.json")) as fh:
        assert "fail" not in fh.read()  # nothing of the seam reaches the run's files


def test_no_exit_code_is_written_as_a_number_outside_the_protocol():
    """Commands, the launcher, the workers and the GUI compare and return ExitCode members, not literals
    (the doctor's smoke-test subprocesses keep POSIX 0/1 among themselves)."""
    import re

    pattern = re.compile(r"EXIT_[A-Z_]+ = \d|(exit_code|returncode|\bcode) [!=]= [1-9]|LaunchResult\([^)]*, [0-9]")
    entries = re.compile(r"return (0|1|2|3|130)$")  # in the modules whose functions return a process's exit code
    entry_modules = ("cli.py", "evaluate_cli.py", "worker.py", "replay.py", "doctor.py", "app.py", "launch.py")
    found = []
    for folder in ("engine", "console_app"):
        for base, _dirs, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                path = os.path.join(base, name)
                if not name.endswith(".py") or name in ("run_protocol.py", "doctor_gpu.py"):
                    continue
                with open(path, encoding="utf-8") as fh:
                    for number, line in enumerate(fh, 1):
                        code = line.split("#")[0].rstrip()
                        if pattern.search(code) or (name in entry_modules and entries.search(code)):
                            found.append(f"{os.path.relpath(path, ROOT)}:{number}: {line.strip()}")
    assert found == []
