"""A search without training, for the tests of ``nnconsole.engine.search``: a fake trial runner whose validation
curve is a fixed function of the trial's learning rate, and a job over the digits_search template on any storage.

Run as a script (``python tests/support/search_fakes.py STORAGE TRIALS SECONDS``) it is one search process with
that fake runner, so the tests can start two at once on one storage, or kill one with SIGKILL and resume it.
"""
from __future__ import annotations

import math
import os
import sys
import time
from typing import Optional

if __name__ == "__main__":  # run as a script: the checkout's root on the path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from nnconsole import templates as project_templates  # noqa: E402
from nnconsole.engine.check.project_file import load_valid_project  # noqa: E402
from nnconsole.engine.search.runner import SearchJob, run_search  # noqa: E402
from nnconsole.engine.search.study import open_study, repair_stale  # noqa: E402
from nnconsole.engine.search.trial_run import TrialOutcome, TrialRequest  # noqa: E402

TEMPLATE = str(project_templates.template_path("digits_search") / "project.yaml")


def fake_error(lr: float, epoch: int) -> float:
    """A validation error that falls with epochs and is least at a learning rate of 1e-2."""
    return min(1.0, 0.02 + 0.1 * abs(math.log10(lr) + 2) + 0.3 / epoch)


class FakeRunner:
    """Stands in for ``trial_run.run_trial``: reports ``epochs`` validation errors, ``seconds`` apart (``slower``:
    trial number -> a factor on that trial's seconds, so a test can know which trial is still running); ``trained``
    lists the trials it was asked to train."""

    def __init__(self, epochs: int = 4, seconds: float = 0.0, slower: Optional[dict] = None):
        self.epochs, self.seconds, self.pruned, self.trained = epochs, seconds, [], []
        self.slower = dict(slower or {})

    def __call__(self, request, number, project, tags, on_epoch, should_stop, resume_dir="",
                 on_run_dir=lambda run_dir: None) -> TrialOutcome:
        self.trained.append(number)
        lr = project.optimizer.learning_rate
        outcome = TrialOutcome(run_dir=f"fake/{number}", exit_code=0)
        for epoch in range(1, self.epochs + 1):
            time.sleep(self.seconds * self.slower.get(number, 1.0))
            if should_stop():
                outcome.stopped, outcome.exit_code = True, 3
                return outcome
            error = fake_error(lr, epoch)
            outcome.curve.append(error)
            if on_epoch(epoch, error):
                outcome.pruned, outcome.exit_code = True, 3
                self.pruned.append(number)
                return outcome
        outcome.error = min(outcome.curve)
        return outcome


def fake_job(storage: str, trials: int, parallel: int = 1, pruner: Optional[str] = None, seed: int = 0,
             study: str = "s") -> SearchJob:
    project = load_valid_project(TEMPLATE, check_datasets=False)
    if pruner:
        project.search.pruner = pruner
    project.search.seed = seed
    handle = open_study(storage, study, project.search)
    repair_stale(handle)
    return SearchJob(project, handle, TrialRequest("unused", "unused"), [], trials, parallel)


if __name__ == "__main__":
    storage, trials, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    sys.exit(run_search(fake_job(storage, trials, pruner="none"), say=lambda line: print(line, flush=True),
                        runner=FakeRunner(seconds=seconds)))
