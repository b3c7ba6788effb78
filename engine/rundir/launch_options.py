"""What the launcher asks of every worker: ``launch.json`` in the run directory (``WorkerOptions``).

Pure Python: the launcher and replay read and write it without importing the trainer.
"""
from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, field
from typing import List, Optional

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.rundir.protocol import LAUNCH_FILE
from nnconsole.engine.rundir.typed_json import read_run_json


def this_machine() -> str:
    """This computer's host name, as launch.json records it."""
    return socket.gethostname()


@dataclass
class WorkerOptions:
    """What the launcher asks of every worker (written to ``launch.json`` in the run directory)."""

    max_epoch: Optional[int] = None  # override of config.max_epoch
    device: Optional[str] = None  # override of config.device
    resume: bool = False
    workers: int = 1  # processes started (1 for a simulated run)
    # --simulate-workers N: this one process trains as N workers would (engine/train/simulated.py); 0: no
    simulate_workers: int = 0
    hosts: List[str] = field(default_factory=list)  # the hosts the run was started on (--hosts or the project's)
    hostfile: str = ""  # its hostfile (--hostfile or the project's); a resume keeps both unless given new ones
    # The machine that launched it (the epoch-time prediction uses only runs measured here); '' in older runs.
    machine: str = field(default_factory=lambda: this_machine())

    @classmethod
    def read(cls, run_dir: str) -> "WorkerOptions":
        return cls.recorded(run_dir) or cls()

    @classmethod
    def recorded(cls, run_dir: str) -> Optional["WorkerOptions"]:
        """The run's launch.json, or None when it has none."""
        return read_run_json(os.path.join(run_dir, LAUNCH_FILE), cls, required=False, fix="delete launch.json "
                             "to use the project's settings, or start a new run")

    def write(self, run_dir: str) -> None:
        atomic_write(os.path.join(run_dir, LAUNCH_FILE), json.dumps(self.__dict__, indent=2).encode())
