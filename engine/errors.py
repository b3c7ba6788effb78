"""The engine's user-facing error types in one place, so the CLI prints them without a traceback."""
from __future__ import annotations

from engine.checkpoint import CheckpointError
from engine.comm import CommError
from engine.device import DeviceError
from engine.launch import LaunchError
from engine.plan import PlanError
from engine.project.errors import ProjectError
from engine.run_json import RunFileError
from engine.run_lock import RunBusyError
from engine.train import TrainingError


from engine.data import DatasetError
from engine.interop import InteropError

USER_ERRORS = (ProjectError, PlanError, LaunchError, DeviceError, CommError, CheckpointError,
               TrainingError, DatasetError, InteropError, RunBusyError, RunFileError)
