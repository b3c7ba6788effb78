"""A trial whose run is stopped from outside (Ctrl-C sent to the whole process group reaches the training run
before the search or study notices it; the GUI's Stop writes the run's STOP file) ends ``stopped``, not failed:
the race a batch study's Ctrl-C lost under load, recording its running point as failed."""
from __future__ import annotations

import os

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.batch_study import StudyPoint
from nnconsole.engine.rundir.protocol import STOP_FILE
from nnconsole.engine.search.trial_run import TrialOutcome, TrialRequest, run_trial
from nnconsole.engine.study.run import record_outcome
from tests.support.projects import digits_subset_project


def test_a_run_stopped_by_its_stop_file_is_a_stopped_trial_though_the_search_asked_nothing(tmp_path):
    path = digits_subset_project(str(tmp_path / "digits"), rows=128, validation_rows=32)
    request = TrialRequest(results_root=runs.results_root(path), trials_dir=str(tmp_path / "trials"), epochs=30,
                           device="cpu")

    def stop_it(run_dir: str) -> None:  # what the GUI's Stop, or a signal to the run, does
        open(os.path.join(run_dir, STOP_FILE), "w").close()

    outcome = run_trial(request, 0, load_valid_project(path), {}, lambda epoch, error: False, lambda: False,
                        on_run_dir=stop_it)
    assert outcome.exit_code == ExitCode.STOPPED
    assert outcome.stopped and not outcome.pruned


def test_a_point_whose_run_ended_stopped_is_recorded_stopped_before_the_study_hears_of_the_stop():
    point = StudyPoint(workers=2, policy="linear")
    record_outcome(point, TrialOutcome(exit_code=int(ExitCode.STOPPED), stopped=True), stopping=False)
    assert point.state == "stopped"
    record_outcome(point, TrialOutcome(exit_code=int(ExitCode.FAILED)), stopping=False)
    assert point.state == "failed"
