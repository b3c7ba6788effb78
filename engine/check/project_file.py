"""Every check of a project in one call (``validate``), and a project file loaded and judged in one step: what the CLI, the launcher, the workers and the GUI call when they
need a project they can run (``nnconsole.engine.project.io`` only reads and types it)."""
from __future__ import annotations

import os
from typing import List, Optional

from nnconsole.engine.check.search import check_search
from nnconsole.engine.check.structure import check_structure
from nnconsole.engine.check.validate import (check_datasets, check_hostfile, check_initial_parameters,
                                             check_network, check_settings)
from nnconsole.engine.project.errors import Problem
from nnconsole.engine.project.io import parse_project, raise_for_errors, read_project_text
from nnconsole.engine.project.model import Project
from nnconsole.engine.rundir.protocol import LAUNCH_FILE, RESOLVED_FILE, SNAPSHOT_FILE


def validate(project: Project, datasets: bool = True, allow_outside_data: bool = False) -> List[Problem]:
    """All semantic problems of a project (errors and warnings); ``datasets`` reads the files it names (every CSV
    row, the initial parameters, the hostfile)."""
    problems = check_settings(project) + check_network(project) + check_structure(project) + \
        check_search(project)
    if datasets:  # every cell only when the settings and the network are sound
        deep = not any(p.severity == "error" for p in problems)
        problems += check_datasets(project, allow_outside=allow_outside_data, deep=deep)
        problems += check_initial_parameters(project, allow_outside=allow_outside_data)
        problems += check_hostfile(project)  # as the launcher reads it, so validate says what train would
    return problems


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
