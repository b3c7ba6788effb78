"""The ``nnconsole`` command: the engine's subcommands plus the desktop app's ``gui``.

The engine never imports the GUI (an import-linter contract), so the one place that puts both on one command
line is here, above both. ``nnconsole.app.cli`` is Qt-free: PySide6 is imported only when ``gui`` runs.
"""
from __future__ import annotations

import argparse
from typing import List, Optional

from nnconsole.app import cli as gui_cli
from nnconsole.engine.cli import main as engine_cli


EXTRA_COMMANDS = (gui_cli.register,)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (scripts/gen_docs.py documents it)."""
    return engine_cli.build_parser(EXTRA_COMMANDS)


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``nnconsole ARGS``; returns the exit code."""
    return engine_cli.main(argv, extra_commands=EXTRA_COMMANDS)


if __name__ == "__main__":
    raise SystemExit(main())
