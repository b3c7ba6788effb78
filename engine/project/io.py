"""Read and write project YAML files: versions, migrations, located errors and atomic saves."""
from __future__ import annotations

import os
import re
import stat
from typing import Any, Dict, List, NamedTuple, Optional

import yaml
import yaml.reader

from nnconsole.engine.atomic import BACKUP_SUFFIX, atomic_write  # noqa: F401 - the one atomic writer, re-exported

from nnconsole.engine.project.codec import project_from_dict, project_to_dict
from nnconsole.engine.project.errors import Problem, ProjectError, UnsupportedVersionError
from nnconsole.engine.project.migrations import MIGRATIONS, migrate
from nnconsole.engine.project.model import FORMAT_VERSION, Project
from nnconsole.engine.project.roundtrip import dumps_clean, merged_text
from nnconsole.engine.project.yamlpos import MAX_YAML_CHARS, format_path, parse_with_lines

_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_PROJECT_BYTES = MAX_YAML_CHARS  # a large network is well under 1 MiB of YAML


def _parent(path: str) -> str:
    """"a.b[2].c" -> "a.b[2]" -> "a.b" -> "a" -> ""."""
    return re.sub(r"(\.[^.\[]*|\[\d+\])$", "", path) if re.search(r"[.\[]", path) else ""


def _locate(problems: List[Problem], file: Optional[str], lines: Dict[Any, int]) -> List[Problem]:
    """Fill in file and line of each problem from its YAML path (or the nearest ancestor's line)."""
    by_text = {format_path(k): v for k, v in lines.items()}
    for p in problems:
        p.file = p.file or file
        path = p.path
        while p.line is None and path:
            p.line = by_text.get(path)
            path = _parent(path)
    return problems


def _deep_line(text: str, limit: int = 64) -> int:
    """The first line where brackets or indentation nest beyond ``limit`` levels (1 if none is found)."""
    depth = 0
    for number, line in enumerate(text.splitlines(), 1):
        if len(line) - len(line.lstrip(" ")) > 2 * limit:
            return number
        for ch in line:
            depth += 1 if ch in "[{" else -1 if ch in "]}" else 0
            if depth > limit:
                return number
    return 1


class ParsedProject(NamedTuple):
    """A project file parsed and typed, before any semantic check: the project, the type problems found, and
    the line of every YAML key (so later checks can point at the file line too)."""

    project: Project
    problems: List[Problem]
    lines: Dict[Any, int]


