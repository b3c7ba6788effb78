"""``nnconsole``: the command line every user has, and the one the GUI drives through QProcess."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable, List, Optional, Sequence

from nnconsole import __version__
from nnconsole.engine.cli import dataset_create, evaluate, infer, interop, search, study  # every further subcommand, by name
from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.project.schema import DEVICES, LAUNCHERS, PRECISIONS, SCALING_POLICIES
from nnconsole.engine.rundir.protocol import RUN_DIR_EVENT, RunStatus, announce
from nnconsole.engine.errors import EXIT_CODE_MEANINGS, ExitCode
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.plan.hosts import host_problem, network_problem, read_hostfile_problems, workers_for_hosts
from nnconsole.engine.launch.launcher import launch, LaunchRequest, plan_for
from nnconsole.engine.launch.progress import ProgressPrinter
from nnconsole.engine.launch.overrides import describe_overrides
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.launch.replay import replay
from nnconsole.engine.project.structure import all_networks, FIRST_OPTIMIZER, MAIN_NETWORK, optimizer_project
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.network.layer_table import info_text
from nnconsole.engine.plan.explain import format_plan_table
from nnconsole.templates import list_templates
from nnconsole.engine.project.templates import create_from_template
from nnconsole.engine.doctor.checks import run_doctor
from nnconsole.engine.plan.timing_inputs import check_prediction_options, prediction_report


def _say(text: str, err: bool = False) -> None:
    """Print, ignoring a reader that went away (a closed pipe, a killed GUI): training goes on."""
    try:
        print(text, file=sys.stderr if err else sys.stdout, flush=True)
    except (OSError, ValueError):
        pass


def _int_list(text: str) -> List[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or a comma-separated list like 1,2,4, got '{text}'")
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"worker counts must be >= 1, got '{text}'")
    return values


def _positive_int(text: str) -> int:
    value = _int_list(text)
    if len(value) != 1:
        raise argparse.ArgumentTypeError(f"expected one number, got '{text}'")
    return value[0]


def _host_list(text: str) -> List[str]:
    """``--hosts H1,H2:slots``: host names only (mpiexec hands them to ssh, where '-o...' is an option)."""

    hosts = [h for h in text.split(",") if h]
    for host in hosts:
        problem = host_problem(host)
        if problem:
            raise argparse.ArgumentTypeError(problem)
    return hosts


def _hostfile(text: str) -> str:
    """``--hostfile FILE``: made absolute here, and every line must name a host (see nnconsole.engine.plan.hosts)."""

    path = _user_path(text)
    problems = read_hostfile_problems(path)
    if problems:
        raise argparse.ArgumentTypeError("; ".join(problems))
    return path


def _network(text: str) -> str:
    """``--network NET``: subnets or interface names (nnconsole.engine.plan.hosts.network_problem)."""

    problem = network_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def _user_path(text: Optional[str]) -> Optional[str]:
    """A path the user typed, resolved against their working folder once, here: the launcher and the
    workers run in other folders (the workers in the run's parent), where a relative path means something else."""
    return os.path.abspath(text) if text else text


# ---- commands -------------------------------------------------------------------------------------
def cmd_train(args: argparse.Namespace) -> int:
    if not args.project and not args.resume:
        print("nnconsole train: give a PROJECT file, or --resume RUN_DIR", file=sys.stderr)
        return ExitCode.BAD_INPUT
    request = LaunchRequest(project_path=_user_path(args.project) or "", output=_user_path(args.output),
                            workers=args.gpus, epochs=args.epochs, device=args.device, hosts=args.hosts or [],
                            hostfile=args.hostfile or "", launcher=args.launcher,
                            mpiexec_args=args.mpiexec_arg or [], resume_dir=_user_path(args.resume),
                            allow_outside_data=args.allow_outside_data, oversubscribe=args.oversubscribe,
                            network=args.network or "", allreduce_precision=args.allreduce_precision,
                            allreduce_overlap=args.allreduce_overlap, simulate_workers=args.simulate_workers)
    printer = ProgressPrinter(live=False if args.quiet else None)
    if args.quiet:
        printer = lambda record: None  # noqa: E731

    def started(run_dir: str, plan) -> None:
        announce(args.events, RUN_DIR_EVENT, run_dir=run_dir, pid=os.getpid())  # for the GUI: no text parsing
        _say(f"run directory: {run_dir}")
        _print_plan_summary(plan)
        _print_overrides(request)

    result = launch(request, report=printer, on_started=started, warn=lambda m: _say(f"warning: {m}", err=True))
    if hasattr(printer, "close"):
        try:
            printer.close()
        except (OSError, ValueError):
            pass
    return _print_result(result)


def _print_plan_summary(plan) -> None:
    """The plan the launcher computed for this run: what N workers change, and why."""
    _say(f"plan: {plan.workers} worker(s), batch {plan.per_worker_batch} per worker, logical batch "
         f"{plan.logical_batch}, learning rate {plan.effective_lr:g}")
    for note in plan.notes:
        _say(f"  note: {note}")
    for warning in plan.warnings:
        _say(f"  warning: {getattr(warning, 'message', warning)}")


def _print_overrides(request) -> None:
    """The project settings this run uses in place of the project's (``--allreduce-precision`` ...)."""

    given = describe_overrides(request.__dict__)
    if given:
        _say(f"this run: {given}")


def _print_result(result) -> int:
    status = runs.read_status(result.run_dir)
    if result.status == RunStatus.FINISHED:
        last = [r for r in runs.iter_metrics(result.run_dir, "validation")]
        if last and status and status.best_validation_error is not None:
            final = last[-1]
            _say(f"finished: validation loss {final['loss']:.4f}, error {final['error']:.4f} "
                 f"(accuracy {1 - final['error']:.2%} for classifiers); best error "
                 f"{status.best_validation_error:.4f} at epoch {status.best_epoch}")
        _say(f"results: {result.run_dir}")
        return ExitCode.OK
    if result.status == RunStatus.STOPPED:
        _say(result.message)
        return result.exit_code
    _say(f"training failed: {result.message}", err=True)
    _say(f"logs: {os.path.join(result.run_dir, 'logs')}", err=True)
    return result.exit_code or ExitCode.FAILED


def cmd_replay(args: argparse.Namespace) -> int:
    return replay(_user_path(args.run_dir), quiet=args.quiet, events=args.events)


def cmd_validate(args: argparse.Namespace) -> int:
    project = load_valid_project(args.project, allow_outside_data=args.allow_outside_data)
    info = infer_network(project.network, all_networks(project), MAIN_NETWORK)  # Units use the other networks
    stored = f" ({info.total_stored:,} stored)" if info.total_stored != info.total_params else ""
    print(f"{args.project}: OK ({len(project.network.layers)} layers, {info.total_params:,} parameters{stored}, "
          f"{info.total_macs:,} multiply-adds per sample)")
    return ExitCode.OK


def cmd_info(args: argparse.Namespace) -> int:
    print(info_text(load_valid_project(args.project, check_datasets=False)))  # one table per network (issue 17)
    return ExitCode.OK


def cmd_plan(args: argparse.Namespace) -> int:
    check_prediction_options(args.link, args.latency_ms, args.compute_ms)  # before any table is printed
    project = load_valid_project(args.project, check_datasets=False)
    hosts = args.hosts or project.multi_gpu.hosts  # without --gpus the hosts' slots decide, as 'train' does
    workers, hosts_note = workers_for_hosts(None, project.multi_gpu.workers, [] if args.gpus else hosts,
                                            "--hosts" if args.hosts else "multi_gpu.hosts")
    counts = args.gpus or [workers]
    plans = [plan_for(project, n, args.device, args.policy) for n in counts]
    if hosts_note:
        plans[0].notes.insert(0, hosts_note)
    # one table per optimizer (issue 17): each is planned as the first one is
    others = {e.name: (e.network, [plan_for(optimizer_project(project, e), n, args.device, args.policy) for n in counts])
              for e in project.optimizers}
    if args.json:
        data = [p.to_dict() for p in plans]
        print(json.dumps({FIRST_OPTIMIZER: data, **{k: [p.to_dict() for p in v] for k, (_, v) in others.items()}}
                         if others else data, indent=2))
        return ExitCode.OK
    if others:
        print(f"optimizer {FIRST_OPTIMIZER} (network Main):")
    print(format_plan_table(plans))
    for name, (network, extra) in others.items():
        print(f"\noptimizer {name} (network {network}):")
        print(format_plan_table(extra))
    if args.hosts or args.link or args.compute_ms is not None or args.latency_ms is not None or \
            project.multi_gpu.link.strip():  # the predictor (issue 20); a project naming its link asks for it

        print("\n" + prediction_report(project, hosts, args.gpus or [project.multi_gpu.workers],
                                        lambda n: plan_for(project, n, args.device, args.policy),
                                        args.link, args.latency_ms, args.compute_ms))
    return ExitCode.OK


def cmd_templates(args: argparse.Namespace) -> int:
    for t in list_templates():
        print(f"{t.name:22s} {t.title}")
    return ExitCode.OK


def cmd_new(args: argparse.Namespace) -> int:
    path = create_from_template(args.template, args.destination)
    print(f"created {path}")
    return ExitCode.OK


def cmd_doctor(args: argparse.Namespace) -> int:
    return run_doctor(workers=args.gpus, hosts=args.hosts or [])


def _add_train_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", "-o", metavar="DIR", help="results root (default: <project folder>/results/<project file name>)")
    p.add_argument("--epochs", type=_positive_int, metavar="N", help="override config.max_epoch")
    p.add_argument("--gpus", "--workers", dest="gpus", type=_positive_int, metavar="N",
                   help="number of workers (GPUs, or CPU processes); default multi_gpu.workers")
    p.add_argument("--device", choices=DEVICES, help="override config.device")
    p.add_argument("--simulate-workers", type=_positive_int, metavar="N", help="train in this one process exactly as "
                   "N workers would (their batches, logical batch, learning rate, schedule and gradient, one worker "
                   "after another) to see what N workers do to the model before owning N GPUs; with --gpus M (N a multiple of M) "
                   "each of M real workers simulates N/M; a resume keeps it")
    p.add_argument("--hosts", type=_host_list, metavar="H1,H2", help="hosts for mpiexec (host or host:slots)")
    p.add_argument("--hostfile", type=_hostfile, metavar="FILE", help="mpiexec hostfile (lines: host [slots=N])")
    p.add_argument("--oversubscribe", action="store_true", help="allow more workers than this machine's cores "
                   "(refused otherwise, whatever the project asks)")
    p.add_argument("--network", type=_network, metavar="NET", help="with --hosts/--hostfile: the subnets or "
                   "interfaces joining the hosts (e.g. 10.0.0.0/24 or eth1); default $NNCONSOLE_MPI_NETWORK")
    p.add_argument("--launcher", choices=LAUNCHERS, help="default: srun inside Slurm")
    p.add_argument("--allreduce-precision", choices=PRECISIONS, help="override multi_gpu.allreduce_precision for "
                   "this run: half sends the CPU all-reduce's gradients as float16 (half the bytes on the wire)")
    p.add_argument("--allreduce-overlap", action=argparse.BooleanOptionalAction, help="override "
                   "multi_gpu.allreduce_overlap for this run: CPU runs across hosts all-reduce each bucket of gradients "
                   "while backward goes on (--no-allreduce-overlap: after it)")
    p.add_argument("--mpiexec-arg", action="append", metavar="ARG", help="extra argument for mpiexec/srun "
                   "(repeatable), e.g. --mpiexec-arg=--mca --mpiexec-arg=pml --mpiexec-arg=ucx")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    _add_events_option(p)
    p.add_argument("--allow-outside-data", action="store_true", help="allow dataset paths that point outside "
                   "the project's folder (refused by default: see docs/security.md)")


def _add_events_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--events", metavar="FILE", type=_user_path, help="append machine-readable events to FILE, one "
                   'JSON object a line (e.g. {"event": "run_dir", "run_dir": ...}); the GUI reads them')


