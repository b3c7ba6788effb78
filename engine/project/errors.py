"""Typed project errors that name the file, the YAML path and line, and what would be valid."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from nnconsole.engine.errors import NnconsoleError


@dataclass
class Problem:
    """One thing wrong with a project file, located as precisely as we can."""

    path: str  # YAML path such as "network.layers[3].params.kernel" ("" for the whole file)
    message: str
    file: Optional[str] = None
    line: Optional[int] = None  # 1-based
    fix: str = ""
    severity: str = "error"  # error | warning

    def __str__(self) -> str:
        where = self.file or "<project>"
        if self.line:
            where += f":{self.line}"
        text = f"{where}: {self.path + ': ' if self.path else ''}{self.message}"
        if self.fix:
            text += f" ({self.fix})"
        return text


class ProjectError(NnconsoleError, ValueError):
    """A project that cannot be loaded or trained; carries every problem found, not just the first."""

    kind = "invalid"

    def __init__(self, problems: List[Problem]):
        self.problems = list(problems)
        super().__init__(self.summary())

    def summary(self) -> str:
        errors = [p for p in self.problems if p.severity == "error"]
        head = f"{len(errors)} problem{'s' if len(errors) != 1 else ''} in project"
        return head + ":\n" + "\n".join(f"  - {p}" for p in errors)


class UnsupportedVersionError(ProjectError):
    """The file was written by a newer nnconsole (or is not a project at all)."""

    kind = "unsupported-version"
