"""A project file loaded and judged in one step: what the CLI, the launcher, the workers and the GUI call when they
need a project they can run (``nnconsole.engine.project.io`` only reads and types it)."""
from __future__ import annotations

import os
from typing import Optional

from nnconsole.engine.check.validate import validate
from nnconsole.engine.project.io import parse_project, raise_for_errors, read_project_text
from nnconsole.engine.project.model import Project
from nnconsole.engine.rundir.protocol import LAUNCH_FILE, RESOLVED_FILE, SNAPSHOT_FILE


def loads_valid_project(text: str, file: Optional[str] = None, check_datasets: bool = True,
                        allow_outside_data: bool = False) -> Project:
    """Parse project YAML text and check it; raises ProjectError naming file, YAML path and line of every error.

    With ``check_datasets`` the dataset CSVs are read and checked (every row, every image file's presence) and
    must lie inside the project's folder unless ``allow_outside_data``.
    """
    project, problems, lines = parse_project(text, file)
    if not problems:
        problems = problems + validate(project, datasets=check_datasets, allow_outside_data=allow_outside_data)
    raise_for_errors(problems, file, lines)
    return project


def load_valid_project(path: str, check_datasets: bool = True, allow_outside_data: bool = False) -> Project:
    """Load a project file and check it (see ``loads_valid_project``). The file is only read, never written."""
    return loads_valid_project(read_project_text(path), file=path, check_datasets=check_datasets,
                               allow_outside_data=allow_outside_data or is_run_copy(path))


def is_run_copy(path: str) -> bool:
    """Whether ``path`` is the resolved project of a run directory (``project.yaml`` beside
    ``launch.json`` and ``snapshot.yaml``): nnconsole wrote its absolute dataset paths after checking
    them when the run started, so they are not held to the project-folder rule again."""
    folder = os.path.dirname(os.path.abspath(path))
    return (os.path.basename(path) == RESOLVED_FILE and os.path.isfile(os.path.join(folder, LAUNCH_FILE))
            and os.path.isfile(os.path.join(folder, SNAPSHOT_FILE)))