def parse_project(text: str, file: Optional[str] = None) -> ParsedProject:
    """Parse project YAML text into the dataclasses, collecting type problems (not raised); ``file`` is used
    for messages and to resolve dataset paths. Structural failures (not YAML, a newer format) raise."""
    try:
        data, lines = parse_with_lines(text)
    except RecursionError:
        raise ProjectError([Problem("", "not valid YAML: the values are nested too deeply", file=file,
                                    line=_deep_line(text), fix="a project file nests mappings and lists a few "
                                    "levels deep; check the brackets and the indentation")]) from None
    except yaml.reader.ReaderError as exc:  # a control character or a NUL byte in the text
        line = text[: exc.position].count("\n") + 1
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        raise ProjectError([Problem("", f"not valid YAML: the text contains the control character U+{code:04X}",
                                    file=file, line=line, fix="remove it (was the file saved by a word "
                                    "processor, or is it not a project file?)")]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ProjectError([Problem("", f"not valid YAML: {problem}", file=file,
                                    line=mark.line + 1 if mark else 1,
                                    fix=getattr(exc, "fix", "check indentation and quoting around this line"))]
                           ) from None
    if not isinstance(data, dict):
        raise UnsupportedVersionError([Problem("", "not an nnconsole project (the file is not a YAML mapping)",
                                               file=file, line=1, fix="open a project.yaml or import an .nntxt")])
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise UnsupportedVersionError([Problem(
            "format_version", f"missing or invalid format_version ({version!r})", file=file,
            line=lines.get(("format_version",), 1), fix=f"add 'format_version: {FORMAT_VERSION}' at the top")])
    if version > FORMAT_VERSION:
        raise UnsupportedVersionError([Problem(
            "format_version", f"written by a newer nnconsole (format {version}; this one reads up to "
            f"{FORMAT_VERSION})", file=file, line=lines.get(("format_version",)), fix="upgrade nnconsole")])
    if version < 1 or (version < FORMAT_VERSION and version not in MIGRATIONS):
        raise UnsupportedVersionError([Problem("format_version", f"unknown format_version {version}", file=file,
                                               line=lines.get(("format_version",)))])
    if version < FORMAT_VERSION:
        data = migrate(data, version, FORMAT_VERSION)
        # Line numbers of the old layout still help for unchanged keys.
    problems: List[Problem] = []
    project = project_from_dict(data, problems)
    project.path = os.path.abspath(file) if file else None
    return ParsedProject(project, problems, lines)


def raise_for_errors(problems: List[Problem], file: Optional[str], lines: Dict[Any, int]) -> None:
    """Raise ProjectError with every problem located (file and line) when any of them is an error."""
    if any(p.severity == "error" for p in problems):
        raise ProjectError(_locate(problems, file, lines))


def loads_project(text: str, file: Optional[str] = None) -> Project:
    """Parse project YAML text; raises ProjectError naming file, YAML path and line for a type problem.

    Loading never judges the project (ranges, names, shapes, datasets): that is ``nnconsole.engine.check``.
    """
    parsed = parse_project(text, file)
    raise_for_errors(parsed.problems, file, parsed.lines)
    return parsed.project


def read_project_text(path: str) -> str:
    """The text of a project file, refusing what is not one (missing, not a regular file, too large, not
    UTF-8) with a ProjectError that names the file and the fix. The file is only read, never written."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a folder, FIFO or device would hang or mislead
            raise ProjectError([Problem("", "not a regular file", file=path,
                                        fix="give the path of a project .yaml file")])
        with open(path, "rb") as fh:
            raw = fh.read(MAX_PROJECT_BYTES + 1)
    except FileNotFoundError:
        raise ProjectError([Problem("", "project file not found", file=path,
                                    fix="check the path, or create one with 'nnconsole new'")]) from None
    except OSError as exc:
        raise ProjectError([Problem("", f"cannot read project file: {exc.strerror}", file=path)]) from None
    if len(raw) > MAX_PROJECT_BYTES:
        raise ProjectError([Problem("", f"the file is larger than {MAX_PROJECT_BYTES // (1 << 20)} MiB, far more "
                                    "than any project file", file=path, fix="check that this is a project .yaml "
                                    "file (datasets belong in CSV files next to it)")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ProjectError([Problem("", "the file is not UTF-8 text", file=path, line=line,
                                    fix="save it as UTF-8")]) from None
    return text


def load_project(path: str) -> Project:
    """Load a project file (see ``loads_project``): typed, not validated."""
    return loads_project(read_project_text(path), file=path)


def dumps_project(project: Project) -> str:
    """The YAML text of a new project file (the same text the GUI and the CLI write), in the templates' style:
    block mappings, flow lists of scalars."""
    return dumps_clean(project_to_dict(project))


def updated_text(original: str, project: Project, file: Optional[str] = None) -> Optional[str]:
    """``original`` (a project file's text) changed to hold ``project`` with only what differs: comments, key
    order, styles and left-out defaults kept (``roundtrip``). None when the original is no project file of
    the current format or the result would not read back as ``project`` (then a clean file is written)."""
    if not re.search(rf"^format_version:\s*{FORMAT_VERSION}\s*(#.*)?$", original, re.MULTILINE):
        return None  # an older layout is migrated: nothing to keep node for node
    try:
        parsed = parse_project(original, file)
    except ProjectError:
        return None
    if parsed.problems:
        return None
    new = project_to_dict(project)
    text = merged_text(original, project_to_dict(parsed.project), new)
    if text is None or text == original:
        return text
    try:  # our own text, so the C parser (without the line bookkeeping a user's file needs) checks it
        problems: List[Problem] = []
        if project_to_dict(project_from_dict(yaml.load(text, Loader=_FAST_LOADER), problems)) != new or problems:
            return None
    except yaml.YAMLError:
        return None
    return text


def _original_text(path: Optional[str]) -> Optional[str]:
    """The text of the file a save starts from, when there is a readable project file there."""
    if not path or not os.path.isfile(path):
        return None
    try:
        return read_project_text(path)
    except ProjectError:
        return None


def save_project(project: Project, path: Optional[str] = None, backup: bool = True) -> str:
    """Save atomically (keeping the previous version as ``.bak``) and return the absolute path.

    A project read from a file is saved as that file's text with only what changed (comments, order and
    styles kept; ``updated_text``), also when saved to another path; a new one is written clean.
    """
    target = os.path.abspath(path or project.path or "")
    if not target:
        raise ValueError("save_project needs a path for a project that was never saved")
    original = _original_text(project.path) or _original_text(target)
    text = updated_text(original, project, project.path or target) if original is not None else None
    atomic_write(target, (text if text is not None else dumps_project(project)).encode("utf-8"), backup=backup)
    project.path = target
    return target
