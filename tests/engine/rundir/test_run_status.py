"""status.json's ``status`` as ``RunStatus``: the same words in the file, members in memory, and a word this version
does not know (a newer writer's) read as UNKNOWN instead of failing."""
from __future__ import annotations

import json
import os

import pytest

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RESUMABLE_STATUSES, STATUS_FILE, RunStatus
from nnconsole.engine.rundir.typed_json import RunFileError


def _write_raw(run_dir: str, **fields) -> None:
    with open(os.path.join(run_dir, STATUS_FILE), "w") as fh:
        json.dump(dict(runs.StatusRecord().to_dict(), **fields), fh)


def test_the_file_holds_the_words_and_reads_back_as_members(tmp_path):
    for status in (RunStatus.RUNNING, RunStatus.FINISHED, RunStatus.STOPPED, RunStatus.FAILED):
        runs.write_status(str(tmp_path), runs.StatusRecord(status=status, pid=1))
        with open(tmp_path / STATUS_FILE) as fh:
            assert json.load(fh)["status"] == status.value  # a plain JSON string, as before the enum
        read = runs.read_status(str(tmp_path))
        assert read.status is status and read.status == status.value and f"{read.status}" == status.value


def test_a_word_given_as_a_string_becomes_a_member(tmp_path):
    assert runs.StatusRecord(status="stopped").status is RunStatus.STOPPED
    runs.write_status(str(tmp_path), runs.StatusRecord())
    runs.update_status(str(tmp_path), "launcher", status="finished")  # a caller that passes the word
    assert runs.read_status(str(tmp_path)).status is RunStatus.FINISHED


def test_an_unknown_word_reads_as_unknown_neither_running_nor_resumable(tmp_path):
    _write_raw(str(tmp_path), status="paused-by-a-newer-nnconsole", pid=os.getpid())
    status = runs.read_status(str(tmp_path), strict=True)
    assert status.status is RunStatus.UNKNOWN
    assert status.status != RunStatus.RUNNING and status.status not in RESUMABLE_STATUSES
    assert runs.effective_status(str(tmp_path)).status is RunStatus.UNKNOWN  # not turned into FAILED either


def test_a_status_that_is_not_a_word_names_the_file_and_the_field(tmp_path):
    _write_raw(str(tmp_path), status=3)
    with pytest.raises(RunFileError, match=r"status\.json: field 'status' should be one of running, finished, "
                                           r"stopped, failed, unknown, got 3"):
        runs.read_status(str(tmp_path), strict=True)
    assert runs.read_status(str(tmp_path)) is None  # not strict: damaged reads as no status


def test_a_running_run_whose_process_is_gone_reads_as_failed(tmp_path):
    runs.write_status(str(tmp_path), runs.StatusRecord(status=RunStatus.RUNNING, pid=2 ** 22 + 12345))
    status = runs.effective_status(str(tmp_path))
    assert status.status is RunStatus.FAILED and "ended without finishing" in status.message
    assert runs.read_status(str(tmp_path)).status is RunStatus.RUNNING  # the file is left as it is


def test_statuses_compare_and_hash_as_their_words():
    assert RunStatus("failed") is RunStatus.FAILED and RunStatus("what") is RunStatus.UNKNOWN
    assert {RunStatus.FINISHED: 0}.get("finished") == 0 and "stopped" in RESUMABLE_STATUSES
    with pytest.raises(ValueError):
        RunStatus(3)
