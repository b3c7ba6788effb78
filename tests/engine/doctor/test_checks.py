"""``nnconsole doctor`` (nnconsole.engine.doctor.checks): a real all-reduce smoke test on this machine, and
unreachable hosts explained, with the smoke test skipped when a host fails."""
from __future__ import annotations

import pytest

from tests.support.cli import nnconsole


@pytest.mark.mpi
def test_doctor_passes_on_this_machine_with_a_real_allreduce():
    out = nnconsole(["doctor", "--gpus", "2"], timeout=180)
    assert "[ OK ] all-reduce smoke test (2 processes)" in out.stdout
    assert "GB/s" in out.stdout
    assert "[SKIP] nnabla-ext-cuda" in out.stdout or "[ OK ] nnabla-ext-cuda" in out.stdout
    assert "all checks passed" in out.stdout


def test_doctor_explains_an_unreachable_host():
    from nnconsole.engine.doctor.checks import _hosts

    # 127.0.0.2 is this machine's loopback range with no ssh server: the connection is refused.
    [check] = _hosts(["127.0.0.2"])
    assert check.status == "fail" and "ssh-copy-id 127.0.0.2" in check.fix


@pytest.mark.slow
def test_doctor_skips_the_smoke_test_when_a_host_fails():
    from nnconsole.engine.doctor.checks import run_doctor

    lines = []
    assert run_doctor(workers=2, hosts=["127.0.0.2"], out=lines.append) == 1
    assert any(line.startswith("[FAIL] ssh 127.0.0.2") for line in lines)
    assert any(line.startswith("[SKIP] all-reduce smoke test") for line in lines)
