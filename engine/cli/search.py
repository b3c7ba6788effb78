"""``nnconsole search PROJECT [--trials N] [--parallel K] [--workers-per-trial G] [--epochs E] [--storage URL]
[--study NAME] [--plan] [--slurm-array N]``: the project's ``search`` section run as trials, each a normal run.

Registered by ``nnconsole.engine.cli.main``. The study lives in ``<results>/search.db`` unless ``--storage``
names any SQLAlchemy URL; several ``nnconsole search`` processes (on one machine, or on several with a shared
PostgreSQL) given one storage and study name share the study. Rerunning the command resumes the study: trials
a killed search left running are run again, never counted twice. ``--plan`` prints the predicted time of the
budget for each K x G split of this machine's devices and runs nothing; ``--slurm-array N`` writes the sbatch
script of a Slurm job array of N such searches on one study (``search.slurm``) and runs nothing. Exit codes: 0 budget spent, 2 bad
input, 3 stopped (Ctrl-C; rerun to resume).
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import statistics
import sys
from typing import Callable

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.backend.device import gpu_count
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.helper_processes import cli_command
from nnconsole.engine.launch.launcher import plan_for
from nnconsole.engine.plan.measured_runs import local_run_timings
from nnconsole.engine.project.model import Search
from nnconsole.engine.project.paths import dataset_path
from nnconsole.engine.project.schema import DEVICES
from nnconsole.engine.project.searched_properties import has_flags
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.search.policy import read_policy
from nnconsole.engine.search.runner import SearchJob, run_search
from nnconsole.engine.search.slurm import SCRIPT_NAME, ArraySpec, array_script, check_storage
from nnconsole.engine.search.split_plan import (check_split, cli_start_s, machine_devices, overheads_by_workers,
                                                 render_splits, run_durations, split_estimates, trial_overhead)
from nnconsole.engine.search.study import (DB_FILE, best_trials, default_storage, default_storage_if_present,
                                          finished_durations, open_study, repair_stale, search_startups)
from nnconsole.engine.search.trial_run import TrialRequest


def _say(text: str) -> None:
    print(text, flush=True)


def cmd_search(args: argparse.Namespace) -> int:
    project_path = os.path.abspath(args.project)
    project = load_valid_project(project_path, allow_outside_data=args.allow_outside_data)
    if project.search is None and has_flags(project):
        project.search = Search()  # searched layer properties alone: the section's defaults for the rest
    search = project.search
    if search is None:
        print(f"nnconsole search: {args.project} has no 'search' section and no layer property marked searched; "
              "add one (see docs/search.md, 'The search section', or 'nnconsole new DIR --template digits_search')",
              file=sys.stderr)
        return ExitCode.BAD_INPUT
    trials = args.trials or search.trials
    epochs = args.epochs or search.epochs or project.config.max_epoch
    device = args.device or project.config.device
    gpus = gpu_count() if device != "cpu" else 0
    devices = machine_devices(device, gpus)
    name = args.study or project.name
    if args.plan:
        return _print_plan(args, project, project_path, devices, trials, epochs, name, device)
    if args.slurm_array:
        return _write_slurm_array(args, project_path, trials, epochs, name, device)
    check_split(args.parallel, args.workers_per_trial, devices)
    root = runs.results_root(project_path)
    storage = args.storage or default_storage(project_path)
    study = open_study(storage, name, search)
    repaired = repair_stale(study)
    if repaired:
        _say(f"resuming: trial(s) {', '.join(map(str, repaired))} of a search that is gone will run again")
    rules = read_policy(dataset_path(project, search.policy) if search.policy else "") if search.structure else []
    request = TrialRequest(results_root=root, trials_dir=os.path.join(root, "search", name),
                           workers=args.workers_per_trial, epochs=epochs, device=args.device)
    _say(f"study '{name}' in {storage}: {trials} trials, {args.parallel} at once x {args.workers_per_trial} "
         f"worker(s), {epochs} epochs each, sampler {search.sampler}, pruner {search.pruner}")
    job = SearchJob(project, study, request, rules, trials, args.parallel, args.timeout_minutes * 60 if
                    args.timeout_minutes is not None else search.timeout_minutes * 60, gpus=gpus)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops as Ctrl-C does: trials given back
    try:
        code = run_search(job, say=_say)
    finally:
        signal.signal(signal.SIGTERM, previous)
    for t in best_trials(study, search):
        _say(f"best: trial {t.number} values {', '.join(f'{v:.4g}' for v in t.values)} params {t.params} "
             f"run {t.user_attrs.get('run_dir', '?')}")
    return code


def _print_plan(args: argparse.Namespace, project, project_path: str, devices: int, trials: int, epochs: int,
                name: str, device: str) -> int:
    """``--plan``: each split's predicted time, with the start-up of a trial and of the search as measured."""
    plan = lambda n: plan_for(project, n, device)  # noqa: E731
    per_epoch = {s.workers: s.trial_s / epochs for s in split_estimates(project, devices, trials, epochs, plan)}
    epoch_s = lambda g: per_epoch.get(g, per_epoch[1])  # noqa: E731
    storage = args.storage or default_storage_if_present(project_path)
    durations, source = finished_durations(storage, name), f"finished trials of study '{name}'"
    command_s = None
    if not durations:  # no trial yet: the project's runs, plus the command's start that their records miss
        command_s = cli_start_s()
        durations = [(seconds + command_s, e, w) for seconds, e, w in run_durations(project_path, device)]
        source = f"the project's finished runs + {command_s:.2g} s to start the command"
    startups = search_startups(storage, name)
    startup = statistics.median(startups) if startups else (command_s if command_s is not None else cli_start_s())
    overhead = trial_overhead(durations, epoch_s)
    _say(f"{trials} trials of {epochs} epochs on {devices} device(s):")
    _say(render_splits(split_estimates(project, devices, trials, epochs, plan,
                                       overheads_by_workers(durations, epoch_s, sorted(per_epoch)), startup),
                       bool(local_run_timings(project_path, device))))
    _say(f"each trial's start-up, validation and saving: {overhead:.3g} s (median of {len(durations)} {source})"
         if overhead is not None else "each trial's start-up, validation and saving: not measured yet (no "
         "finished trial or run of this project): run a few trials, then ask again")
    _say(f"the search's own start-up: {startup:.2g} s (" + (f"median of {len(startups)} earlier searches)"
         if startups else "the command's start measured now)"))
    return ExitCode.OK


