"""File operations of the main window: new from template, open, save, save as, recent projects,
the unsaved-changes prompt, crash recovery from autosave copies, and edits made to the project file
outside nnconsole (asked about before a save over them and when the window becomes active again).

Every question goes through ``nnconsole.app.shell.dialogs`` so tests can answer it. An NNC / nnabla file is
imported by ``nnconsole import`` in a subprocess (``nnconsole.app.bridge.import_runner``), then opened.
"""
from __future__ import annotations

import os
from typing import Any, List, Optional, Tuple

from PySide6.QtCore import QEvent, QObject, Signal

from nnconsole.app.bridge import import_runner
from nnconsole.app.document import autosave, file_versions
from nnconsole.app.shell import dialogs
from nnconsole.app.shell import settings as app_settings
from nnconsole.engine.project.errors import ProjectError, UnsupportedVersionError
from nnconsole.engine.project.io import load_project
from nnconsole.engine.project.model import Project
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.interop.formats import IMPORT_EXTENSIONS


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
        self._asked_about: Optional[file_versions.DiskState] = None  # the outside version last asked about
        self._asking = False
        self._kept: Optional[str] = None  # where the last save kept an outside version
        document.outside_version_kept.connect(self._outside_version_kept)  # any save: TRAINING's too
        window.installEventFilter(self)  # WindowActivate: the user may come back from another editor

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
    def new_from_template(self, template: Optional[str] = None) -> bool:
        """Choose a template (``template`` first, as the start page offers it) and a new folder,
        create it and open the project in it."""
        if not self.maybe_save():
            return False
        preselected = (template,) if template else ()
        choice = dialogs.choose_template(self.window, self.settings.get(app_settings.LAST_DIRECTORY)
                                         or os.path.expanduser("~"), *preselected)
        if not choice:
            return False
        name, destination = choice
        from nnconsole.engine.project.templates import create_from_template

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
            return load_valid_project(path, check_datasets=False)
        except UnsupportedVersionError:
            raise
        except ProjectError as strict:
            try:
                project = load_project(path)
            except ProjectError:
                raise strict from None
            self.last_problems = len([p for p in strict.problems if p.severity == "error"])
            return project

    def open_path(self, path: str, ask_save: bool = True) -> bool:
        """Open ``path``, offering to recover an autosaved copy left by a crash."""
        if ask_save and not self.maybe_save():
            return False
        path = os.path.abspath(path)
        if os.path.splitext(path)[1].lower() in IMPORT_EXTENSIONS:
            path = self.import_nnc(path)
            if not path:
                return False
        state = file_versions.disk_state(path)  # before reading: a change during the read is then noticed
        try:
            project = self.load(path)
        except (ProjectError, OSError) as exc:
            dialogs.show_project_error(self.window, "open", path, exc)
            return False
        recovery = self._offer_recovery(path, project)
        if recovery is None:
            return False
        project, side, kept = recovery
        self.autosaver.discard()
        self.document.replace_project(project, modified=side is not None, disk_state=state)
        if side:
            self.autosaver.adopt(side)
        self.settings.add_recent_project(path)
        self.settings.set(app_settings.LAST_DIRECTORY, os.path.dirname(os.path.dirname(path)))
        self.project_opened.emit(path)
        problems = self.last_problems
        note = f" with {problems} problem{'s' if problems != 1 else ''}: see Issues in the EDIT tab" if problems else ""
        note += f"; the other version is kept beside it as {os.path.basename(kept)}" if kept else ""
        self.message_posted.emit(("recovered unsaved changes of " if side else "opened ") + path + note)
        return True

    def _offer_recovery(self, path: str, project: Project) -> Optional[Tuple[Project, Optional[str], Optional[str]]]:
        """Deal with an autosave a crash left for ``path``: (the project to show, the side file it came
        from or None, the copy kept of the version not shown or None); None when the user cancels.

        A project file changed after its autosave (outside nnconsole, or by another nnconsole) holds
        work too: the user chooses which to open and the other is kept beside the project.
        """
        side = autosave.pending_autosave(path)
        if not side:
            return project, None, None
        name = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
        older = autosave.older_than_project(side, path)
        if older:
            answer = dialogs.ask_recover_older_autosave(self.window, name, autosave.saved_at(side),
                                                        autosave.saved_at(path))
            if answer not in (dialogs.RECOVER, dialogs.KEEP_FILE):
                return None
            recover = answer == dialogs.RECOVER
        else:
            recover = dialogs.ask_recover_autosave(self.window, name, autosave.saved_at(side))
        if not recover:
            if not older:  # the question said so: declining deletes the copy
                autosave.remove_quietly(side)
                return project, None, None
            try:
                kept = file_versions.keep_copy(side, path, "autosave")
            except OSError as exc:
                dialogs.show_project_error(self.window, "recover", side, exc)
                return None
            autosave.remove_quietly(side)  # kept under a name that is not offered again
            return project, None, kept
        try:
            recovered = autosave.read_autosave(side, path)
            kept = file_versions.keep_copy(path, path, "outside") if older else None
        except (ProjectError, OSError) as exc:
            dialogs.show_project_error(self.window, "recover", side, exc)
            return (project, None, None) if not older else None
        return recovered, side, kept

    def reload(self) -> bool:
        """Show the project file as it is on disk now, discarding this window's unsaved changes."""
        path = self.document.path
        if not path:
            return False
        self.autosaver.discard()
        return self.open_path(path, ask_save=False)

    # ---- edits made outside nnconsole ---------------------------------------------------------------
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.WindowActivate and watched is self.window:
            self.check_outside_change()
        return False

    def check_outside_change(self) -> None:
        """Ask once about each version of the project file changed outside nnconsole (when the window
        becomes active again); 'Cancel' means decide later: a save over it asks again."""
        current = self.document.changed_on_disk()
        if current is None or current == self._asked_about or self._asking:
            return
        answer = self._ask_outside_change(current)
        if answer == dialogs.OVERWRITE:
            self._write(self.document.path)
        elif answer == dialogs.RELOAD:
            self.reload()
        elif answer == dialogs.SAVE_AS:
            self.save_as()

    def _ask_outside_change(self, current: file_versions.DiskState) -> str:
        self._asked_about, self._asking = current, True
        try:
            return dialogs.ask_outside_change(self.window, self.document.display_name())
        finally:
            self._asking = False

    def import_nnc(self, source: str) -> Optional[str]:
        """Import an NNC / nnabla file into a new project file (asking where) with ``nnconsole import`` in a
        subprocess (the importers load nnabla, which the GUI process never does); its path, or None."""
        target = dialogs.ask_import_target(self.window, source)
        if not target:
            return None
        outcome = import_runner.run_import(self.window, source, os.path.abspath(target))
        if outcome.cancelled:
            self.message_posted.emit(f"import of {source} cancelled")
            return None
        if not outcome.project:
            dialogs.show_error(self.window, "Cannot import project", *outcome.error_text())
            return None
        if outcome.has_report:
            dialogs.show_import_report(self.window, outcome.report)
        return os.path.abspath(outcome.project)

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
        """Save to ``path``, first asking when it is the project file and it was changed outside."""
        same_file = self.document.path and os.path.abspath(path) == os.path.abspath(self.document.path)
        current = self.document.changed_on_disk() if same_file else None
        if current is not None:
            answer = self._ask_outside_change(current)
            if answer == dialogs.RELOAD:
                self.reload()
                return False
            if answer == dialogs.SAVE_AS:
                return self.save_as()
            if answer != dialogs.OVERWRITE:
                return False
        return self._write(path)

    def _write(self, path: str) -> bool:
        """Save without asking (the document keeps any outside version as a copy)."""
        self._kept = None
        try:
            saved = self.document.save(path)
        except (OSError, ValueError) as exc:
            dialogs.show_project_error(self.window, "save", path, exc)
            return False
        self.autosaver.discard()
        self.settings.add_recent_project(saved)
        note = f"; {self._kept_note(self._kept)}" if self._kept else ""
        self.message_posted.emit(f"saved {saved}{note}")
        return True

    def _outside_version_kept(self, kept: str) -> None:
        self._kept = kept
        self.message_posted.emit(self._kept_note(kept))

    @staticmethod
    def _kept_note(kept: str) -> str:
        return f"the version changed outside nnconsole is kept beside it as {os.path.basename(kept)}"
