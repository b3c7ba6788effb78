"""The start page NNC users know: new project (empty or from a template), recent projects and recent
runs, shown on first start and whenever no project is open (View > Start Page).

It holds no file logic of its own: opening and creating go through the window's ``ProjectFiles``
(the same code as File > Open / New), runs are read with ``nnconsole.engine.rundir.store``.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, List, Optional

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import (QCheckBox, QHBoxLayout, QLabel, QListView, QListWidget, QListWidgetItem, QPushButton,
                               QVBoxLayout, QWidget)

from nnconsole.app.shell import settings as app_settings
from nnconsole.app.shell import thumbnails
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.notes import read_note
from nnconsole.engine.project.model import Project
from nnconsole.templates import list_templates, template_path
from nnconsole.app.widgets.rich_text import plain_tooltip

RECENT_RUNS_SHOWN = 12
GALLERY_CELL = QSize(thumbnails.SIZE.width() + 28, thumbnails.SIZE.height() + 64)  # thumbnail and 3 lines of name


@dataclass(frozen=True)
class RecentRun:
    """One run of a recent project, as a row of the start page."""

    project: str
    run_dir: str
    status: str
    started: float
    best_error: Optional[float]
    title: str = ""  # the user's (note.json); '' shows the folder name

    def label(self) -> str:
        project = os.path.basename(os.path.dirname(self.project))
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.started))
        best = "" if self.best_error is None else f", best error {self.best_error:.4f}"
        return f"{project} / {self.title or os.path.basename(self.run_dir)}   {self.status}{best}   {when}"


def recent_runs(projects: List[str], limit: int = RECENT_RUNS_SHOWN) -> List[RecentRun]:
    """The newest runs of the given project files (their default results folders), newest first."""
    found: List[RecentRun] = []
    for project in projects:
        for run_dir in runs.list_runs(runs.results_root(project)):
            st = runs.effective_status(run_dir)
            if st is not None:
                found.append(RecentRun(project, run_dir, st.status, st.started, st.best_validation_error,
                                       read_note(run_dir).title))
    found.sort(key=lambda r: r.started, reverse=True)
    return found[:limit]


def new_empty_project(window: Any) -> bool:
    """File > New Empty Project: an untitled project with an empty Main network (after asking about
    unsaved changes); it is saved with Save As, as NNC's File > New does."""
    if not window.files.maybe_save():
        return False
    window.autosaver.discard()
    window.document.replace_project(Project())
    window.show_tab("edit")
    return True


def gallery(name: str) -> QListWidget:
    """A list shown as a gallery: network thumbnails with their names under them, wrapped, never cut."""
    view = QListWidget()
    view.setObjectName(name)
    view.setViewMode(QListView.IconMode)
    view.setIconSize(thumbnails.SIZE)
    view.setGridSize(GALLERY_CELL)
    view.setWordWrap(True)
    view.setTextElideMode(Qt.ElideNone)
    view.setResizeMode(QListView.Adjust)
    view.setMovement(QListView.Static)
    return view


def gallery_item(text: str, icon: QIcon) -> QListWidgetItem:
    """A gallery cell: the thumbnail and, under it, the whole name on up to three lines."""
    item = QListWidgetItem(icon, text)
    item.setSizeHint(GALLERY_CELL - QSize(6, 6))  # the text's room is the cell's, so long names wrap, not cut
    item.setTextAlignment(Qt.AlignHCenter | Qt.AlignTop)
    return item


def network_icon(project_path: str) -> QIcon:
    """The thumbnail of a project file's network (a placeholder when it cannot be read)."""
    image = thumbnails.thumbnail(project_path)
    return QIcon(QPixmap.fromImage(image if image is not None else thumbnails.placeholder()))


def _heading(text: str) -> QLabel:
    label = QLabel(f"<h3>{text}</h3>")
    label.setTextFormat(Qt.RichText)
    return label


