"""Issue 29: a candidate identical to one already trained (same network graph, same searched values) is not
trained again: the study is told the earlier trial's values, the trial is marked a duplicate of it, the earlier
run's trial.json lists it and the progress line says so. The digest ignores layer names and list order."""
from __future__ import annotations

import copy
import os

from optuna.trial import TrialState

from nnconsole.engine.project.io import load_project
from nnconsole.engine.project.model import SearchParam
from nnconsole.engine.rundir.trials import read_trial, write_trial
from nnconsole.engine.search.mutations import mutate
from nnconsole.engine.search.policy import read_policy
from nnconsole.engine.search.reuse import DIGEST, DUPLICATE_OF, design_digest
from nnconsole.engine.search.runner import run_search
from tests.support.search_fakes import TEMPLATE, FakeRunner, fake_job


class RunDirRunner(FakeRunner):
    """FakeRunner with a real, tagged run directory per trial (as ``trial_run.run_trial`` makes)."""

    def __init__(self, root, **kwargs):
        super().__init__(**kwargs)
        self.root = root

    def __call__(self, request, number, project, tags, on_epoch, should_stop, **options):
        run_dir = os.path.join(self.root, f"run_{number}")
        os.makedirs(run_dir)
        write_trial(run_dir, dict(tags, trial=number, state="running"))
        options.get("on_run_dir", lambda d: None)(run_dir)
        outcome = super().__call__(request, number, project, tags, on_epoch, should_stop, **options)
        outcome.run_dir = run_dir
        return outcome


def test_a_repeated_candidate_trains_once_and_reports_the_earlier_values(tmp_path):
    job = fake_job(f"sqlite:///{tmp_path / 'd.db'}", trials=6, pruner="none")
    # two candidates only: every trial after the first of each is a duplicate
    job.project.search.params = [SearchParam(target="config.batch_size", kind="choice", choices=[16, 32])]
    runner = RunDirRunner(str(tmp_path / "runs"))
    lines = []
    assert run_search(job, say=lines.append, runner=runner) == 0
    trials = sorted(job.study.get_trials(), key=lambda t: t.number)
    assert len(trials) == 6 and all(t.state == TrialState.COMPLETE for t in trials)
    by_value = {}
    for t in trials:
        by_value.setdefault(t.params["config.batch_size"], []).append(t)
    assert len(by_value) == 2
    assert sorted(runner.trained) == sorted(group[0].number for group in by_value.values())  # each trained once
    for group in by_value.values():
        first = group[0]
        assert DUPLICATE_OF not in first.user_attrs
        for t in group[1:]:
            assert t.user_attrs[DUPLICATE_OF] == first.number
            assert t.values == first.values and t.user_attrs[DIGEST] == first.user_attrs[DIGEST]
            assert "run_dir" not in t.user_attrs
            assert any(line.startswith(f"trial {t.number} duplicate:") and f"trial {first.number}" in line
                       for line in lines), lines
        assert read_trial(first.user_attrs["run_dir"])["duplicates"] == [t.number for t in group[1:]]


def test_a_duplicate_of_a_pruned_trial_is_pruned_untrained(tmp_path):
    job = fake_job(f"sqlite:///{tmp_path / 'p.db'}", trials=3, pruner="none")
    job.project.search.params = [SearchParam(target="config.batch_size", kind="choice", choices=[16])]
    fake = FakeRunner()

    def pruning_runner(request, number, project, tags, on_epoch, should_stop, **options):
        outcome = fake(request, number, project, tags, lambda epoch, error: epoch == 2 or on_epoch(epoch, error),
                       should_stop, **options)
        return outcome

    run_search(job, say=lambda line: None, runner=pruning_runner)  # trial 0 trains, pruned at epoch 2
    trials = sorted(job.study.get_trials(), key=lambda t: t.number)
    assert fake.trained == [0]
    assert [t.state for t in trials] == [TrialState.PRUNED] * 3
    assert [t.user_attrs.get(DUPLICATE_OF) for t in trials] == [None, 0, 0]
    assert trials[1].intermediate_values == trials[0].intermediate_values  # the pruner sees the same curve


def test_the_digest_ignores_names_and_list_order_but_not_structure_or_values():
    net = load_project(TEMPLATE).network
    rules = {r.name: r for r in read_policy()}
    mutated = mutate(net, rules["InsertDropout"], "fc1", 0)  # a layer named dropout_s1 after fc1
    renamed = copy.deepcopy(mutated)
    new = next(layer for layer in renamed.layers if layer.type == "Dropout")
    for layer in renamed.layers:
        layer.inputs = ["drop_by_hand" if name == new.name else name for name in layer.inputs]
    new.name = "drop_by_hand"
    renamed.layers.remove(new)
    renamed.layers.append(new)  # the same graph, listed elsewhere and named otherwise
    values = {"config.batch_size": 32}
    assert design_digest(mutated, values) == design_digest(renamed, values)
    assert design_digest(mutated, values) != design_digest(net, values)  # another network
    assert design_digest(mutated, values) != design_digest(mutated, {"config.batch_size": 16})  # other values
    wider = copy.deepcopy(mutated)
    wider.layer("fc1").params["out_shape"] = 128
    assert design_digest(wider, values) != design_digest(mutated, values)
