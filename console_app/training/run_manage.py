"""What the run history's context menu does to run directories, without any dialog: delete (to a
trash, never a run in use), which runs are failed or empty, and a new project from a run ("re-edit").

A run is in use while a launcher holds its writer lock (``nnconsole.engine.rundir.lock``) or its status
says running with a live process; deleting holds the lock itself while it moves the folder, so a
resume started at that moment is refused instead of writing into a folder that is going away.
"""
from __future__ import annotations

import os
import shutil
import time
from typing import Callable, List, Optional

from PySide6.QtCore import QFile

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.project.io import load_project, save_project
from nnconsole.engine.project.schema import SETTINGS, set_value_at, value_at
from nnconsole.engine.rundir.lock import RunBusyError, RunLock
from nnconsole.engine.rundir.protocol import RESOLVED_FILE, STATUS_FILE, RunStatus

RUN_TRASH = ".trash"  # in the results root, where the desktop has no trash to move a run to
TRAINED_WEIGHTS = ("parameters_best.h5", "parameters_final.h5")


class RunInUse(Exception):
    """The run is being trained (or resumed) by a process: it is not deleted."""


def desktop_trash(path: str) -> bool:
    """Move ``path`` to the desktop's trash (freedesktop.org, restorable from the file manager).

    ``QFile.moveToTrash`` returns a plain bool in some PySide6 releases and ``(bool, path in the trash)`` in
    others; both are read. False (no trash here, or it failed) lets the caller use the results root's .trash.
    """
    result = QFile.moveToTrash(path)
    moved = result[0] if isinstance(result, tuple) else result
    return bool(moved) and not os.path.exists(path)


def run_in_use(run_dir: str) -> str:
    """Why the run cannot be changed now ('' when no process trains it)."""
    status = runs.read_status(run_dir)
    if status is not None and status.status == RunStatus.RUNNING and runs.pid_alive(status.pid):
        return f"{os.path.basename(run_dir)} is running (process {status.pid}); stop it first"
    try:
        RunLock(run_dir).acquire().release()
    except RunBusyError as exc:
        return str(exc)
    except OSError:
        pass  # a read-only run directory: nothing writes it
    return ""


def delete_run(run_dir: str, trash: Optional[Callable[[str], bool]] = None) -> str:
    """Move a run directory to the desktop trash, else to ``<results root>/.trash``; returns where.

    Raises RunInUse when a process trains it. The run's writer lock is held during the move.
    """
    run_dir = os.path.abspath(run_dir)
    if not os.path.isfile(os.path.join(run_dir, STATUS_FILE)):
        raise FileNotFoundError(f"{run_dir} is not a run directory (no {STATUS_FILE})")
    why = run_in_use(run_dir)
    if why:
        raise RunInUse(why)
    lock = RunLock(run_dir)
    try:
        lock.acquire()
    except RunBusyError as exc:
        raise RunInUse(str(exc)) from None
    try:
        if (trash or desktop_trash)(run_dir):
            return "the trash"
        folder = os.path.join(os.path.dirname(run_dir), RUN_TRASH)
        os.makedirs(folder, exist_ok=True)
        target = os.path.join(folder, os.path.basename(run_dir))
        if os.path.exists(target):
            target += time.strftime("-%Y%m%d_%H%M%S")
        shutil.move(run_dir, target)
        return folder
    finally:
        lock.release()


def is_failed_or_empty(status: RunStatus, run_dir: str, iteration: int) -> bool:
    """Failed runs, and ended runs that trained no iteration and kept no checkpoint (nothing to look at)."""
    if status == RunStatus.RUNNING:
        return False
    if status == RunStatus.FAILED:
        return True
    return not iteration and runs.latest_checkpoint(run_dir) is None


def failed_or_empty(rows: List) -> List[str]:
    """Run directories of the history rows (``RunRow``) that pruning would move to the trash."""
    return [row.run_dir for row in rows if is_failed_or_empty(row.status, row.run_dir, row.iteration)]


def trained_weights(run_dir: str) -> Optional[str]:
    """The run's best parameters, else its final ones, else its latest checkpoint's (None: it has none)."""
    for name in TRAINED_WEIGHTS:
        path = os.path.join(run_dir, name)
        if os.path.isfile(path):
            return path
    latest = runs.latest_checkpoint(run_dir)
    if latest and os.path.isfile(latest[:-len(".json")] + ".h5"):
        return latest[:-len(".json")] + ".h5"
    return None


def project_folder_of(run_dir: str) -> str:
    """The folder of the project a run under the default results root belongs to
    (``<folder>/results/<stem>/<run>``); the run's parent otherwise."""
    root = os.path.dirname(os.path.abspath(run_dir))
    results = os.path.dirname(root)
    return os.path.dirname(results) if os.path.basename(results) == "results" else root


def suggested_reedit_path(run_dir: str) -> str:
    """'<project folder>/<stem>_<run name>.yaml', a name not taken yet."""
    stem = os.path.basename(os.path.dirname(os.path.abspath(run_dir)))
    base = os.path.join(project_folder_of(run_dir), f"{stem}_{os.path.basename(os.path.abspath(run_dir))}")
    path, n = base + ".yaml", 2
    while os.path.exists(path):
        path, n = f"{base}_{n}.yaml", n + 1
    return path


def reedit_project(run_dir: str, destination: str) -> str:
    """Write a new project at ``destination``: the run's project (``project.yaml``) with its trained
    weights as ``config.initial_parameters`` and every file it names (the schema's path settings)
    relative to the new location. Returns its path.

    Never replaces an existing file (FileExistsError): the caller asks where else to save.
    """
    destination = os.path.abspath(destination)
    if os.path.exists(destination):
        raise FileExistsError(f"{destination} exists already; choose another name")
    project = load_project(os.path.join(run_dir, RESOLVED_FILE))
    folder = os.path.dirname(destination)
    old_folder = os.path.dirname(os.path.join(run_dir, RESOLVED_FILE))

    def moved(path: str) -> str:
        if not path:
            return path
        full = path if os.path.isabs(path) else os.path.normpath(os.path.join(old_folder, path))
        return os.path.relpath(full, folder)

    for setting in SETTINGS:  # every file the project names (datasets, initial parameters, hostfile)
        if setting.kind == "path":
            set_value_at(project, setting.path, moved(value_at(project, setting.path)))
    weights = trained_weights(run_dir)
    if weights:
        project.config.initial_parameters = moved(weights)
    os.makedirs(folder, exist_ok=True)
    return save_project(project, destination, backup=False)
