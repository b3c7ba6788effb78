"""The Optuna study of a search: storage, sampler, pruner, the budget's count and repair after a kill.

Storage is an SQLite file in the project's results folder unless ``--storage`` gives any SQLAlchemy URL (a
PostgreSQL server shared by several machines: Optuna's own distributed pattern). Samplers are re-seeded for
every trial from (seed, trial number) (``PerTrialSeed``): the same seed and storage give the same sequence of
trials, and two processes sharing a study draw different trials. Each trial records the host and process of
the search that runs it; a trial left RUNNING by a search that no longer exists (kill -9, a lost machine of
this host) is failed and enqueued again with the same parameters (and its run directory, which the re-run
continues from its checkpoint: ``reuse``), and the failed one is not counted: every trial of the budget is
trained exactly once to its end.
"""
from __future__ import annotations

import datetime
import math
import os
import random
import socket
import time
from typing import Any, Dict, List, Optional, Tuple

import optuna
import sqlalchemy.exc
from optuna.samplers import BaseSampler, NSGAIISampler, RandomSampler, TPESampler
from optuna.trial import FrozenTrial, TrialState

from nnconsole.engine.project.model import Search
from nnconsole.engine.rundir import store as runs

optuna.logging.set_verbosity(optuna.logging.WARNING)  # our progress lines say what happens
NOT_COUNTED = "not_counted"  # a trial the budget does not count: interrupted, stale or over the budget
RERUN_OF = "rerun_of"
RUN_DIR = "run_dir"  # the trial's run directory, recorded as soon as it exists
RESUME_RUN = "resume_run"  # a re-run's: the interrupted trial's run directory, to continue from its checkpoint
RESUMED = "resumed"  # set on a re-run that continued that run (it trained only the epochs left)
HOST, PID = "host", "pid"
SEARCH_AGE = "search_age_s"  # seconds its search process had run when it asked for the trial
DB_FILE = "search.db"


def default_storage(project_path: str) -> str:
    """``sqlite:///<project folder>/results/<stem>/search.db``."""
    root = runs.results_root(project_path)
    os.makedirs(root, exist_ok=True)
    return "sqlite:///" + os.path.join(root, DB_FILE)


def default_storage_if_present(project_path: str) -> str:
    """The default storage's URL when its file exists, else "" (asking about a study must not create one)."""
    path = os.path.join(runs.results_root(project_path), DB_FILE)
    return "sqlite:///" + path if os.path.isfile(path) else ""


def finished_durations(storage: str, name: str) -> List[Tuple[float, int, int]]:
    """(seconds, epochs, workers) of each finished (complete) trial of study ``name`` that trained all its epochs
    (not a duplicate, not a continued run); [] when there is none."""
    if not storage:
        return []
    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:  # no such study in that storage
        return []
    out = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        epochs, workers = t.user_attrs.get("epochs"), t.user_attrs.get("workers")
        if t.user_attrs.get(RESUMED):
            continue
        if t.datetime_start and t.datetime_complete and isinstance(epochs, int) and isinstance(workers, int):
            out.append(((t.datetime_complete - t.datetime_start).total_seconds(), epochs, workers))
    return out


class PerTrialSeed(BaseSampler):
    """A sampler made anew for each trial with seed ``seed + trial number`` (so a trial's random draws depend
    on its number, never on which process asks it); everything else is the made sampler's."""

    def __init__(self, kind: str, seed: int):
        self._kind, self._seed = kind, seed
        self._base = self._make(0)

    def _make(self, number: int) -> BaseSampler:
        seed = (self._seed * 1_000_003 + number) % (2**32)
        if self._kind == "random":
            return RandomSampler(seed=seed)
        if self._kind == "nsga2":
            return NSGAIISampler(seed=seed, population_size=8)
        return TPESampler(seed=seed, n_startup_trials=5)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self._base = self._make(trial.number)
        self._base.before_trial(study, trial)

    def infer_relative_search_space(self, study, trial):  # noqa: D102 - delegated
        return self._base.infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):  # noqa: D102 - delegated
        return self._base.sample_relative(study, trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):  # noqa: D102 - delegated
        return self._base.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study, trial, state, values):  # noqa: D102 - delegated
        self._base.after_trial(study, trial, state, values)


def make_pruner(search: Search) -> optuna.pruners.BasePruner:
    if search.pruner == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1)
    if search.pruner == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    return optuna.pruners.NopPruner()


STORAGE_CREATE_TRIES = 6


