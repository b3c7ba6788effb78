"""The "new project" chooser: the bundled templates with their descriptions, and the new folder.

It only chooses; ``ProjectFiles.new_from_template`` creates the folder with
``nnconsole.engine.project.templates.create_from_template`` (the same code as ``nnconsole new``).
"""
from __future__ import annotations

import os
from typing import Optional, Tuple

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QListWidget,
                               QListWidgetItem, QPushButton, QSplitter, QStyle, QVBoxLayout, QWidget)

from nnconsole.templates import list_templates


LIST_MAX_WIDTH = 360  # a longer template title wraps onto a second line


def free_folder_name(parent: str, base: str) -> str:
    """``base`` or ``base_2``, ``base_3`` ... whichever does not exist yet in ``parent``."""
    name, n = base, 2
    while os.path.exists(os.path.join(parent, name)):
        name = f"{base}_{n}"
        n += 1
    return name


class TemplateChooserDialog(QDialog):
    """Pick a template, a folder name and where to create it."""

    def __init__(self, parent: Optional[QWidget] = None, start_dir: str = "") -> None:
        super().__init__(parent)
        self.setObjectName("template_chooser")
        self.setWindowTitle("New project from a template")
        self.resize(720, 420)
        self.templates = list_templates()
        self.list = QListWidget()
        self.list.setObjectName("template_list")
        # Whole names: wide enough for the longest title (up to a limit), and a longer one wraps, never cut
        self.list.setWordWrap(True)
        self.list.setTextElideMode(Qt.ElideNone)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        for t in self.templates:
            item = QListWidgetItem(t.title)
            item.setData(Qt.UserRole, t.name)
            item.setToolTip(t.name)
            self.list.addItem(item)
        self.description = QLabel()
        self.description.setObjectName("template_description")
        self.description.setWordWrap(True)
        self.description.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.description.setTextFormat(Qt.RichText)
        self.folder_name = QLineEdit()
        self.folder_name.setObjectName("template_folder_name")
        self.location = QLineEdit(start_dir or os.path.expanduser("~"))
        self.location.setObjectName("template_location")
        browse = QPushButton("Browse…")
        browse.setObjectName("template_browse")
        browse.clicked.connect(self._browse)
        self.target = QLabel()
        self.target.setObjectName("template_target")
        self.target.setStyleSheet("color: #56606b;")
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.button(QDialogButtonBox.Ok).setText("Create")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.list)
        split.addWidget(self.description)
        widest = max((self.list.fontMetrics().horizontalAdvance(t.title) for t in self.templates), default=200)
        list_width = min(LIST_MAX_WIDTH, widest + 2 * self.list.frameWidth()
                         + self.list.style().pixelMetric(QStyle.PM_ScrollBarExtent) + 16)
        self.list.setMinimumWidth(min(list_width, 260))
        self.resize(max(720, list_width + 440), 420)
        split.setSizes([list_width, 440])
        where = QHBoxLayout()
        where.addWidget(self.location, 1)
        where.addWidget(browse)
        form = QFormLayout()
        form.addRow("Folder name", self.folder_name)
        form.addRow("Create in", where)
        form.addRow("", self.target)
        box = QVBoxLayout(self)
        box.addWidget(split, 1)
        box.addLayout(form)
        box.addWidget(self.buttons)

        self.list.currentRowChanged.connect(self._template_changed)
        self.folder_name.textChanged.connect(self._update_target)
        self.location.textChanged.connect(self._update_target)
        self.list.itemDoubleClicked.connect(lambda _item: self.accept())
        if self.templates:
            self.list.setCurrentRow(0)

    def current_template(self) -> Optional[str]:
        item = self.list.currentItem()
        return item.data(Qt.UserRole) if item is not None else None

    def select_template(self, name: str) -> None:
        for i, t in enumerate(self.templates):
            if t.name == name:
                self.list.setCurrentRow(i)
                return
        raise KeyError(name)

    def destination(self) -> str:
        return os.path.join(os.path.expanduser(self.location.text().strip()), self.folder_name.text().strip())

    def selection(self) -> Optional[Tuple[str, str]]:
        name = self.current_template()
        if not name or not self.folder_name.text().strip():
            return None
        return name, self.destination()

    def _template_changed(self, row: int) -> None:
        if not 0 <= row < len(self.templates):
            return
        t = self.templates[row]
        self.description.setText(f"<h3>{t.title}</h3><p>{t.description}</p>"
                                 f"<p style='color:#56606b'>template <code>{t.name}</code></p>")
        self.folder_name.setText(free_folder_name(os.path.expanduser(self.location.text().strip()), t.name))

    def _update_target(self) -> None:
        dest = self.destination()
        problem = ""
        if not self.folder_name.text().strip():
            problem = "give the new folder a name"
        elif os.path.isfile(dest) or (os.path.isdir(dest) and os.listdir(dest)):
            problem = "this folder exists and is not empty; choose another name"
        self.target.setText(problem or f"creates {dest}")
        self.target.setStyleSheet("color: #c62828;" if problem else "color: #56606b;")
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(not problem)

    def _browse(self) -> None:
        from nnconsole.app.shell import dialogs

        folder = dialogs.ask_directory(self, self.location.text())
        if folder:
            self.location.setText(folder)