class StartPage(QWidget):
    """Three columns: New (empty, templates), Recent projects, Recent runs."""

    def __init__(self, window: Any) -> None:
        super().__init__()
        self.setObjectName("start_page")
        self.window_ = window
        self.empty_button = QPushButton("New empty project")
        self.empty_button.setObjectName("start_new_empty")
        self.empty_button.clicked.connect(lambda: new_empty_project(self.window_))
        self.open_button = QPushButton("Open…")
        self.open_button.setObjectName("start_open")
        self.open_button.clicked.connect(lambda: self.window_.files.open())
        self.templates = gallery("start_templates")
        for t in list_templates():
            item = gallery_item(t.title, network_icon(str(template_path(t.name) / "project.yaml")))
            item.setData(Qt.UserRole, t.name)
            item.setToolTip(f"{t.description}\n(template {t.name}: double-click to create a project from it)")
            self.templates.addItem(item)
        self.templates.itemActivated.connect(
            lambda item: self.window_.files.new_from_template(item.data(Qt.UserRole)))
        self.projects = gallery("start_recent_projects")
        self.projects.itemActivated.connect(lambda item: self.window_.files.open_path(item.data(Qt.UserRole)))
        self.runs = QListWidget()
        self.runs.setObjectName("start_recent_runs")
        self.runs.itemActivated.connect(lambda item: self.open_run(item.data(Qt.UserRole)))
        self.reopen = QCheckBox("Reopen the last project on start")
        self.reopen.setObjectName("start_reopen_last")
        self.reopen.toggled.connect(lambda on: self.window_.settings.set(app_settings.REOPEN_LAST_PROJECT, on))

        new_column = QVBoxLayout()
        new_column.addWidget(_heading("New project"))
        buttons = QHBoxLayout()
        buttons.addWidget(self.empty_button)
        buttons.addWidget(self.open_button)
        new_column.addLayout(buttons)
        new_column.addWidget(QLabel("From a template (double-click):"))
        new_column.addWidget(self.templates, 1)
        projects_column = QVBoxLayout()
        projects_column.addWidget(_heading("Recent projects"))
        projects_column.addWidget(self.projects, 1)
        runs_column = QVBoxLayout()
        runs_column.addWidget(_heading("Recent runs"))
        runs_column.addWidget(self.runs, 1)
        columns = QHBoxLayout()
        for column, stretch in ((new_column, 2), (projects_column, 2), (runs_column, 3)):
            columns.addLayout(column, stretch)
        box = QVBoxLayout(self)
        title = QLabel("<h2>nnconsole</h2><p style='color:#56606b'>Neural Network Console for Linux: "
                       "design a network in EDIT, train it on N processes in TRAINING.</p>")
        title.setTextFormat(Qt.RichText)
        box.addWidget(title)
        box.addLayout(columns, 1)
        box.addWidget(self.reopen)
        self.refresh()

    def refresh(self) -> None:
        """Read the recent projects and their runs again (a project may have been trained meanwhile)."""
        settings = self.window_.settings
        projects = settings.recent_projects()
        self.projects.clear()
        for path in projects:
            item = gallery_item(os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path),
                                network_icon(path))
            item.setData(Qt.UserRole, path)
            item.setToolTip(plain_tooltip(path))
            self.projects.addItem(item)
        if not projects:
            self._placeholder(self.projects, "No recent projects yet: start from a template.")
        self.runs.clear()
        for run in recent_runs(projects):
            item = QListWidgetItem(run.label())
            item.setData(Qt.UserRole, run)
            item.setToolTip(plain_tooltip(run.run_dir))
            self.runs.addItem(item)
        if not self.runs.count():
            self._placeholder(self.runs, "No runs yet: Run in the TRAINING tab or `nnconsole train`.")
        self.reopen.blockSignals(True)
        self.reopen.setChecked(bool(settings.get(app_settings.REOPEN_LAST_PROJECT)))
        self.reopen.blockSignals(False)

    @staticmethod
    def _placeholder(widget: QListWidget, text: str) -> None:
        item = QListWidgetItem(text)
        item.setFlags(Qt.NoItemFlags)
        widget.addItem(item)

    def open_run(self, run: Optional[RecentRun]) -> bool:
        """Open the run's project (unless it is open) and show the run in TRAINING."""
        if run is None:
            return False
        window = self.window_
        current = window.document.path and os.path.abspath(window.document.path)
        if current != os.path.abspath(run.project) and not window.files.open_path(run.project):
            return False
        window.show_tab("training")
        page = window.pages.get("training")
        if hasattr(page, "refresh_history"):
            page.refresh_history()
        if hasattr(page, "history"):
            page.history.select_run(run.run_dir)
        if hasattr(page, "show_run"):
            page.show_run(run.run_dir)
        return True
