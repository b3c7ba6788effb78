"""File operations of the main window: new from template, open, save, save as, recent projects,
the unsaved-changes prompt and crash recovery from autosave copies.

Every question goes through ``console_app.dialogs`` so tests can answer it.
"""
from __future__ import annotations

import os
from typing import Any, List, Optional

from PySide6.QtCore import QObject, Signal

from console_app import autosave, dialogs
from console_app import settings as app_settings
from engine.project.errors import ProjectError, UnsupportedVersionError
from engine.project.io import load_project
from engine.project.model import Project


class ProjectFiles(QObject):
    """Opens and saves the window's one ProjectDocument."""

    project_opened = Signal(str)  # path
    message_posted = Signal(str)  # one line for the status bar

    def __init__(self, window: Any, document: Any, settings: Any, autosaver: Any) -> None:
        super().__init__(window)
        self.window = window
        self.document = document
        self.settings = settings
        self.autosaver = autosaver
        self.last_problems = 0

    def _start_dir(self) -> str:
        if self.document.path:
            return os.path.dirname(os.path.dirname(self.document.path))
        return self.settings.get(app_settings.LAST_DIRECTORY) or os.path.expanduser("~")

    # ---- closing -------------------------------------------------------------------------------
    def maybe_save(self) -> bool:
        """Ask about unsaved changes; False when the user cancels (nothing may be closed)."""
        if not self.document.modified:
            return True
        answer = dialogs.ask_save_changes(self.window, self.document.display_name())
        if answer == dialogs.SAVE:
            return self.save()
        if answer == dialogs.DISCARD:
            self.autosaver.discard()
            return True
        return False

    # ---- opening ---------------------------------------------------------------------------------
    def new_from_template(self) -> bool:
        """Choose a template and a new folder, create it and open the project in it."""
        if not self.maybe_save():
            return False
        choice = dialogs.choose_template(self.window, self.settings.get(app_settings.LAST_DIRECTORY)
                                         or os.path.expanduser("~"))
        if not choice:
            return False
        name, destination = choice
        from engine.templates import create_from_template

        try:
            path = create_from_template(name, destination)
        except (ProjectError, OSError) as exc:
            dialogs.show_project_error(self.window, "create", destination, exc)
            return False
        self.settings.set(app_settings.LAST_DIRECTORY, os.path.dirname(os.path.abspath(destination)))
        return self.open_path(path, ask_save=False)

    def open(self) -> bool:
        if not self.maybe_save():
            return False
        path = dialogs.ask_open_project(self.window, self._start_dir())
        return bool(path) and self.open_path(path, ask_save=False)

    def load(self, path: str) -> Project:
        """Load for editing: a project whose network has errors still opens (it is work in progress);
        ``last_problems`` counts the errors such a project has."""
        self.last_problems = 0
        try:
            return load_project(path, check_datasets=False)
        except UnsupportedVersionError:
            raise
        except ProjectError as strict:
            try:
                project = load_project(path, validate=False)
            except ProjectError:
                raise strict from None
            self.last_problems = len([p for p in strict.problems if p.severity == "error"])
            return project

    def open_path(self, path: str, ask_save: bool = True) -> bool:
        """Open ``path``, offering to recover an autosaved copy left by a crash."""
        if ask_save and not self.maybe_save():
            return False
        path = os.path.abspath(path)
        from engine.interop import IMPORT_EXTENSIONS

        if os.path.splitext(path)[1].lower() in IMPORT_EXTENSIONS:
            path = self.import_nnc(path)
            if not path:
                return False
        try:
            project = self.load(path)
        except (ProjectError, OSError) as exc:
            dialogs.show_project_error(self.window, "open", path, exc)
            return False
        modified = False
        side = autosave.pending_autosave(path)
        if side:
            name = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
            if dialogs.ask_recover_autosave(self.window, name, autosave.saved_at(side)):
                try:
                    project, modified = autosave.read_autosave(side, path), True
                except (ProjectError, OSError) as exc:
                    dialogs.show_project_error(self.window, "recover", side, exc)
            else:
                autosave.remove_quietly(side)
        self.autosaver.discard()
        self.document.replace_project(project, modified=modified)
        if modified:
            self.autosaver.adopt(side)
        self.settings.add_recent_project(path)
        self.settings.set(app_settings.LAST_DIRECTORY, os.path.dirname(os.path.dirname(path)))
        self.project_opened.emit(path)
        problems = self.last_problems
        note = f" with {problems} problem{'s' if problems != 1 else ''}: see Issues in the EDIT tab" if problems else ""
        self.message_posted.emit(("recovered unsaved changes of " if modified else "opened ") + path + note)
        return True

    def import_nnc(self, source: str) -> Optional[str]:
        """Import an NNC / nnabla file into a new project file (asking where); its path, or None."""
        from engine.interop import InteropError, import_to_project

        target = dialogs.ask_import_target(self.window, source)
        if not target:
            return None
        try:
            result, _ = import_to_project(source, target, backup=True)
        except (InteropError, OSError) as exc:
            dialogs.show_project_error(self.window, "import", source, exc)
            return None
        if result.unsupported or result.notes:
            dialogs.show_import_report(self.window, result.report())
        return os.path.abspath(target)

    def recover_untitled(self) -> bool:
        """At start-up without a project: offer the untitled project a crash left behind."""
        side = autosave.pending_autosave(None)
        if not side:
            return False
        if not dialogs.ask_recover_autosave(self.window, "An untitled project", autosave.saved_at(side)):
            autosave.remove_quietly(side)
            return False
        try:
            project = autosave.read_autosave(side, None)
        except (ProjectError, OSError) as exc:
            dialogs.show_project_error(self.window, "recover", side, exc)
            return False
        self.autosaver.discard()
        self.document.replace_project(project, modified=True)
        self.autosaver.adopt(side)
        return True

    # ---- saving ----------------------------------------------------------------------------------
    def save(self) -> bool:
        if not self.document.path:
            return self.save_as()
        return self._save_to(self.document.path)

    def save_as(self) -> bool:
        current = self.document.path
        suggested = current or os.path.join(self._start_dir(), f"{self.document.project.name or 'untitled'}.yaml")
        path = dialogs.ask_save_path(self.window, suggested)
        if not path:
            return False
        path = os.path.abspath(path)
        outside = self._rebase_datasets(current, path)
        if not self._save_to(path):
            return False
        if outside:
            self.message_posted.emit(
                f"saved {path}; its datasets stay where they were ({outside[0]}): copy them into the new "
                "folder, or train with 'nnconsole train --allow-outside-data'")
        return True

    def _rebase_datasets(self, old: Optional[str], new: str) -> List[str]:
        """Keep dataset paths pointing at the same files when the project file moves folder; return
        the paths that now lead outside the project's folder."""
        old_dir = os.path.dirname(old) if old else os.getcwd()
        new_dir = os.path.dirname(new)
        if os.path.normpath(old_dir) == os.path.normpath(new_dir):
            return []
        outside = []
        for key in ("training", "validation"):
            rel = getattr(self.document.project.datasets, key)
            if rel and not os.path.isabs(rel):
                moved = os.path.relpath(os.path.normpath(os.path.join(old_dir, rel)), new_dir).replace(os.sep, "/")
                self.document.set_setting(f"datasets.{key}", moved)
                if moved.startswith("../"):
                    outside.append(moved)
        return outside

    def _save_to(self, path: str) -> bool:
        try:
            saved = self.document.save(path)
        except (OSError, ValueError) as exc:
            dialogs.show_project_error(self.window, "save", path, exc)
            return False
        self.autosaver.discard()
        self.settings.add_recent_project(saved)
        self.message_posted.emit(f"saved {saved}")
        return True
