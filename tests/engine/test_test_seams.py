"""The pause_at_iteration seam's wait: it ends when the stop comes, or after its limit, and never sooner."""
from __future__ import annotations

import time

from nnconsole.engine.test_seams import KNOWN_SEAMS, PAUSE_LIMIT_SECONDS, pause_until_stop, seam_environment
from tests.support.timing import budget


def test_the_pause_ends_when_the_stop_is_requested():
    asked_at = time.monotonic() + 0.3
    began = time.monotonic()
    pause_until_stop(lambda: time.monotonic() >= asked_at)
    assert 0.3 <= time.monotonic() - began < budget(2)


def test_the_pause_gives_up_after_its_limit_and_waits_until_then():
    began = time.monotonic()
    pause_until_stop(lambda: False, limit=0.3)
    assert 0.3 <= time.monotonic() - began < budget(2)
    assert PAUSE_LIMIT_SECONDS == 60 and "pause_at_iteration" in KNOWN_SEAMS
    assert seam_environment(pause_at_iteration=6) == {"NNCONSOLE_TEST_SEAMS": '{"pause_at_iteration": 6}'}
