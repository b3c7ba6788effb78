"""Creating a project folder from a bundled template (used by ``nnconsole new`` and the GUI)."""
from __future__ import annotations

import os
import shutil

from nnconsole.engine.project.errors import Problem, ProjectError
from nnconsole.templates import list_templates, template_path


def create_from_template(name: str, destination: str) -> str:
    """Copy template ``name`` into the new folder ``destination``; return the project file's path.

    Refuses to write into an existing non-empty folder, so nothing of the user's is overwritten.
    """

    names = [t.name for t in list_templates()]
    if name not in names:
        raise ProjectError([Problem("", f"unknown template '{name}'", fix="one of: " + ", ".join(names))])
    if os.path.exists(destination) and os.listdir(destination):
        raise ProjectError([Problem("", f"folder {destination} exists and is not empty",
                                    fix="choose a new folder name")])
    source = template_path(name)
    shutil.copytree(source, destination, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("results", ".nnconsole-cache", "__pycache__"))
    return os.path.join(destination, "project.yaml")
