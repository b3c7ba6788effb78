"""The engine's user-facing error types in one place, so the CLI prints them without a traceback."""
from __future__ import annotations

from nnconsole.engine.checkpoint import CheckpointError
from nnconsole.engine.comm import CommError
from nnconsole.engine.device import DeviceError
from nnconsole.engine.launch import LaunchError
from nnconsole.engine.plan import PlanError
from nnconsole.engine.project.errors import ProjectError
from nnconsole.engine.run_json import RunFileError
from nnconsole.engine.run_lock import RunBusyError
from nnconsole.engine.train import TrainingError


from nnconsole.engine.data import DatasetError
from nnconsole.engine.interop import InteropError

USER_ERRORS = (ProjectError, PlanError, LaunchError, DeviceError, CommError, CheckpointError,
               TrainingError, DatasetError, InteropError, RunBusyError, RunFileError)