def _write_slurm_array(args: argparse.Namespace, project_path: str, trials: int, epochs: int, name: str,
                       device: str) -> int:
    """``--slurm-array N``: write the sbatch script of N array tasks on one study; submit nothing."""
    storage = args.storage or "sqlite:///" + os.path.join(runs.results_root(project_path), DB_FILE)  # not made yet
    check_storage(storage, args.slurm_array, args.slurm_node or "")
    trials_dir = os.path.join(runs.results_root(project_path), "search", name)
    path = os.path.abspath(args.script) if args.script else os.path.join(trials_dir, SCRIPT_NAME)
    if os.path.exists(path):
        print(f"nnconsole search: {path} exists; remove it, or give --script FILE for the new script",
              file=sys.stderr)
        return ExitCode.BAD_INPUT
    command = cli_command() + ["search", project_path, "--epochs", str(epochs)]
    if args.device:
        command += ["--device", args.device]
    if args.timeout_minutes is not None:
        command += ["--timeout-minutes", f"{args.timeout_minutes:g}"]
    if args.allow_outside_data:
        command.append("--allow-outside-data")
    spec = ArraySpec(args.slurm_array, args.parallel, args.workers_per_trial, storage, name, trials, command,
                     gpus=device == "cuda" or (device == "auto" and gpu_count() > 0), node=args.slurm_node or "",
                     time_limit=args.slurm_time or "", log_dir=trials_dir, extra=args.slurm_option or [])
    text = array_script(spec)
    os.makedirs(trials_dir, exist_ok=True)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    atomic_write(path, text.encode())
    os.chmod(path, 0o755)
    _say(f"wrote {path}: {args.slurm_array} array task(s) on study '{name}' in {storage}, {trials} trials in all, "
         f"each task {args.parallel} at once x {args.workers_per_trial} worker(s)")
    _say(f"submit it with: sbatch {shlex.quote(path)}")
    return ExitCode.OK


