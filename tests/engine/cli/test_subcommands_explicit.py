"""The CLI imports its subcommands by name: every one is there, and a broken one fails loudly (issue 24).

Before, ``engine/cli.py`` loaded them by string and swallowed ImportError, so a typo in a subcommand module made
the command vanish ("invalid choice") without a traceback.
"""
from __future__ import annotations

import subprocess
import sys

ENGINE_COMMANDS = {"train", "replay", "validate", "info", "plan", "templates", "new", "doctor", "evaluate", "infer",
                   "import", "export", "dataset", "search", "study"}


def _choices(parser) -> set:
    return set(next(a for a in parser._actions if a.dest == "command").choices)


def test_every_subcommand_is_on_the_command_line():
    from nnconsole.cli import build_parser
    from nnconsole.engine.cli.main import build_parser as engine_parser

    assert _choices(engine_parser()) == ENGINE_COMMANDS  # the engine's own: no GUI
    assert _choices(build_parser()) == ENGINE_COMMANDS | {"gui"}


def test_a_subcommand_that_fails_to_import_stops_the_cli_with_a_traceback():
    code = ("import sys; sys.modules['nnconsole.engine.cli.evaluate'] = None\n"  # what a broken module does
            "from nnconsole.cli import main\n"
            "main(['--help'])\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "nnconsole.engine.cli.evaluate" in result.stderr


def test_python_dash_m_nnconsole_has_the_gui_command():
    result = subprocess.run([sys.executable, "-m", "nnconsole", "gui", "--help"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "project" in result.stdout
