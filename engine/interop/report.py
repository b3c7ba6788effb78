"""What an import or an export produced, and what it could not carry over.

Nothing is dropped silently: every setting, layer or parameter a format cannot hold is named in
``unsupported`` (what was lost or replaced), while ``notes`` explains choices that keep the meaning
(an expanded repeat, an automatic layout, a derived network that was not imported).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, List, Optional

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.project.model import Project


class InteropError(NnconsoleError, ValueError):
    """A file cannot be imported or exported at all; the message names the file, the place and a fix."""


def unique(items: Iterable[str]) -> List[str]:
    """``items`` in their order, each once: a report says a thing once, however many steps noticed it."""
    return list(dict.fromkeys(items))


def add_for_network(into: List[str], items: Iterable[str], network: str) -> None:
    """Append what converting network ``network`` (not the project's main network) noted, each entry naming
    that network, so the same layer names in two networks read as two things and an entry is never repeated."""
    for item in items:
        text = f"network '{network}': {item}"
        if text not in into:
            into.append(text)


@dataclass
class ImportResult:
    """A project read from an NNC/nnabla file.

    ``project.path`` is None (the caller decides where to save it); dataset paths are absolute.
    ``initial_parameters_path`` is an nnabla ``.h5`` file with the weights a ``.nnp`` carried, renamed
    to the project's parameter names (``<layer>/affine/W`` ...), or None when the file had none.
    """

    project: Project
    unsupported: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    initial_parameters_path: Optional[str] = None
    source: str = ""
    # every problem that makes the saved project invalid (what `nnconsole info` and `train` would refuse it for),
    # each naming its place in the project file and the fix; empty: the project is valid (datasets apart)
    problems: List[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.unsupported, self.notes = unique(self.unsupported), unique(self.notes)

    def report(self) -> str:
        text = format_report(f"imported {self.source}", self.unsupported, self.notes)
        if self.problems:
            text += (f"\nthe project is not valid yet ({len(self.problems)} problem"
                     f"{'s' if len(self.problems) != 1 else ''}; info, validate and train refuse it until each is "
                     "fixed):\n" + "\n".join(f"  - {p}" for p in self.problems))
        return text


@dataclass
class ExportResult:
    """Files written by an export, and what the target format could not hold."""

    path: str
    extra_files: List[str] = field(default_factory=list)
    unsupported: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.unsupported, self.notes = unique(self.unsupported), unique(self.notes)

    def report(self) -> str:
        head = f"wrote {self.path}" + "".join(f"\nwrote {p}" for p in self.extra_files)
        return format_report(head, self.unsupported, self.notes)


def format_report(head: str, unsupported: List[str], notes: List[str]) -> str:
    """Readable text: a headline, then 'not carried over' and 'notes' as bullet lists."""
    lines = [head]
    unsupported, notes = unique(unsupported), unique(notes)
    if unsupported:
        lines.append(f"not carried over ({len(unsupported)}):")
        lines += [f"  - {item}" for item in unsupported]
    if notes:
        lines.append("notes:")
        lines += [f"  - {item}" for item in notes]
    return "\n".join(lines)
