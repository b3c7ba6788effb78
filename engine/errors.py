"""The engine's one error base class: every error the user can act on derives from ``NnconsoleError``.

Each class says what the CLI returns for it (``exit_code``) and whether its message alone tells the
user what to fix (``user_error``: printed without a traceback). A worker that fails writes these flags
into its error record (``nnconsole.engine.rundir.protocol.ErrorRecord``), so the launcher reads them as data
instead of matching exception names. The exit codes themselves (``ExitCode``) live here too: this module imports
nothing of nnconsole, so every module can derive its errors from it and every process reads the same codes.
"""
from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Exit status of ``nnconsole`` commands and of worker processes (the GUI reads the same)."""

    OK = 0
    FAILED = 1  # the run or command failed (crash, divergence, a killed rank)
    BAD_INPUT = 2  # refused: the project, a dataset, an option or a file given is wrong (no traceback)
    STOPPED = 3  # stopped on request with a checkpoint; resumable
    INTERRUPTED = 130  # Ctrl-C before a run existed


EXIT_CODE_MEANINGS = {
    ExitCode.OK: "finished", ExitCode.FAILED: "failed", ExitCode.BAD_INPUT: "refused: bad input (the message says "
    "what to fix)", ExitCode.STOPPED: "stopped with a checkpoint (resumable)", ExitCode.INTERRUPTED: "interrupted",
}


def exit_code_of(value: object, default: ExitCode = ExitCode.FAILED) -> ExitCode:
    """``value`` as an ExitCode when it is one (read from a file another process wrote), else ``default``."""
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    try:
        return ExitCode(value)
    except ValueError:
        return default


class NnconsoleError(Exception):
    """An error the user can act on from its message (a bad project, a busy run, a missing mpiexec...)."""

    exit_code: ExitCode = ExitCode.BAD_INPUT  # refused before or while reading the user's input
    user_error: bool = True  # the message says what to fix: no traceback
    diverged: bool = False  # training diverged: resuming with the same settings would diverge again


class RunFailedError(NnconsoleError):
    """A run that failed for a reason the message explains (not bad input): exit code 1, no traceback."""

    exit_code = ExitCode.FAILED


class TrainingError(RunFailedError, RuntimeError):
    """Training cannot go on (NaN loss, bad data...); the message says why and what was kept."""

    diverged = True  # resuming with the same settings would fail the same way