def _slurm_word(text: str) -> str:
    """A node name or an #SBATCH option: one word of safe characters (it becomes a line of a shell script)."""
    if not re.fullmatch(r"[A-Za-z0-9_.,:=/@%+\[\]-]+", text):
        raise argparse.ArgumentTypeError(f"{text!r}: use letters, digits and -_.,:=/@%+[] only")
    return text


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def register(add: Callable) -> None:
    """Add the ``search`` subcommand through nnconsole.engine.cli.main's ``add(name, fn, help)``."""
    p = add("search", cmd_search, "Hyper-parameter and structure search: train the project's 'search' section as "
            "trials (each a normal run) on Optuna, K at once with G workers each; rerun to resume.")
    p.add_argument("project", help="project YAML file with a 'search' section")
    p.add_argument("--trials", type=_positive, metavar="N", help="the budget (default: search.trials)")
    p.add_argument("--parallel", type=_positive, default=1, metavar="K", help="trials at once (default 1)")
    p.add_argument("--workers-per-trial", type=_positive, default=1, metavar="G", help="workers of each trial "
                   "(GPUs or CPU processes; default 1); K x G may not exceed this machine's devices")
    p.add_argument("--epochs", type=_positive, metavar="E", help="each trial's max_epoch (default: search.epochs, "
                   "else config.max_epoch)")
    p.add_argument("--device", choices=DEVICES, help="override config.device for every trial")
    p.add_argument("--storage", metavar="URL", help="Optuna storage, any SQLAlchemy URL (e.g. "
                   "postgresql://user@host/db); default sqlite:///<results folder>/search.db")
    p.add_argument("--study", metavar="NAME", help="the study's name in the storage (default: the project's name)")
    p.add_argument("--timeout-minutes", type=float, metavar="M", help="stop asking for new trials after M minutes "
                   "(default: search.timeout_minutes; 0 = none)")
    p.add_argument("--plan", action="store_true", help="print the predicted time of the budget for each split "
                   "K x G of this machine's devices, and which to use; run nothing")
    p.add_argument("--allow-outside-data", action="store_true", help="allow dataset paths that point outside "
                   "the project's folder")
    p.add_argument("--slurm-array", type=_positive, metavar="N", help="write (not submit) an sbatch script of a "
                   "Slurm job array of N tasks, each an 'nnconsole search' on this --storage and --study, sharing the "
                   "budget; each task asks for K x G tasks (--parallel, --workers-per-trial) on one node. SQLite is "
                   "refused for N > 1 unless --slurm-node pins every task to one node: use PostgreSQL")
    p.add_argument("--slurm-node", type=_slurm_word, metavar="NAME", help="with --slurm-array: run every task on "
                   "node NAME (#SBATCH --nodelist)")
    p.add_argument("--slurm-time", type=_slurm_word, metavar="LIMIT", help="with --slurm-array: each task's time "
                   "limit (#SBATCH --time, e.g. 04:00:00)")
    p.add_argument("--slurm-option", type=_slurm_word, action="append", metavar="OPTION", help="with "
                   "--slurm-array: one more #SBATCH line (repeatable), e.g. --slurm-option=--partition=gpu")
    p.add_argument("--script", metavar="FILE", help="with --slurm-array: where to write the script (default "
                   "<results folder>/search/<study>/slurm_array.sbatch)")
