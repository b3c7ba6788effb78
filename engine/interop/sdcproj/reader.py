"""Import stage 1 for NNC desktop projects: the .sdcproj INI file as sections, with typed access
whose errors name the file, section, key and line, and each layer's properties in order.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Dict, Optional

from nnconsole.engine.interop.report import InteropError


@dataclass
class Section:
    name: str
    line: int
    values: Dict[str, str] = field(default_factory=dict)
    lines: Dict[str, int] = field(default_factory=dict)

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:
        return self.values.get(key, default)


def parse_ini(text: str) -> Dict[str, Section]:
    """Sections of an NNC INI file (keys are case-sensitive; a repeated section continues the first)."""
    sections: Dict[str, Section] = {}
    current = Section("", 0)
    sections[""] = current
    for n, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        line = raw.strip()
        if not line or line.startswith(";"):
            continue
        m = re.match(r"^\[(.+)\]$", line)
        if m:
            name = m.group(1)
            current = sections.setdefault(name, Section(name, n))
            continue
        if "=" in line:
            key, value = line.split("=", 1)
        else:
            key, value = line, ""
        current.values[key.strip()] = value
        current.lines[key.strip()] = n
    return sections


class SdcReader:
    """Typed access to the sections with error messages naming file, section, key and line."""

    def __init__(self, path: str, sections: Dict[str, Section]):
        self.path = path
        self.sections = sections

    def section(self, name: str, required: bool = True) -> Optional[Section]:
        s = self.sections.get(name)
        if s is None and required:
            raise InteropError(f"{self.path}: section [{name}] is missing; the file is not a complete NNC project "
                               "(save it again from Neural Network Console)")
        return s

    def where(self, s: Section, key: str) -> str:
        line = s.lines.get(key, s.line)
        return f"{self.path}:{line} [{s.name}] {key}"

    def int(self, s: Section, key: str, default: Optional[int] = None) -> int:
        raw = s.get(key)
        if raw is None or raw.strip() == "":
            if default is None:
                raise InteropError(f"{self.path}:{s.line} [{s.name}]: {key} is missing; add '{key}=<number>'")
            return default
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):  # 'inf' once ended in an OverflowError traceback
            raise InteropError(f"{self.where(s, key)}: expected a number, got '{raw.strip()[:40]}'")
        return int(value)

    def count(self, s: Optional[Section], key: str, default: Optional[int], holds: int, what: str) -> int:
        """A count the file states (``NumLayer``, ``NumProperty`` ...), bounded by what the file holds: ``holds``
        (its sections, or the section's keys) names at most that many ``what``. A count beyond it (10^11 once
        looped for hours) or below 0 is refused here, naming the key, before anything iterates over it."""
        if s is None:
            return default or 0
        value = self.int(s, key, default)
        if not 0 <= value <= holds:
            raise InteropError(f"{self.where(s, key)}={s.get(key, '').strip()[:40]} is not a count from 0 to {holds:,} "
                               f"(the file holds {holds:,} {what}); the file is damaged: save it again from Neural "
                               "Network Console")
        return value

    @property
    def section_count(self) -> int:
        """How many sections the file holds: the most layers, links, datasets or optimizers it can describe."""
        return len(self.sections)


# ------------------------------------------------------------------------------------------ properties
def layer_properties(s: Section) -> Dict[str, str]:
    """Property name -> raw value of one [<Net>_Layer_i] section, in property order."""
    props: Dict[str, str] = {}
    count = (s.get("NumProperty") or "").strip()
    # bounded by the section's keys: each property takes two, so a count beyond them names nothing more
    indices = range(min(int(count), len(s.values))) if count.isdigit() and count.isascii() else sorted(
        {int(m.group(1)) for k in s.values for m in [re.match(r"Property_(\d+)_Name$", k)] if m})
    for k in indices:
        name = s.get(f"Property_{k}_Name")
        if name is not None:
            props[name] = s.get(f"Property_{k}_Value", "") or ""
    return props
