"""``nnconsole study batch PROJECT --workers 1,2,4,8 [--policy linear,sqrt,none] [--warmup 0,2] [--tolerance 0.5]
[--epochs N] [--parallel K] [--study NAME] [--simulate|--real]`` and ``nnconsole study show [PROJECT|FOLDER]``.

Registered by ``nnconsole.engine.cli.main``. ``study batch`` trains each (workers, policy, warm-up) point as a
normal run (``engine.study``) and records the study in ``<results>/study/<name>/study.json``; rerunning it
resumes (complete points are not trained again). ``study show`` prints a study's table and recommendation. Exit
codes: 0 every point trained, 1 a point failed, 2 bad input, 3 stopped (Ctrl-C; rerun to resume).
"""
from __future__ import annotations

import argparse
import os
import signal
from typing import Callable, List, Optional

from nnconsole.engine.backend.device import gpu_count
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.launch.launcher import plan_for
from nnconsole.engine.project.schema import DEVICES
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.batch_study import (STUDY_FILE, BatchStudy, list_studies, read_study, study_dir,
                                                 write_study)
from nnconsole.engine.search.split_plan import machine_devices
from nnconsole.engine.search.trial_run import TrialRequest
from nnconsole.engine.plan.study_values import (parse_name, parse_policies, parse_tolerance, parse_warmups,
                                                parse_workers)
from nnconsole.engine.study.grid import StudyError, grid, merge, planned_points
from nnconsole.engine.study.run import StudyJob, run_study
from nnconsole.engine.study.table import render_study


def _say(text: str) -> None:
    print(text, flush=True)


def _checked(parse: Callable) -> Callable:
    """An argparse type from a grid parser: its ValueError message becomes argparse's one-line refusal."""
    def convert(text: str):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = parse.__name__
    return convert


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def cmd_study_batch(args: argparse.Namespace) -> int:
    project_path = os.path.abspath(args.project)
    project = load_valid_project(project_path, allow_outside_data=args.allow_outside_data)
    device = args.device or project.config.device
    gpus = gpu_count() if device != "cpu" else 0
    devices = machine_devices(device, gpus)
    simulate = not args.real
    largest = max(args.workers)
    if not simulate and largest > devices:
        raise StudyError(f"--real: {largest} workers need {largest} devices, this machine has {devices}; leave "
                         f"{largest} out of --workers, or simulate them (--simulate, the default)")
    width = 1 if simulate else largest
    if args.parallel * width > devices:
        raise StudyError(f"--parallel {args.parallel} x {width} process(es) per point = {args.parallel * width}, "
                         f"but this machine has {devices} device(s); use --parallel {max(1, devices // width)}")
    name = args.study or f"{project.name}-batch"
    root = runs.results_root(project_path)
    folder = study_dir(root, name)
    plan = lambda p, n: plan_for(p, n, args.device)  # noqa: E731
    points = planned_points(project, grid(args.workers, args.policy, args.warmup), simulate, plan)
    study = _study_for(folder, name, project_path, plan(project, 1).per_worker_batch, args)
    merge(study, points)
    study.tolerance = args.tolerance
    write_study(folder, study)
    request = TrialRequest(results_root=root, trials_dir=folder, epochs=args.epochs, device=args.device)
    job = StudyJob(folder, study, project, request, plan, parallel=args.parallel, simulate=simulate,
                   gpus=gpus if device != "cpu" else 0, asked={p.key for p in points})
    how = "simulated on this machine" if simulate else "as real workers"
    _say(f"study '{name}' in {folder}: {len(points)} points (workers {','.join(map(str, args.workers))} "
         f"{how}), {args.epochs or project.config.max_epoch} epoch(s) each, {args.parallel} at once")
    previous = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops as Ctrl-C does: points stop cleanly
    try:
        code = run_study(job, say=_say)
    finally:
        signal.signal(signal.SIGTERM, previous)
    _say("")
    _say(render_study(study))
    if code == ExitCode.STOPPED:
        _say(f"stopped: run the same command again to train the points left ({os.path.join(folder, STUDY_FILE)})")
    return code


