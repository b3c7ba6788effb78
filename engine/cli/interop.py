"""``nnconsole import`` and ``nnconsole export``: subcommands contributed through ``register(add)``.

    nnconsole import FILE.(sdcproj|nntxt|nnp) -o PROJECT.yaml [--force] [--events FILE]
    nnconsole export RUN_DIR --format nnp|nntxt|onnx [-o FILE] [--best] [--opset N]
    nnconsole export PROJECT.yaml --format nntxt|sdcproj [-o FILE] [--force]
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from nnconsole.engine.atomic import target_problem
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.interop.files import export_run, import_to_project
from nnconsole.engine.interop.report import InteropError
from nnconsole.engine.project.paths import outside_project
from nnconsole.engine.rundir.protocol import RESOLVED_FILE
from nnconsole.engine.interop.nntxt.exporter import export_nntxt
from nnconsole.engine.interop.run_export import refuse_existing
from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj
from nnconsole.engine.rundir.protocol import IMPORT_FINISHED_EVENT, announce

EXIT_BAD_INPUT = ExitCode.BAD_INPUT
PROJECT_FORMATS = ("nntxt", "sdcproj")  # what a project file (not a trained run) exports to


def cmd_import(args: argparse.Namespace) -> int:
    out = os.path.abspath(args.output)
    problem = target_problem(out)
    if problem:
        print(f"nnconsole import: {problem}; choose another -o", file=sys.stderr)
        return EXIT_BAD_INPUT
    if os.path.exists(out) and not args.force:
        print(f"nnconsole import: {out} exists; choose another -o or add --force", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        result, wanted = import_to_project(args.file, out, backup=args.force)
    except InteropError as exc:
        print(f"nnconsole import: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    project = result.project
    print(result.report())
    if wanted:
        print(f"initial parameters (the weights the file carried, used as the starting point): {wanted}")
    outside = _datasets_outside(project)
    if outside:
        print(f"note: the datasets lie outside the project folder ({', '.join(outside)}); copy them next to "
              f"{os.path.basename(out)} and use relative paths, or train with the flag that allows outside data")
    print(f"project: {out}")
    # The GUI runs this command and shows the report from this event, never from the text above.
    announce(args.events, IMPORT_FINISHED_EVENT, project=out, report=result.report(),
             unsupported=list(result.unsupported), notes=list(result.notes), problems=list(result.problems),
             initial_parameters=wanted,
             datasets_outside=outside)
    return ExitCode.OK


def _datasets_outside(project) -> list:
    """Dataset paths outside the project's folder (which nnconsole refuses to read unless allowed)."""
    found = []
    for key in ("training", "validation"):
        value = getattr(project.datasets, key)
        if value and outside_project(project, value):
            found.append(value)
    return sorted(set(found))


def cmd_export(args: argparse.Namespace) -> int:
    source = args.source
    try:
        if os.path.isdir(source) and args.format == "sdcproj":
            print(f"nnconsole export: a run directory exports its model (nnp, nntxt, onnx); for sdcproj give a "
                  f"project file, such as the run's own {os.path.join(source, RESOLVED_FILE)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if os.path.isdir(source):
            result = export_run(source, args.format, args.output, which="best" if args.best else "final",
                                opset=args.opset, force=args.force)
        else:
            if args.format not in PROJECT_FORMATS:
                print(f"nnconsole export: a project file exports to {' or '.join(PROJECT_FORMATS)}; for "
                      f"{args.format} give a run directory of a trained run", file=sys.stderr)
                return EXIT_BAD_INPUT

            project = load_valid_project(source, check_datasets=False)
            output = args.output or os.path.splitext(source)[0] + "." + args.format
            refuse_existing([output], args.force)
            write = export_sdcproj if args.format == "sdcproj" else export_nntxt
            result = write(project, output)
    except InteropError as exc:
        print(f"nnconsole export: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(result.report())
    return ExitCode.OK


def register(add: Callable) -> None:
    """Add the ``import`` and ``export`` subcommands (called by nnconsole.engine.cli.main.build_parser)."""
    p = add("import", cmd_import, "Import an NNC project (.sdcproj) or an nnabla/NNC .nntxt/.nnp as a project file.")
    p.add_argument("file", help=".sdcproj, .nntxt, .prototxt, .protobuf or .nnp file")
    p.add_argument("--output", "-o", required=True, metavar="PROJECT.yaml", help="project file to write")
    p.add_argument("--force", action="store_true", help="overwrite an existing project file (keeps a .bak)")
    p.add_argument("--events", metavar="FILE", help="append a machine-readable JSON line (event 'import_finished': "
                   "project, report, unsupported, notes) to FILE when the project is written (used by the GUI)")
    p = add("export", cmd_export, "Export a trained run (nnp, nntxt, onnx) for nnabla tools, or a project "
                                         "(nntxt, or sdcproj for Neural Network Console).")
    p.add_argument("source", help="run directory, or a project YAML for --format nntxt or sdcproj")
    p.add_argument("--format", "-f", required=True, choices=("nnp", "nntxt", "onnx", "sdcproj"))
    p.add_argument("--output", "-o", metavar="FILE", help="output file (default: next to the source)")
    p.add_argument("--best", action="store_true", help="export the best model instead of the final one")
    p.add_argument("--opset", type=int, help="ONNX opset (default 13)")
    p.add_argument("--force", action="store_true", help="replace output files that already exist (a device or "
                   "FIFO is written into, never replaced; a folder never)")
