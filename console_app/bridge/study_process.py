"""``nnconsole study batch`` from the GUI: the large-batch study's command line, and the study run detached.

``StudyRequest`` holds what the TRAINING tab's "Start study..." dialog asks for, already checked with the
CLI's own rules (``nnconsole.engine.plan.study_values``); ``study_args`` turns it into the arguments a
terminal user would type; ``StudyProcess`` runs them as ``SearchProcess`` runs a search (``detached_cli``: its
own session, output in files, Stop = SIGTERM = Ctrl-C, exit code 3 = stopped, rerun to resume). The study's
points are ordinary runs and its table is ``<results>/study/<name>/study.json``, which the Study view reads
itself: this module only starts, stops and hands on the command's lines.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import List, Optional

from nnconsole.app.bridge.detached_cli import DetachedCommand

DEFAULT_WORKERS = (1, 2, 4, 8)
DEFAULT_POLICIES = ("none", "linear")
DEFAULT_WARMUPS = (0.0,)
DEFAULT_TOLERANCE_POINTS = 0.5


@dataclass
class StudyRequest:
    """One ``nnconsole study batch``: worker counts, policies, warm-ups (epochs), tolerance in points of error,
    epochs per point (None: the project's max_epoch), points at once, and the study's name (None: the CLI's)."""

    workers: List[int] = field(default_factory=lambda: list(DEFAULT_WORKERS))
    policies: List[str] = field(default_factory=lambda: list(DEFAULT_POLICIES))
    warmups: List[float] = field(default_factory=lambda: list(DEFAULT_WARMUPS))
    tolerance_points: float = DEFAULT_TOLERANCE_POINTS
    epochs: Optional[int] = None
    parallel: int = 1
    name: Optional[str] = None


def _number(value: float) -> str:
    return f"{value:g}"


def study_args(project_path: str, request: StudyRequest) -> List[str]:
    """The CLI arguments of ``request`` for the project file ``project_path``."""
    args = ["study", "batch", os.path.abspath(project_path),
            "--workers", ",".join(str(int(n)) for n in request.workers),
            "--policy", ",".join(request.policies),
            "--warmup", ",".join(_number(k) for k in request.warmups),
            "--tolerance", _number(request.tolerance_points),
            "--parallel", str(int(request.parallel))]
    if request.epochs:
        args += ["--epochs", str(int(request.epochs))]
    if request.name:
        args += ["--study", request.name]
    return args


class StudyProcess(DetachedCommand):
    """One ``nnconsole study batch`` at a time (``DetachedCommand``: its lines, Stop = SIGTERM = Ctrl-C)."""

    def start(self, project_path: str, request: StudyRequest) -> None:
        """``nnconsole study batch PROJECT ...`` in its own session, as ``study_args`` spells it."""
        self.start_command(study_args(project_path, request), project_path)
