"""Every modal question the app asks, behind one small function each so tests can replace them.

Callers always go through the module (``dialogs.ask_save_changes(...)``), never import the
functions by name, so ``monkeypatch.setattr(dialogs, "ask_save_changes", ...)`` reaches them.
"""
from __future__ import annotations

import os
import traceback
from typing import Optional, Tuple

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from engine.project.errors import ProjectError

PROJECT_FILTER = "nnconsole projects (*.yaml *.yml);;All files (*)"
# The open dialog also takes NNC / nnabla files, which are imported into a new project file.
OPEN_FILTER = ("nnconsole and NNC files (*.yaml *.yml *.sdcproj *.nntxt *.nnp *.prototxt *.protobuf);;"
               "nnconsole projects (*.yaml *.yml);;NNC / nnabla files (*.sdcproj *.nntxt *.nnp *.prototxt "
               "*.protobuf);;All files (*)")

SAVE, DISCARD, CANCEL = "save", "discard", "cancel"


def ask_save_changes(parent: Optional[QWidget], name: str) -> str:
    """'save', 'discard' or 'cancel' for a modified project about to be closed or replaced."""
    box = QMessageBox(parent)
    box.setObjectName("save_changes_box")
    box.setIcon(QMessageBox.Warning)
    box.setWindowTitle("Unsaved changes")
    box.setText(f"Save the changes to {name}?")
    box.setInformativeText("Your changes are lost if you don't save them.")
    box.setStandardButtons(QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel)
    box.setDefaultButton(QMessageBox.Save)
    answer = box.exec()
    return {QMessageBox.Save: SAVE, QMessageBox.Discard: DISCARD}.get(QMessageBox.StandardButton(answer), CANCEL)


def ask_open_project(parent: Optional[QWidget], start_dir: str) -> Optional[str]:
    """A project file to open, or None."""
    path, _ = QFileDialog.getOpenFileName(parent, "Open project", start_dir, OPEN_FILTER)
    return path or None


def ask_import_target(parent: Optional[QWidget], source: str) -> Optional[str]:
    """Where to save the project imported from an NNC / nnabla file (a .yaml beside it), or None."""
    suggested = os.path.splitext(source)[0] + ".yaml"
    path, _ = QFileDialog.getSaveFileName(parent, f"Save the project imported from {os.path.basename(source)}",
                                          suggested, PROJECT_FILTER)
    if path and not os.path.splitext(path)[1]:
        path += ".yaml"
    return path or None


def show_import_report(parent: Optional[QWidget], report: str) -> None:
    """What an import could not carry over, listed by name (never dropped silently)."""
    QMessageBox.information(parent, "Import report", report)


def ask_save_path(parent: Optional[QWidget], suggested: str) -> Optional[str]:
    """Where to save the project (a .yaml file), or None."""
    path, _ = QFileDialog.getSaveFileName(parent, "Save project as", suggested, PROJECT_FILTER)
    if path and not os.path.splitext(path)[1]:
        path += ".yaml"
    return path or None


def ask_directory(parent: Optional[QWidget], start_dir: str) -> Optional[str]:
    """A folder, or None."""
    path = QFileDialog.getExistingDirectory(parent, "Choose a folder", start_dir)
    return path or None


def choose_template(parent: Optional[QWidget], start_dir: str) -> Optional[Tuple[str, str]]:
    """(template name, new project folder) from the template chooser, or None when cancelled."""
    from console_app.templates_dialog import TemplateChooserDialog

    dialog = TemplateChooserDialog(parent, start_dir)
    try:
        return dialog.selection() if dialog.exec() else None
    finally:
        dialog.deleteLater()


def ask_recover_autosave(parent: Optional[QWidget], name: str, saved_at: str) -> bool:
    """True to restore the autosaved copy of ``name`` (left by a crash), False to throw it away."""
    box = QMessageBox(parent)
    box.setObjectName("recover_box")
    box.setIcon(QMessageBox.Question)
    box.setWindowTitle("Recover unsaved changes")
    box.setText(f"{name} has unsaved changes from {saved_at} that were never saved "
                "(nnconsole did not close normally).")
    box.setInformativeText("Recover them? If you don't, the autosaved copy is deleted.")
    recover = box.addButton("Recover", QMessageBox.AcceptRole)
    box.addButton("Discard", QMessageBox.DestructiveRole)
    box.setDefaultButton(recover)
    box.exec()
    return box.clickedButton() is recover


def show_error(parent: Optional[QWidget], title: str, text: str, informative: str = "",
               details: str = "") -> None:
    """A short message, a line saying what to do, and the long story under 'Show Details'."""
    box = QMessageBox(parent)
    box.setObjectName("error_box")
    box.setIcon(QMessageBox.Critical)
    box.setWindowTitle(title)
    box.setText(text)
    if informative:
        box.setInformativeText(informative)
    if details:
        box.setDetailedText(details)
    box.exec()


def show_project_error(parent: Optional[QWidget], action: str, path: str, exc: BaseException) -> None:
    """Explain why a project could not be opened or saved, with different words per kind of failure."""
    name = os.path.basename(path) if path else "the project"
    if isinstance(exc, ProjectError) and exc.kind == "unsupported-version":
        problem = exc.problems[0] if exc.problems else None
        text = f"Cannot {action} {name}: {problem.message if problem else 'unsupported file'}."
        informative = problem.fix if problem and problem.fix else "Open a project.yaml written by nnconsole."
        details = str(exc)
    elif isinstance(exc, ProjectError):
        errors = [p for p in exc.problems if p.severity == "error"]
        text = f"Cannot {action} {name}: {len(errors)} problem{'s' if len(errors) != 1 else ''} in the file."
        first = errors[0] if errors else None
        informative = (f"Line {first.line}: {first.message}" if first and first.line else
                       (first.message if first else "")) + (f" ({first.fix})" if first and first.fix else "")
        details = str(exc)
    elif isinstance(exc, OSError):
        text = f"Cannot {action} {name}: {exc.strerror or exc}."
        informative = "Check that the folder exists and that you may write there."
        details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    else:
        text = f"Cannot {action} {name}: {exc}"
        informative = "This is a bug in nnconsole; the details below help to report it."
        details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    show_error(parent, f"Cannot {action} project", text, informative, details)


def show_about(parent: Optional[QWidget]) -> None:
    QMessageBox.about(parent, "About nnconsole",
                      "<b>nnconsole</b> 0.1.0<br>A Linux training console in the style of Neural Network "
                      "Console, built on nnabla.<br>Projects edited here train unchanged with "
                      "<code>nnconsole train PROJECT</code>.")