def _study_for(folder: str, name: str, project_path: str, per_worker_batch: int,
               args: argparse.Namespace) -> BatchStudy:
    """The study recorded in ``folder`` when it trained the same project for as many epochs, else a new one."""
    recorded = read_study(folder)
    if recorded is None:
        if os.path.exists(os.path.join(folder, STUDY_FILE)):
            raise StudyError(f"{os.path.join(folder, STUDY_FILE)} is damaged or not a study; move it away, or give "
                             "another --study NAME")
        return BatchStudy(name=name, project=project_path, per_worker_batch=per_worker_batch, epochs=args.epochs)
    if os.path.abspath(recorded.project) != project_path:
        raise StudyError(f"study '{name}' belongs to {recorded.project}; give another --study NAME")
    if recorded.epochs != args.epochs or recorded.per_worker_batch != per_worker_batch:
        was = f"--epochs {recorded.epochs}" if recorded.epochs else "no --epochs"
        raise StudyError(f"study '{name}' was made with {was} and batch {recorded.per_worker_batch} per worker: its "
                         "points compare only under the same settings; give the same, or another --study NAME")
    return recorded


def cmd_study_show(args: argparse.Namespace) -> int:
    folders = _study_folders(os.path.abspath(args.target), args.study)
    if not folders:
        _say(f"nnconsole study show: no study found for {args.target}" + (f" named '{args.study}'" if args.study
             else "") + " (make one with 'nnconsole study batch PROJECT --workers 1,2,4')")
        return ExitCode.BAD_INPUT
    for i, folder in enumerate(folders):
        study = read_study(folder)
        if study is not None:
            _say(("\n" if i else "") + render_study(study))
    return ExitCode.OK


def _study_folders(target: str, name: Optional[str]) -> List[str]:
    """A study folder itself, a results folder holding studies, or a project file's studies."""
    if os.path.isdir(target):
        if read_study(target) is not None:
            return [target]
        found = list_studies(target)
    else:
        found = list_studies(runs.results_root(target))
    return [f for f in found if os.path.basename(f) == name] if name else found


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def register(add: Callable) -> None:
    """Add the ``study`` subcommand (``batch``, ``show``) through nnconsole.engine.cli.main's ``add``."""
    p = add("study", lambda args: p.print_help() or ExitCode.BAD_INPUT, "Large-batch study: train the project at "
            "several worker counts and learning-rate policies (simulated or real) and recommend the largest worker "
            "count whose error stays within a tolerance of one worker's.")
    sub = p.add_subparsers(dest="study_command", metavar="STUDY_COMMAND")
    b = sub.add_parser("batch", help="train the study's points (rerun to resume)",
                       description="Train each (workers, policy, warm-up) point as a normal run and record the study "
                       "in <results>/study/<name>/study.json; rerun the same command to resume.")
    b.set_defaults(func=cmd_study_batch)
    b.add_argument("project", help="project YAML file")
    b.add_argument("--workers", type=_checked(parse_workers), required=True, metavar="1,2,4,8",
                   help="worker counts to train, 1 among them (the baseline)")
    b.add_argument("--policy", type=_checked(parse_policies), default=["linear", "none"], metavar="linear,sqrt,none",
                   help="learning-rate scaling policies (multi_gpu.scaling; default linear,none)")
    b.add_argument("--warmup", type=_checked(parse_warmups), default=[0.0], metavar="0,2",
                   help="warm-up lengths in epochs (multi_gpu.warmup_epochs; default 0); trained only where the "
                   "learning rate is scaled")
    b.add_argument("--tolerance", type=_checked(parse_tolerance), default=0.005, metavar="POINTS",
                   help="how many points of validation error above one worker's a recommendation may be "
                   "(default 0.5)")
    b.add_argument("--epochs", type=_positive, metavar="N", help="each point's max_epoch (default: config.max_epoch)")
    b.add_argument("--parallel", type=_positive, default=1, metavar="K", help="points at once (default 1); never "
                   "more processes than this machine's devices")
    b.add_argument("--study", type=_checked(parse_name), metavar="NAME", help="the study's name (default: <project name>-batch)")
    mode = b.add_mutually_exclusive_group()
    mode.add_argument("--simulate", action="store_true", help="N > 1 workers simulated exactly on this machine's "
                      "devices (the default)")
    mode.add_argument("--real", action="store_true", help="N > 1 as N real workers (needs N devices)")
    b.add_argument("--device", choices=DEVICES, help="override config.device for every point")
    b.add_argument("--allow-outside-data", action="store_true", help="allow dataset paths outside the project's "
                   "folder")
    s = sub.add_parser("show", help="print a study's table and recommendation",
                       description="Print the table and recommendation of a study: give its folder, a results "
                       "folder or the project file (every study of the project).")
    s.set_defaults(func=cmd_study_show)
    s.add_argument("target", nargs="?", default=".", metavar="PROJECT|FOLDER", help="project file or study folder "
                   "(default: the current folder)")
    s.add_argument("--study", metavar="NAME", help="only the study of this name")
