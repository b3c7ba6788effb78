"""Entry point of the one-folder nnconsole app: the GUI, the CLI, and the MPI workers in one binary.

A frozen app has no ``python -m``, so one executable does all three jobs, chosen by its arguments:

- no arguments, ``gui [ARGS]``, or a project file (the desktop entry's ``%f``) -> the desktop app
- ``--run-module MODULE [ARGS]``         -> ``python -m MODULE ARGS`` (workers: ``nnconsole.engine.train.worker``)
- ``-m MODULE [ARGS]``                   -> the same, so code that runs ``sys.executable -m ...`` works
- anything else                          -> the ``nnconsole`` CLI (``train``, ``new``, ``templates``...)
"""
from __future__ import annotations

import os
import runpy
import sys
from typing import List, Optional

RUN_MODULE_FLAGS = ("--run-module", "-m")
PROJECT_SUFFIXES = (".yaml", ".yml")
CLI_MODULES = ("nnconsole", "nnconsole.cli", "nnconsole.engine.cli.main")


def drop_working_folder_from_path() -> None:
    """Remove the working folder from sys.path before anything is imported (see nnconsole.engine.start_module).

    A frozen app imports from its bundle, but a ``''``, ``'.'`` or the working folder's own path on
    sys.path would still let a ``numpy.py`` in a project or run folder (the GUI's and the workers'
    working folders) be imported. Inline, like start_module.clean_sys_path: nothing is imported before this.
    """
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # the working folder was deleted: nothing can be imported from it either
        here = None
    sys.path[:] = [p for p in sys.path if os.path.isabs(p) and os.path.realpath(p) != here]


def _configure() -> None:
    """Frozen app: make Open MPI and mpi4py use the bundled prefix before anything imports them."""
    from nnconsole.engine.helper_processes import configure_frozen_environment

    configure_frozen_environment()


def run_module(module: str, args: List[str]) -> int:
    """Run ``module`` as ``__main__`` with ``sys.argv`` as ``python -m module args`` would set it."""
    sys.argv = [module] + list(args)
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
        if code is None or isinstance(code, int):
            return int(code or 0)
        print(code, file=sys.stderr)
        return 1
    return 0


def run_gui(args: List[str]) -> int:
    """Start the desktop app; say clearly when this build has no GUI module."""
    try:
        from nnconsole.app.shell.application import main as gui_main
    except ImportError as exc:
        print(f"nnconsole-app: the desktop app is not available in this build ({exc}); "
              "the command line works: nnconsole-app --help", file=sys.stderr)
        return 1
    return int(gui_main(args) or 0)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    drop_working_folder_from_path()
    _configure()
    if not argv or argv[0] == "gui":
        return run_gui(argv[1:])
    if len(argv) == 1 and argv[0].lower().endswith(PROJECT_SUFFIXES) and os.path.isfile(argv[0]):
        return run_gui(argv)  # opened from the file manager or the menu entry with a project file
    if argv[0] in RUN_MODULE_FLAGS:
        if len(argv) < 2:
            print(f"usage: {os.path.basename(sys.argv[0])} --run-module MODULE [ARGS...]", file=sys.stderr)
            return 2
        if argv[1] in CLI_MODULES:  # the CLI itself: call it rather than re-run an imported module
            return run_cli(argv[2:])
        return run_module(argv[1], argv[2:])
    return run_cli(argv)


def run_cli(args: List[str]) -> int:
    from nnconsole.cli import main as cli_main

    return int(cli_main(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
