"""Check before Run: the engine's own project checks (settings, network shapes, dataset variables, image
sizes, files outside the project folder) run in this process before anything is launched, so a project
with problems creates no run; the problems are listed with a way to go to each.

The checks are ``nnconsole.engine.check.project_file.validate`` on the saved file, the same the CLI runs
(``nnconsole validate``, and ``train`` before it starts), in a background thread because reading every
dataset row can take a while. ``target_of`` says which tab and which layer, dataset or field a
problem's YAML path points to; ``go_to`` shows it in the main window.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from nnconsole.engine.check.project_file import validate
from nnconsole.engine.project.errors import Problem, ProjectError
from nnconsole.engine.project.io import load_project

LAYER_PATH = re.compile(r"^network\.layers\[(\d+)\]")
ERROR_COLOR, WARNING_COLOR = "#b00000", "#9a5b00"


def check_project(path: str, allow_outside_data: bool = False) -> List[Problem]:
    """Every problem of the project file at ``path`` as the engine sees it before training (errors first)."""
    try:
        project = load_project(path)
    except ProjectError as exc:
        return list(exc.problems)
    except OSError as exc:
        return [Problem("", f"cannot read {path}: {exc.strerror or exc}")]
    return check_loaded(project, allow_outside_data)


def check_loaded(project: Any, allow_outside_data: bool = False) -> List[Problem]:
    """Every problem of ``project`` (in memory, its ``path`` saying where dataset paths start) as the engine
    sees it before training, errors first: Run checks the edits before it writes them."""
    problems = validate(project, datasets=True, allow_outside_data=allow_outside_data)
    if not blocking(problems):
        problems += check_image_sizes(project)
    return sorted(problems, key=lambda p: p.severity != "error")


def check_image_sizes(project: Any) -> List[Problem]:
    """The first image of each image variable against its Input layer's height and width.

    ``validate`` checks every image file's presence but decodes none (the workers find a wrong size only
    when they load the data); an image's header tells its size cheaply, and a dataset's images usually
    share one size, so a mismatch with the network is found here, before the run.
    """
    import os

    from PySide6.QtGui import QImageReader

    from nnconsole.engine.data.csv_reader import IMAGE_EXTENSIONS
    from nnconsole.engine.data.csv_stream import peek_csv
    from nnconsole.engine.project.paths import dataset_path
    from nnconsole.engine.network.shapes import infer_network

    expected = {name: tuple(shape)[-2:] for name, shape in infer_network(project.network).input_variables.items()
                if len(shape) in (2, 3)}
    problems: List[Problem] = []
    for split in ("training", "validation"):
        csv_path = dataset_path(project, getattr(project.datasets, split))
        try:
            preview = peek_csv(csv_path, 1)
        except (OSError, ValueError):
            continue  # validate reported it
        for column, cell in zip(preview.columns, preview.rows[0] if preview.rows else []):
            name = column.split(":")[0].strip()
            if name not in expected or os.path.splitext(cell.strip())[1].lower() not in IMAGE_EXTENSIONS:
                continue
            image = os.path.join(os.path.dirname(csv_path), cell.strip())
            size = QImageReader(image).size()
            height, width = expected[name]
            if size.isValid() and (size.height(), size.width()) != (height, width):
                problems.append(Problem(
                    f"datasets.{split}", f"{csv_path}: the images of '{name}' are {size.height()}x{size.width()} "
                    f"(the first, {cell.strip()}) but the network's Input '{name}' expects {height}x{width}",
                    fix="resize the images, or change the Input layer's shape"))
    return problems


def blocking(problems: List[Problem]) -> List[Problem]:
    """The problems that keep a project from training (warnings do not)."""
    return [p for p in problems if p.severity == "error"]


@dataclass
class Target:
    """Where a problem is shown: a tab and, in it, a layer name, a dataset split or a field's dotted path."""

    tab: str  # edit | dataset | config
    layer: str = ""
    field: str = ""


def target_of(problem: Problem, layer_names: List[str]) -> Target:
    """The tab and item a problem's YAML path (``network.layers[3].params.kernel``, ``datasets.training``,
    ``optimizer.learning_rate``) points to; the CONFIG tab for anything else."""
    found = LAYER_PATH.match(problem.path)
    if found:
        i = int(found.group(1))
        return Target("edit", layer=layer_names[i] if i < len(layer_names) else "")
    if problem.path.startswith("network"):
        return Target("edit")
    if problem.path.startswith("datasets."):
        return Target("dataset", field=problem.path)
    return Target("config", field=problem.path if "." in problem.path else "")


def go_to(window: Any, target: Target) -> bool:
    """Show the problem's tab and select its layer, or focus its field (by the editors' object names)."""
    pages = getattr(window, "pages", None)
    if not isinstance(pages, dict) or target.tab not in pages:
        return False
    window.show_tab(target.tab)
    page = pages[target.tab]
    if target.layer and hasattr(page, "reveal_layer"):
        page.reveal_layer(target.layer)
        return True
    if target.field:
        names = [f"field_{target.field}"]
        if target.field.startswith("datasets."):
            names.append(f"dataset_path_{target.field.split('.')[1]}")
        for name in names:
            widget = page.findChild(QWidget, name)
            if widget is not None:
                widget.setFocus(Qt.OtherFocusReason)
                return True
    return True


class ProblemsPanel(QWidget):
    """'The project was not run': the problems found, each double-clicked (or Enter) to go to it."""

    go_to_requested = Signal(object)  # the Problem

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("training_problems")
        self.problems: List[Problem] = []
        self.title = QLabel()
        self.title.setObjectName("training_problems_title")
        self.title.setTextFormat(Qt.RichText)
        self.title.setWordWrap(True)
        self.list = QListWidget()
        self.list.setObjectName("training_problems_list")
        self.list.setWordWrap(True)
        self.list.setMaximumHeight(170)
        self.list.itemActivated.connect(self._activated)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.list)
        self.hide()

    def show_problems(self, problems: List[Problem]) -> None:
        self.problems = list(problems)
        errors = len(blocking(problems))
        self.title.setText(f"<span style='color:{ERROR_COLOR}'><b>The project was not run:</b> {errors} "
                           f"problem{'s' if errors != 1 else ''} to fix first</span> "
                           "(double-click one to go to it; nothing was started, no run was made).")
        self.list.clear()
        for problem in problems:
            text = f"{problem.path}: {problem.message}" if problem.path else problem.message
            if problem.fix:
                text += f" \u2014 {problem.fix}"
            item = QListWidgetItem(("\u26A0 " if problem.severity != "error" else "\u2716 ") + text)
            item.setForeground(Qt.darkYellow if problem.severity != "error" else Qt.darkRed)
            item.setToolTip(html.escape(str(problem)))
            self.list.addItem(item)
        self.show()

    def clear(self) -> None:
        self.problems = []
        self.list.clear()
        self.hide()

    def _activated(self, item: QListWidgetItem) -> None:
        row = self.list.row(item)
        if 0 <= row < len(self.problems):
            self.go_to_requested.emit(self.problems[row])


def jump_handler(window_of: Callable[[], Any], layer_names: Callable[[], List[str]]) -> Callable[[Problem], None]:
    """The slot for ``go_to_requested``: the window and the layer names are read when a problem is chosen."""
    return lambda problem: go_to(window_of(), target_of(problem, layer_names()))