def open_study(storage: str, name: str, search: Search) -> optuna.Study:
    """Create the study, or join it when it exists (another process, or a search resumed).

    Two searches started together on a new storage both create its tables; the loser's insert of the schema
    version fails (IntegrityError, or OperationalError 'table already exists'). The tables are there by then,
    so a second try joins them: a few tries with a short, growing wait, then the error itself."""
    directions = ["minimize"] * len(search.objectives)
    for attempt in range(STORAGE_CREATE_TRIES):
        try:
            return optuna.create_study(storage=storage, study_name=name, directions=directions, load_if_exists=True,
                                       sampler=PerTrialSeed(search.sampler, search.seed), pruner=make_pruner(search))
        except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.OperationalError):
            if attempt == STORAGE_CREATE_TRIES - 1:
                raise
            time.sleep(0.1 * (attempt + 1) + random.random() * 0.1)
    raise AssertionError("unreachable")


def counted(study: optuna.Study) -> int:
    """Trials the budget counts: running, complete, pruned, and failed ones that will not run again."""
    total = 0
    for t in study.get_trials(deepcopy=False):
        if t.state in (TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED):
            total += 1
        elif t.state == TrialState.FAIL and not t.user_attrs.get(NOT_COUNTED):
            total += 1
    return total


def claim(study: optuna.Study, trial: optuna.Trial) -> None:
    """Record which search runs ``trial`` (for the repair after a kill) and how long that search had run (the
    first trial of each search measures its start-up, for ``--plan``)."""
    trial.set_user_attr(HOST, socket.gethostname())
    trial.set_user_attr(PID, os.getpid())
    age = process_age_s()
    if age is not None:
        trial.set_user_attr(SEARCH_AGE, round(age, 3))


def process_age_s() -> Optional[float]:
    """Seconds since this process started (Linux /proc), imports included; None where /proc is not there."""
    try:
        with open("/proc/self/stat") as fh:
            started_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, uptime - started_ticks / os.sysconf("SC_CLK_TCK"))


def search_startups(storage: str, name: str) -> List[float]:
    """Each past search process's start-up on study ``name``: the age at which it asked for its first trial
    (process start, imports, the project's checks, the study's opening); [] when none was recorded."""
    if not storage:
        return []
    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        return []
    first: Dict[Tuple[str, int], float] = {}
    for t in study.get_trials(deepcopy=False):
        age, key = t.user_attrs.get(SEARCH_AGE), (t.user_attrs.get(HOST), t.user_attrs.get(PID))
        if isinstance(age, (int, float)) and key[1] is not None:
            first[key] = min(first.get(key, math.inf), float(age))
    return sorted(first.values())


def fail_and_requeue(study: optuna.Study, trial_id: int, number: int, params: Dict[str, Any], why: str,
                     run_dir: str = "") -> bool:
    """Mark a RUNNING trial failed and not counted, and enqueue its parameters again (with ``run_dir``, the run
    it had started, so the re-run can continue it); False when another process did it first (the state change
    is the storage's atomic step, so only one process re-enqueues)."""
    storage = study._storage
    try:
        storage.set_trial_user_attr(trial_id, NOT_COUNTED, why)
        if not storage.set_trial_state_values(trial_id, TrialState.FAIL):
            return False
    except (RuntimeError, ValueError):  # optuna: already finished by another process
        return False
    attrs: Dict[str, Any] = {RERUN_OF: number}
    if run_dir:
        attrs[RESUME_RUN] = run_dir
    study.enqueue_trial(params, user_attrs=attrs)
    return True


def repair_stale(study: optuna.Study, host: Optional[str] = None) -> List[int]:
    """Re-enqueue the RUNNING trials of this host whose search process is gone; their numbers."""
    host = host or socket.gethostname()
    repaired = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        owner, pid = t.user_attrs.get(HOST), t.user_attrs.get(PID)
        if owner == host and isinstance(pid, int) and pid != os.getpid() and runs.pid_alive(pid):
            continue
        if owner is None and pid is None and t.params == {} and _recent(t):
            continue  # just asked by a process that has not claimed it yet
        if owner not in (None, host):
            continue  # another machine's: its own search repairs it
        if fail_and_requeue(study, t._trial_id, t.number, t.params, "its search process was gone",
                            t.user_attrs.get(RUN_DIR, "")):
            repaired.append(t.number)
    return repaired


def _recent(trial: FrozenTrial) -> bool:
    start = trial.datetime_start
    return start is not None and (datetime.datetime.now() - start).total_seconds() < 30


def best_trials(study: optuna.Study, search: Optional[Search] = None) -> List[FrozenTrial]:
    """The best complete trial (one objective) or the Pareto front (two: no other trial has both a lower or
    equal error and as few multiply-adds, one of them strictly), among the trials within ``search.error_max``
    (NNC's bound on the error; 0 = none)."""
    bound = search.error_max if search is not None and search.error_max > 0 else math.inf
    done = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)) if t.values[0] <= bound]
    if not done:
        return []
    if len(done[0].values) == 1:
        return [min(done, key=lambda t: (t.values[0], t.number))]
    front = [t for t in done if not any(_dominates(o.values, t.values) for o in done)]
    return sorted(front, key=lambda t: t.values[1])


def _dominates(a: List[float], b: List[float]) -> bool:
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))
