"""Issue 29: each trial's run directory records how the trial ended (``trial.json``'s ``state``), the same word
the study holds, so the GUI's trials table tells a pruned trial from a stopped or failed one without Optuna."""
from __future__ import annotations

import os

from optuna.trial import TrialState

from nnconsole.engine.rundir.trials import mark_trial_state, read_trial, write_trial
from nnconsole.engine.search.runner import run_search
from tests.support.search_fakes import FakeRunner, fake_job

STATES = {TrialState.COMPLETE: "complete", TrialState.PRUNED: "pruned", TrialState.FAIL: "failed"}


class TaggingRunner(FakeRunner):
    """FakeRunner with a real run directory per trial, tagged as ``trial_run.run_trial`` tags it."""

    def __init__(self, root, broken=(), **kwargs):
        super().__init__(**kwargs)
        self.root, self.broken = root, set(broken)

    def __call__(self, request, number, project, tags, on_epoch, should_stop, **options):
        run_dir = os.path.join(self.root, f"run_{number}")
        os.makedirs(run_dir)
        write_trial(run_dir, dict(tags, trial=number, state="running"))
        outcome = super().__call__(request, number, project, tags, on_epoch, should_stop, **options)
        outcome.run_dir = run_dir
        if number in self.broken:
            outcome.exit_code, outcome.error = 1, None
        return outcome


def test_each_trial_run_records_the_state_the_study_holds(tmp_path):
    runner = TaggingRunner(str(tmp_path / "runs"), broken={3}, epochs=6)
    job = fake_job(f"sqlite:///{tmp_path / 's.db'}", trials=12, pruner="median")
    run_search(job, say=lambda line: None, runner=runner)
    trials = job.study.get_trials()
    recorded = {t.number: read_trial(t.user_attrs["run_dir"])["state"] for t in trials}
    assert recorded == {t.number: STATES[t.state] for t in trials}
    assert {"complete", "pruned", "failed"} <= set(recorded.values())  # each end is seen


def test_a_run_that_is_no_trials_is_left_alone(tmp_path):
    mark_trial_state(str(tmp_path), "complete")
    assert not os.path.exists(tmp_path / "trial.json") and read_trial(str(tmp_path)) is None
