"""``nnconsole search`` from the GUI: the K x G prediction (``--plan``) and the search itself, as the CLI runs them.

The GUI never imports the search engine (Optuna, the launcher): ``plan_search`` runs ``nnconsole search PROJECT
--plan`` in an ``EngineCommand`` (short, off the GUI thread) and hands its table on as text; ``SearchProcess``
starts ``nnconsole search PROJECT --parallel K --workers-per-trial G`` detached (``detached_cli``, as Run
starts ``nnconsole train``: its own session, output in files in the results folder), so a search outlives the
GUI and is resumed by running it again. Each trial is an ordinary run: the TRAINING tab lists it from the results folder
(``trial.json``), so this class only starts, stops and shows the search's own lines.
"""
from __future__ import annotations

import os
from typing import List, Optional

from nnconsole.app.bridge.detached_cli import DetachedCommand
from nnconsole.app.bridge.engine_process import EngineCommand


def search_args(project_path: str, parallel: int = 1, workers: int = 1, plan: bool = False,
                trials: Optional[int] = None) -> List[str]:
    """The CLI arguments of a search (or its ``--plan``) of the project file ``project_path``."""
    args = ["search", os.path.abspath(project_path)]
    if plan:
        return args + ["--plan"]
    args += ["--parallel", str(int(parallel)), "--workers-per-trial", str(int(workers))]
    if trials:
        args += ["--trials", str(int(trials))]
    return args


def plan_search(command: EngineCommand, project_path: str) -> None:
    """Start ``nnconsole search PROJECT --plan`` in ``command``; its ``command_finished`` carries the table."""
    command.start(search_args(project_path, plan=True), cwd=os.path.dirname(os.path.abspath(project_path)))


class SearchProcess(DetachedCommand):
    """One ``nnconsole search`` at a time (``DetachedCommand``: its lines, Stop = SIGTERM = Ctrl-C)."""

    def start(self, project_path: str, parallel: int, workers: int, trials: Optional[int] = None) -> None:
        """``nnconsole search PROJECT --parallel K --workers-per-trial G`` in its own session."""
        self.start_command(search_args(project_path, parallel, workers, trials=trials), project_path)
