"""What one rank process keeps around the trainer: the stop request (signal or STOP file) and its log files.

Pure Python (no nnabla). ``STOP_FILE`` is the protocol's (``nnconsole.engine.rundir.protocol``), re-exported here.
"""
from __future__ import annotations

import logging
import os
import signal

from nnconsole.engine.rundir.protocol import STOP_FILE
from nnconsole.engine.rundir.protocol import LOG_FILE


class StopRequest:
    """Set by SIGINT/SIGTERM or a STOP file in the run directory; honoured at an update boundary."""

    def __init__(self, run_dir: str) -> None:
        self.path = os.path.join(run_dir, STOP_FILE)
        self.flag = False

    def install(self) -> None:
        def handler(signum, frame):  # noqa: ARG001
            self.flag = True
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                signal.signal(sig, handler)
            except ValueError:  # not the main thread (tests)
                pass

    def request(self) -> None:
        """Ask for the stop from inside the process (a failing run: its cache build must not outlive it)."""
        self.flag = True

    def requested(self) -> bool:
        return self.flag or os.path.exists(self.path)


def rank_logger(run_dir: str, rank: int) -> logging.Logger:
    """The logger of one rank: ``logs/rank<r>.log``, and on rank 0 the run's human log too."""
    os.makedirs(os.path.join(run_dir, "logs"), exist_ok=True)
    logger = logging.getLogger(f"nnconsole.rank{rank}.{run_dir}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    fmt = logging.Formatter("%(asctime)s rank%(rank)s %(levelname)s %(message)s".replace("%(rank)s", str(rank)))
    handler = logging.FileHandler(os.path.join(run_dir, "logs", f"rank{rank}.log"))
    handler.setFormatter(fmt)
    logger.addHandler(handler)
    if rank == 0:
        human = logging.FileHandler(os.path.join(run_dir, LOG_FILE))
        human.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(human)
    return logger


def close_logger(logger: logging.Logger) -> None:
    """Close and detach the handlers ``rank_logger`` opened."""
    for handler in list(logger.handlers):
        handler.close()
        logger.removeHandler(handler)
