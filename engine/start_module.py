"""The entry of every Python helper process: ``python .../nnconsole/engine/start_module.py MODULE ARGS``.

It runs ``python -m MODULE ARGS`` without the working folder on sys.path, so a ``numpy.py`` in a project or
run folder (the GUI's and the workers' working folders) is never imported instead of numpy. It is started as a
script file on purpose, not with ``-m`` or ``-c``: both put the working folder first on sys.path before the
first import (``-m`` even imports ``runpy`` from there, so a ``runpy.py`` in the run folder would run), while a
script puts only its own folder there, which is this installed package's. Python 3.10 has no ``-P``, and ``-I``
would also drop PYTHONPATH (the benchmarks point it at another engine tree).

A process list and logs/launcher.log show a readable command: ``python .../start_module.py
nnconsole.engine.train.worker RUN_DIR``. Nothing but ``os`` and ``sys`` (loaded before any script runs) is
imported until sys.path is clean: this file imports nothing of nnconsole.
"""
import os
import sys


def clean_sys_path() -> None:
    """Drop relative entries, the working folder and this script's own folder from sys.path."""
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # the working folder was deleted: nothing can be imported from it anyway
        here = None
    own = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:] = [p for p in sys.path if os.path.isabs(p) and os.path.realpath(p) not in (here, own)]


def main() -> None:
    """Run ``sys.argv[1]`` as ``__main__`` with the rest as its arguments (what ``python -m`` does)."""
    if len(sys.argv) < 2:
        sys.exit(f"usage: python {os.path.basename(__file__)} MODULE [ARGS...]")
    clean_sys_path()
    import runpy  # deferred: only after sys.path is clean (a runpy.py in the working folder must not run)

    runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
