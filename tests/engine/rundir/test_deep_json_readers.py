"""Issue 25 item 16: a JSON text nested 100,000 deep in a run file (a metrics.jsonl line, note.json, status.json,
plan.json, an events line, a rank's error record, an evaluation's metrics.json) is damaged text to every reader:
skipped or refused by name, never a RecursionError traceback in plan, replay, resume or the GUI. Every reader
parses through ``rundir.safe_json.loads``, which counts the nesting before parsing."""
from __future__ import annotations

import json
import os

import pytest

from nnconsole.engine.rundir import safe_json
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.notes import read_note
from nnconsole.engine.rundir.protocol import (LOGS_DIR, METRICS_FILE, NOTE_FILE, PLAN_FILE, STATUS_FILE,
                                              read_error_records, read_events)
from nnconsole.engine.rundir.typed_json import RunFileError

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 50_000 + "1" + "}" * 50_000


@pytest.mark.parametrize("text", [DEEP, DEEP.encode(), DEEP_OBJECT, '{"title": ' + DEEP + "}", "[" * 65 + "]" * 65])
def test_deep_json_is_a_value_error(text):
    with pytest.raises(ValueError):
        safe_json.loads(text)


def test_shallow_json_with_many_brackets_still_reads():
    wide = {"values": [[i, i] for i in range(10_000)], "text": "[[[[{{{{" * 100}
    assert safe_json.loads(json.dumps(wide)) == wide
    assert safe_json.loads(json.dumps(wide).encode()) == wide
    assert safe_json.loads("[" * 64 + "]" * 64) == json.loads("[" * 64 + "]" * 64)  # the bound itself reads
    big = {"v": [[0.5] * 8 for _ in range(50_000)]}  # 50,001 brackets: the depth scan runs, and reads it whole
    assert safe_json.loads(json.dumps(big)) == big


def _run_dir(tmp_path) -> str:
    run = str(tmp_path / "run")
    os.makedirs(os.path.join(run, LOGS_DIR))
    runs.write_status(run, runs.StatusRecord())
    return run


def test_a_deep_metrics_line_is_skipped_like_a_torn_one(tmp_path):
    run = _run_dir(tmp_path)
    good = {"type": "train", "iteration": 1, "epoch": 0, "loss": 1.0}
    with open(os.path.join(run, METRICS_FILE), "w") as fh:
        fh.write(json.dumps(good) + "\n" + DEEP + "\n" + json.dumps(dict(good, iteration=2)) + "\n")
    records, _ = runs.read_metrics(run)
    assert [r["iteration"] for r in records] == [1, 2]
    assert [r["iteration"] for r in runs.iter_metrics(run)] == [1, 2]


def test_a_deep_note_reads_as_no_note(tmp_path):
    run = _run_dir(tmp_path)
    with open(os.path.join(run, NOTE_FILE), "w") as fh:
        fh.write('{"title": ' + DEEP + "}")
    assert read_note(run).title == "" and read_note(run).note == ""


@pytest.mark.parametrize("name", [STATUS_FILE, PLAN_FILE])
def test_a_deep_typed_file_is_refused_by_name(tmp_path, name):
    run = _run_dir(tmp_path)
    with open(os.path.join(run, name), "w") as fh:
        fh.write(DEEP)
    with pytest.raises(RunFileError, match=name):
        runs.read_status(run, strict=True) if name == STATUS_FILE else runs.read_plan(run)


def test_deep_events_and_error_records_are_skipped(tmp_path):
    run = _run_dir(tmp_path)
    events = tmp_path / "events.jsonl"
    events.write_text(DEEP + "\n" + json.dumps({"event": "run_dir", "run_dir": run}) + "\n")
    found, _ = read_events(str(events))
    assert [e["event"] for e in found] == ["run_dir"]
    with open(os.path.join(run, LOGS_DIR, "rank0.error.json"), "w") as fh:
        fh.write(DEEP)
    assert read_error_records(run) == []


def test_a_deep_evaluation_is_refused_as_damaged(tmp_path):
    from nnconsole.engine.metrics.results import EVALUATION_METRICS_FILE, SAMPLES_FILE, read_evaluation
    (tmp_path / EVALUATION_METRICS_FILE).write_text(DEEP)
    (tmp_path / SAMPLES_FILE).write_text("index\n")
    with pytest.raises(ValueError):
        read_evaluation(str(tmp_path))


@pytest.mark.slow
def test_plan_replay_and_resume_read_past_a_deep_line(tmp_path):
    from tests.support.cli import nnconsole, run_dir_from
    from tests.support.projects import tabular_project
    path = tabular_project(str(tmp_path / "p"), epochs=2)
    run = run_dir_from(nnconsole(["train", path]).stdout)
    with open(os.path.join(run, METRICS_FILE), "a") as fh:
        fh.write(DEEP + "\n")
    with open(os.path.join(run, NOTE_FILE), "w") as fh:
        fh.write('{"title": ' + DEEP + "}")
    for args in (["plan", path, "--hosts", "a:2"], ["replay", run], ["train", "--resume", run, "--epochs", "3"]):
        out = nnconsole(args, check=False)
        assert "Traceback" not in out.stderr and "RecursionError" not in out.stderr, (args, out.stderr[-2000:])
        assert out.returncode == 0, (args, out.stdout[-1000:], out.stderr[-1000:])


def test_a_deep_settings_line_in_an_imported_nntxt_is_ignored():
    """An exported .nntxt keeps nnconsole's settings as JSON in its first comment line; someone else's file may
    nest it 100,000 deep: the settings are then absent, not a RecursionError in the import."""
    from nnconsole.engine.interop.nntxt.reader import EXTRAS_PREFIX, read_extras
    assert read_extras(EXTRAS_PREFIX + DEEP + "\n") == {}
    assert read_extras(EXTRAS_PREFIX + '{"a": 1}\n') == {"a": 1}
