"""The engine's one error base class: every error the user can act on derives from ``NnconsoleError``.

Each class says what the CLI returns for it (``exit_code``) and whether its message alone tells the
user what to fix (``user_error``: printed without a traceback). A worker that fails writes these flags
into its error record (``nnconsole.engine.run_protocol.ErrorRecord``), so the launcher reads them as data
instead of matching exception names. This module imports nothing of the engine but the protocol, so
every module can derive its errors from it.
"""
from __future__ import annotations

from nnconsole.engine.run_protocol import ExitCode


class NnconsoleError(Exception):
    """An error the user can act on from its message (a bad project, a busy run, a missing mpiexec...)."""

    exit_code: ExitCode = ExitCode.BAD_INPUT  # refused before or while reading the user's input
    user_error: bool = True  # the message says what to fix: no traceback
    diverged: bool = False  # training diverged: resuming with the same settings would diverge again


class RunFailedError(NnconsoleError):
    """A run that failed for a reason the message explains (not bad input): exit code 1, no traceback."""

    exit_code = ExitCode.FAILED
