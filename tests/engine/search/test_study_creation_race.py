"""Two searches started together on a new storage both create its tables; the one that loses the race gets
sqlalchemy's IntegrityError (the schema version row) or OperationalError ('table already exists') and must
join the study the other made, not die (seen 1 run in 4 with two processes on one new SQLite file)."""
from __future__ import annotations

import optuna
import pytest
import sqlalchemy.exc

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.search import study as study_module
from tests.support.search_fakes import TEMPLATE


def _losing_the_race(error: Exception, losses: int, monkeypatch):
    real = optuna.create_study
    calls = []

    def create_study(**kwargs):
        calls.append(kwargs["study_name"])
        if len(calls) <= losses:
            raise error
        return real(**kwargs)

    monkeypatch.setattr(optuna, "create_study", create_study)
    monkeypatch.setattr(study_module.time, "sleep", lambda _s: None)
    return calls


@pytest.mark.parametrize("error", [
    sqlalchemy.exc.IntegrityError("INSERT INTO alembic_version", {}, Exception("UNIQUE constraint failed")),
    sqlalchemy.exc.OperationalError("CREATE TABLE studies", {}, Exception("table studies already exists")),
], ids=["integrity", "operational"])
def test_a_search_that_loses_the_table_race_joins_the_study(tmp_path, monkeypatch, error):
    search = load_valid_project(TEMPLATE, check_datasets=False).search
    calls = _losing_the_race(error, 2, monkeypatch)
    handle = study_module.open_study(f"sqlite:///{tmp_path / 'new.db'}", "s", search)
    assert handle.study_name == "s" and len(calls) == 3


def test_a_storage_that_keeps_failing_reports_its_error(tmp_path, monkeypatch):
    search = load_valid_project(TEMPLATE, check_datasets=False).search
    error = sqlalchemy.exc.OperationalError("CREATE TABLE studies", {}, Exception("disk I/O error"))
    calls = _losing_the_race(error, 100, monkeypatch)
    with pytest.raises(sqlalchemy.exc.OperationalError):
        study_module.open_study(f"sqlite:///{tmp_path / 'bad.db'}", "s", search)
    assert len(calls) == study_module.STORAGE_CREATE_TRIES
