"""Where a project's files are: the folder its relative paths start from, each named file resolved, and which of
them lie outside the project's folder (the rule docs/security.md states; ``nnconsole.engine.check`` enforces it)."""
from __future__ import annotations

import os
from typing import List, Optional

from nnconsole.engine.project.model import Project


def shown_path(path: str) -> str:
    """A path as text that can be printed or written as UTF-8: the bytes of a file name that is not UTF-8
    (which Python holds as surrogate escapes, and which a UTF-8 writer refuses) become ``\\xe9`` escapes."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def project_folder(project: Project) -> str:
    """The folder dataset paths are relative to: the project file's folder (cwd when never saved)."""
    return os.path.dirname(os.path.abspath(project.path)) if project.path else os.getcwd()


def dataset_path(project: Project, relative: str) -> str:
    """A dataset path resolved against the project file's folder."""
    return os.path.normpath(os.path.join(project_folder(project), relative))


def outside_project(project: Project, relative: str) -> Optional[str]:
    """The resolved path when ``relative`` points outside the project's folder, else None.

    The test is on the written path (``..`` and absolute paths), not on symlinks: a YAML file
    cannot create a symlink, and a user may link a big data folder into the project on purpose.
    """
    base = project_folder(project)
    full = dataset_path(project, relative)
    try:
        inside = os.path.commonpath([base, full]) == base
    except ValueError:
        inside = False
    return None if inside else full


def named_files(project: Project) -> List[tuple]:
    """(YAML path, path as written) of every file the project reads: the datasets and the initial
    parameters. The folder rule and the GUI's consent question cover exactly these."""
    c, d = project.config, project.datasets
    named = [("datasets.training", d.training), ("datasets.validation", d.validation),
             ("config.initial_parameters", c.initial_parameters)]
    return [(path, rel) for path, rel in named if rel]


def files_outside(project: Project) -> List[str]:
    """The resolved paths of the files the project reads that lie outside its folder (sorted, unique)."""
    return sorted({full for full in (outside_project(project, rel) for _, rel in named_files(project)) if full})
