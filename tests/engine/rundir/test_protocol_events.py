"""The ``--events`` stream: every event name is a constant of the protocol, listed in its docstring, and progress
events go out at most every PROGRESS_EVERY_S seconds with the last figure always among them."""
from __future__ import annotations

import re

from nnconsole.engine.rundir import protocol
from nnconsole.engine.rundir.protocol import (EVENTS, INFER_PROGRESS_EVENT, PROGRESS_EVERY_S, announce,
                                              progress_announcer, read_events)


def test_every_event_name_is_a_listed_constant_and_in_the_docstring_table():
    constants = {name: value for name, value in vars(protocol).items() if name.endswith("_EVENT")}
    assert sorted(constants.values()) == sorted(EVENTS) and len(set(EVENTS)) == len(EVENTS)
    table = protocol.__doc__.split("Event (``*_EVENT``)", 1)[1]
    listed = re.findall(r"^(\w+) ", table, re.MULTILINE)
    assert listed == list(EVENTS)


def test_progress_events_are_spaced_and_the_last_always_goes(tmp_path, monkeypatch):
    now = [100.0]
    monkeypatch.setattr(protocol.time, "monotonic", lambda: now[0])
    path = str(tmp_path / "events.jsonl")
    shown = []
    progress = progress_announcer(path, INFER_PROGRESS_EVENT, lambda done, total: shown.append((done, total)))
    for done, at in ((1, 100.0), (2, 100.1), (3, 100.1 + PROGRESS_EVERY_S), (4, 100.7), (5, 100.7)):
        now[0] = at
        progress(done, 5)
    found, _ = read_events(path)
    assert [(e["done"], e["total"]) for e in found] == [(1, 5), (3, 5), (5, 5)] == shown
    assert {e["event"] for e in found} == {INFER_PROGRESS_EVENT}


def test_without_an_events_file_nothing_is_written_and_the_terminal_still_shows(tmp_path):
    shown = []
    progress_announcer(None, INFER_PROGRESS_EVENT, lambda done, total: shown.append(done))(3, 3)
    announce(None, INFER_PROGRESS_EVENT, done=1)
    assert shown == [3] and list(tmp_path.iterdir()) == []
