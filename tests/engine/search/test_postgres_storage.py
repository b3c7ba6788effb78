"""Two ``nnconsole search`` processes (with the fake trial runner) sharing one study on a PostgreSQL server,
started for the test from Debian's package on localhost: Optuna's own distributed pattern (issue 29)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest
from optuna.trial import TrialState

from tests.support.paths import ROOT
from tests.support.search_fakes import fake_job

PG_BIN = "/usr/lib/postgresql/15/bin"
SCRIPT = os.path.join(ROOT, "tests", "support", "search_fakes.py")
PARAMS = ("optimizer.learning_rate", "config.batch_size", "layers.fc1.out_shape")
pytest.importorskip("psycopg2", reason="the PostgreSQL driver (psycopg2-binary, in the test extra) is not installed")
pytestmark = pytest.mark.skipif(not os.path.isfile(os.path.join(PG_BIN, "initdb")),
                                reason="PostgreSQL 15 (Debian's postgresql package) is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(cmd: list) -> list:
    """initdb and postgres refuse to run as root: run them as Debian's postgres user then."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@pytest.fixture
def postgres_url():
    folder = tempfile.mkdtemp(prefix="nnconsole-pg-")
    data = os.path.join(folder, "data")
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    port = _free_port()
    subprocess.run(_as_server_user([f"{PG_BIN}/initdb", "-D", data, "-A", "trust", "-U", "postgres"]), check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(_as_server_user([f"{PG_BIN}/pg_ctl", "-D", data, "-w", "-l", os.path.join(folder, "log"), "-o",
                                    f"-p {port} -k {folder} -c listen_addresses=127.0.0.1", "start"]), check=True,
                   stdout=subprocess.DEVNULL)
    try:
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_server_user([f"{PG_BIN}/pg_ctl", "-D", data, "-m", "fast", "stop"]),
                       stdout=subprocess.DEVNULL)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_two_search_processes_share_one_postgresql_study(postgres_url):
    procs = [subprocess.Popen([sys.executable, SCRIPT, postgres_url, "8", "0.05"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    study = fake_job(postgres_url, 8, pruner="none").study
    done = [t for t in study.get_trials() if t.state == TrialState.COMPLETE]
    assert len(done) == 8 and len({t.number for t in done}) == 8
    assert len({tuple(t.params[k] for k in PARAMS) for t in done}) == 8
    assert {t.user_attrs["pid"] for t in done} == {p.pid for p in procs}
