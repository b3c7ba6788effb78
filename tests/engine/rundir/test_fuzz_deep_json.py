"""Fuzz, issue 25's class "deep JSON": JSON texts nested to any depth (lists, objects, both, brackets inside strings,
torn at any point) in any run file every reader of a run directory opens. Each reader skips or refuses the text as
damaged (ValueError / RunFileError, or an empty result); none raises RecursionError or anything else."""
from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnconsole.engine.rundir import safe_json
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.notes import read_note
from nnconsole.engine.rundir.protocol import (LOGS_DIR, METRICS_FILE, NOTE_FILE, PLAN_FILE, STATUS_FILE,
                                              read_error_records, read_events)
from nnconsole.engine.rundir.typed_json import RunFileError

FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@st.composite
def deep_json(draw) -> str:
    """A JSON text nested ``depth`` levels (lists, objects or a mix), maybe with bracket-laden strings and torn."""
    depth = draw(st.one_of(st.integers(0, 70), st.integers(900, 1100), st.integers(10_000, 100_000)))
    kinds = draw(st.sampled_from(["list", "object", "mixed"]))
    filler = draw(st.sampled_from(["", '"[[[{{"', '"]]}}"', "1", "null", '"\\"[\\""']))
    opening, closing = [], []
    for i in range(depth):
        as_list = kinds == "list" or (kinds == "mixed" and i % 2 == 0)
        opening.append("[" if as_list else '{"k":')
        closing.append("]" if as_list else "}")
    text = "".join(opening) + (filler or "0") + "".join(reversed(closing))
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]  # torn at any point
    if draw(st.booleans()):
        text = '{"type": "train", "iteration": 1, "x": ' + text + "}"
    return text


@FUZZ
@given(text=deep_json(), as_bytes=st.booleans())
def test_the_safe_reader_refuses_or_reads_without_recursion(text, as_bytes):
    try:
        value = safe_json.loads(text.encode() if as_bytes else text)
    except ValueError:
        return
    assert json.dumps(value) is not None  # what it returns can be used (and written) further
    assert safe_json.nesting_depth(text) <= safe_json.MAX_JSON_DEPTH


@FUZZ
@given(text=deep_json())
def test_every_run_file_reader_survives_deep_json(tmp_path_factory, text):
    run = str(tmp_path_factory.mktemp("run"))
    os.makedirs(os.path.join(run, LOGS_DIR))
    good = json.dumps({"type": "train", "iteration": 1, "epoch": 0, "loss": 1.0})
    with open(os.path.join(run, METRICS_FILE), "w") as fh:
        fh.write(good + "\n" + text.replace("\n", " ") + "\n" + good + "\n")
    for name in (NOTE_FILE, STATUS_FILE, PLAN_FILE, os.path.join(LOGS_DIR, "rank0.error.json")):
        with open(os.path.join(run, name), "w") as fh:
            fh.write(text)
    events = os.path.join(run, "events.jsonl")
    with open(events, "w") as fh:
        fh.write(text.replace("\n", " ") + "\n")
    records, _ = runs.read_metrics(run)
    assert [r.get("iteration") for r in records][:1] == [1] and len(records) in (2, 3)
    read_note(run)
    read_events(events)
    read_error_records(run)
    for read in (lambda: runs.read_status(run, strict=True), lambda: runs.read_plan(run)):
        try:
            read()
        except RunFileError:
            pass
