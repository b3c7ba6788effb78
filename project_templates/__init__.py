"""Ready-made projects on bundled data (one folder per template).

Each template is a folder holding ``project.yaml``, ``README.md`` (title, a one-paragraph summary,
data provenance and license, the expected result) and ``data/`` with NNC-format CSVs.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, Tuple

DEFAULT_TEMPLATE = "digits_cnn"
TEMPLATES_DIR = Path(__file__).resolve().parent
PROJECT_FILE = "project.yaml"


@dataclass(frozen=True)
class TemplateInfo:
    """A template as the GUI's "new project" dialog lists it; ``path`` is its folder."""

    name: str
    title: str
    description: str
    path: Path

    @property
    def project_file(self) -> Path:
        return self.path / PROJECT_FILE


def _readme_summary(readme: Path, fallback: str) -> Tuple[str, str]:
    """(title, first paragraph) of a README: the first '# ' heading and the text block after it."""
    try:
        lines = readme.read_text(encoding="utf-8").splitlines()
    except OSError:
        return fallback, ""
    title = fallback
    paragraph: List[str] = []
    for line in lines:
        text = line.strip()
        if text.startswith("#"):
            if paragraph:
                break
            if title == fallback and text.startswith("# "):
                title = text[2:].strip()
            continue
        if not text:
            if paragraph:
                break
            continue
        paragraph.append(text)
    return title, " ".join(paragraph)


def list_templates() -> List[TemplateInfo]:
    """All bundled templates, the default first, then by name."""
    found = []
    for folder in sorted(TEMPLATES_DIR.iterdir()):
        if folder.is_dir() and (folder / PROJECT_FILE).is_file():
            title, description = _readme_summary(folder / "README.md", folder.name)
            found.append(TemplateInfo(folder.name, title, description, folder))
    found.sort(key=lambda t: (t.name != DEFAULT_TEMPLATE, t.name))
    return found


def template_path(name: str = DEFAULT_TEMPLATE) -> Path:
    """The folder of template ``name``; raises KeyError listing the available names when unknown."""
    folder = TEMPLATES_DIR / name
    if name and "/" not in name and "\\" not in name and (folder / PROJECT_FILE).is_file():
        return folder
    names = ", ".join(t.name for t in list_templates())
    raise KeyError(f"no project template named '{name}'; available templates: {names}")
