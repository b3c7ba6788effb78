"""What the launcher asks of every worker: ``launch.json`` in the run directory (``WorkerOptions``).

Pure Python: the launcher and replay read and write it without importing the trainer.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Optional

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.rundir.protocol import LAUNCH_FILE
from nnconsole.engine.rundir.typed_json import read_run_json


@dataclass
class WorkerOptions:
    """What the launcher asks of every worker (written to ``launch.json`` in the run directory)."""

    max_epoch: Optional[int] = None  # override of config.max_epoch
    device: Optional[str] = None  # override of config.device
    resume: bool = False
    workers: int = 1

    @classmethod
    def read(cls, run_dir: str) -> "WorkerOptions":
        return read_run_json(os.path.join(run_dir, LAUNCH_FILE), cls, required=False, fix="delete launch.json "
                             "to use the project's settings, or start a new run") or cls()

    def write(self, run_dir: str) -> None:
        atomic_write(os.path.join(run_dir, LAUNCH_FILE), json.dumps(self.__dict__, indent=2).encode())