def build_parser(extra_commands: Sequence[Callable] = ()) -> argparse.ArgumentParser:
    """The parser of every engine subcommand, plus ``extra_commands`` (``register(add)`` functions: the GUI's
    ``gui`` command, added by ``nnconsole.cli`` so that the engine never imports the GUI)."""
    parser = argparse.ArgumentParser(prog="nnconsole", description="Train nnabla networks from project files, "
                                     "on one process or N workers under MPI.",
                                     epilog="exit codes: " + ", ".join(f"{int(code)} {meaning}" for code, meaning
                                                                      in EXIT_CODE_MEANINGS.items()))
    parser.add_argument("--version", action="version", version=f"nnconsole {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, fn: Callable, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=fn)
        return p

    p = add("train", cmd_train, "Train a project (one process, or N workers with --gpus N).")
    p.add_argument("project", nargs="?", help="project YAML file")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue a stopped or failed run from its last checkpoint, "
                   "on the workers and hosts it was started with unless --gpus, --hosts or --hostfile say otherwise")
    _add_train_options(p)
    p = add("replay", cmd_replay, "Re-run a saved run from its snapshot with the same seed and compare metrics.")
    p.add_argument("run_dir")
    p.add_argument("--quiet", "-q", action="store_true")
    _add_events_option(p)
    p = add("validate", cmd_validate, "Check a project file and its datasets; print every problem found.")
    p.add_argument("project")
    p.add_argument("--allow-outside-data", action="store_true", help="allow dataset paths that point outside "
                   "the project's folder")
    p = add("info", cmd_info, "Print the network's layer table: output shapes, parameters, multiply-adds.")
    p.add_argument("project")
    p = add("plan", cmd_plan, "Show what N workers change: batch, learning rate, intervals, warnings (one table "
            "per optimizer when the project has several).")
    p.add_argument("project")
    p.add_argument("--gpus", "--workers", dest="gpus", type=_int_list, metavar="N[,N...]",
                   help="worker counts, e.g. 1,2,4,8")
    p.add_argument("--policy", choices=SCALING_POLICIES,
                   help="override multi_gpu.scaling")
    p.add_argument("--device", choices=DEVICES)
    p.add_argument("--json", action="store_true", help="machine-readable output (used by the GUI): a list of "
                   "plans, or with several optimizers a mapping of optimizer name to its list")
    p.add_argument("--hosts", type=_host_list, metavar="H1:S,H2:S", help="predict the time per epoch of each "
                   "layout of these hosts (host:slots), e.g. a:2,b:2")
    p.add_argument("--link", metavar="BW[,LATENCY]", help="the network between hosts for the prediction, e.g. "
                   "1gbit,100us (as 'doctor --hosts' measures it; default: the project's multi_gpu.link, else gigabit "
                   "Ethernet is assumed)")
    p.add_argument("--latency-ms", type=float, metavar="MS", help="the network's latency per message (instead of "
                   "--link's second part)")
    p.add_argument("--compute-ms", type=float, metavar="MS", help="one worker's compute per iteration at the "
                   "project's batch (default: as the project's runs on this machine measured it)")
    p = add("templates", cmd_templates, "List the bundled project templates.")
    p = add("new", cmd_new, "Create a new project folder from a template.")
    p.add_argument("destination", help="folder to create")
    p.add_argument("--template", "-t", default="digits_cnn", help="template name (see 'nnconsole templates')")
    p = add("doctor", cmd_doctor, "Check Python, nnabla, GPUs, NCCL, MPI and run an all-reduce smoke test.")
    p.add_argument("--gpus", "--workers", dest="gpus", type=_positive_int, default=2, metavar="N")
    p.add_argument("--hosts", type=_host_list, metavar="H1,H2")
    for register in (evaluate.register, infer.register, interop.register, dataset_create.register, search.register,
                     study.register, *extra_commands):
        register(add)
    return parser


def main(argv: Optional[List[str]] = None, extra_commands: Sequence[Callable] = ()) -> int:
    """Run one ``nnconsole`` command; returns its exit code (``ExitCode``)."""
    parser = build_parser(extra_commands)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitCode.BAD_INPUT
    try:
        return int(args.func(args) or ExitCode.OK)
    except NnconsoleError as exc:  # every engine error says what to fix and carries its exit code
        _say(f"nnconsole {args.command}: {exc}", err=True)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        _say("interrupted", err=True)
        return ExitCode.INTERRUPTED
    except OSError as exc:
        if exc.errno is None:
            raise
        where = f" ({exc.filename})" if exc.filename else ""  # full disk, permissions: no traceback needed
        _say(f"nnconsole {args.command}: {exc.strerror}{where}", err=True)
        return ExitCode.FAILED


if __name__ == "__main__":
    raise SystemExit(main())
