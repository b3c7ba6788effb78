"""Every modal question the app asks, behind one small function each so tests can replace them.

Callers always go through the module (``dialogs.ask_save_changes(...)``), never import the
functions by name, so ``monkeypatch.setattr(dialogs, "ask_save_changes", ...)`` reaches them.
"""
from __future__ import annotations

import os
import traceback
from typing import List, Optional, Tuple

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QFileDialog, QMessageBox, QWidget

from nnconsole.app.shell import help_pages
from nnconsole.app.shell.report_dialog import ReportDialog, report_parts
from nnconsole.engine.project.errors import ProjectError

PROJECT_FILTER = "nnconsole projects (*.yaml *.yml);;All files (*)"
# The open dialog also takes NNC / nnabla files, which are imported into a new project file.
OPEN_FILTER = ("nnconsole and NNC files (*.yaml *.yml *.sdcproj *.nntxt *.nnp *.prototxt *.protobuf);;"
               "nnconsole projects (*.yaml *.yml);;NNC / nnabla files (*.sdcproj *.nntxt *.nnp *.prototxt "
               "*.protobuf);;All files (*)")

SAVE, DISCARD, CANCEL = "save", "discard", "cancel"
# answers to "the project file changed outside nnconsole"
OVERWRITE, RELOAD, SAVE_AS = "overwrite", "reload", "save_as"
# answers to "the project file is newer than its autosave"
RECOVER, KEEP_FILE = "recover", "file"


def ask_save_changes(parent: Optional[QWidget], name: str) -> str:
    """'save', 'discard' or 'cancel' for a modified project about to be closed or replaced."""
    box = QMessageBox(parent)
    box.setObjectName("save_changes_box")
    box.setIcon(QMessageBox.Warning)
    box.setWindowTitle("Unsaved changes")
    box.setTextFormat(Qt.PlainText)  # a project's name is the user's: shown, never rendered
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
    """What an import could not carry over, listed by name (never dropped silently), in a dialog that fits
    the screen, scrolls and lets the text be copied (``report_dialog``)."""
    headline, body = report_parts(report)
    dialog = ReportDialog(parent, "Import report", headline, body)
    try:
        dialog.exec()
    finally:
        dialog.deleteLater()


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


def choose_template(parent: Optional[QWidget], start_dir: str,
                    template: Optional[str] = None) -> Optional[Tuple[str, str]]:
    """(template name, new project folder) from the template chooser (``template`` chosen first), or None."""
    from nnconsole.app.shell.templates_dialog import TemplateChooserDialog

    dialog = TemplateChooserDialog(parent, start_dir)
    if template:
        dialog.select_template(template)
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
    box.setTextFormat(Qt.PlainText)
    box.setText(f"{name} has unsaved changes from {saved_at} that were never saved "
                "(nnconsole did not close normally).")
    box.setInformativeText("Recover them? If you don't, the autosaved copy is deleted.")
    recover = box.addButton("Recover", QMessageBox.AcceptRole)
    box.addButton("Discard", QMessageBox.DestructiveRole)
    box.setDefaultButton(recover)
    box.exec()
    return box.clickedButton() is recover


def _stem(name: str) -> str:
    """'project' for 'digits/project.yaml'."""
    return os.path.splitext(os.path.basename(name))[0]


def _answer(box: QMessageBox, buttons: List[QAbstractButton], answers: Tuple[str, ...]) -> str:
    """The answer of the button clicked (CANCEL when the box was closed otherwise)."""
    clicked = box.clickedButton()
    return next((a for b, a in zip(buttons, answers) if b is clicked), CANCEL)


def _question_box(parent: Optional[QWidget], object_name: str, icon: QMessageBox.Icon, title: str, text: str,
                  informative: str, buttons: List[Tuple[str, QMessageBox.ButtonRole]], default: int
                  ) -> Tuple[QMessageBox, List[QAbstractButton]]:
    """A plain-text question with the given buttons (labels and roles) then Cancel, which is the escape;
    ``default`` indexes the returned buttons. Built apart from exec() so tests can look at it."""
    box = QMessageBox(parent)
    box.setObjectName(object_name)
    box.setIcon(icon)
    box.setWindowTitle(title)
    box.setText(text)
    box.setTextFormat(Qt.PlainText)
    box.setInformativeText(informative)
    made: List[QAbstractButton] = [box.addButton(label, role) for label, role in buttons]
    made.append(box.addButton(QMessageBox.Cancel))
    box.setDefaultButton(made[default])
    box.setEscapeButton(made[-1])
    return box, made


def outside_change_box(parent: Optional[QWidget], name: str) -> Tuple[QMessageBox, List[QAbstractButton]]:
    """The question for a project file changed outside nnconsole, and its buttons in ``ask_outside_change``'s
    order (Cancel, the default, last)."""
    return _question_box(
        parent, "outside_change_box", QMessageBox.Warning, "Project changed on disk",
        f"{name} was changed outside nnconsole since it was opened or saved here.",
        f"Overwrite saves this window's version and keeps the changed file beside it as "
        f"{_stem(name)}.outside-<time>.yaml. Reload shows the changed file instead and "
        "discards this window's unsaved changes. Save As keeps both under different names.",
        [("Overwrite", QMessageBox.AcceptRole), ("Reload (discard mine)", QMessageBox.DestructiveRole),
         ("Save As…", QMessageBox.ActionRole)], default=3)


def ask_outside_change(parent: Optional[QWidget], name: str) -> str:
    """'overwrite', 'reload', 'save_as' or 'cancel' for a project file changed outside nnconsole."""
    box, buttons = outside_change_box(parent, name)
    box.exec()
    return _answer(box, buttons, (OVERWRITE, RELOAD, SAVE_AS, CANCEL))


def older_autosave_box(parent: Optional[QWidget], name: str, autosaved_at: str,
                       file_at: str) -> Tuple[QMessageBox, List[QAbstractButton]]:
    """The question for a crash's autosave older than its project file, and its buttons in
    ``ask_recover_older_autosave``'s order."""
    return _question_box(
        parent, "older_autosave_box", QMessageBox.Question, "Recover unsaved changes",
        f"{name} has unsaved changes from {autosaved_at} (nnconsole did not close normally), "
        f"but the file itself was changed later, at {file_at}.",
        f"Which version do you want to open? The other one is kept beside the project, as "
        f"{_stem(name)}.autosave-<time>.yaml or {_stem(name)}.outside-<time>.yaml.",
        [("Open the newer file", QMessageBox.AcceptRole), ("Recover the autosave", QMessageBox.AcceptRole)],
        default=0)


def ask_recover_older_autosave(parent: Optional[QWidget], name: str, autosaved_at: str, file_at: str) -> str:
    """'file', 'recover' or 'cancel' when a crash's autosave is older than the project file."""
    box, buttons = older_autosave_box(parent, name, autosaved_at, file_at)
    box.exec()
    return _answer(box, buttons, (KEEP_FILE, RECOVER, CANCEL))


def error_box(parent: Optional[QWidget], title: str, text: str, informative: str = "",
              details: str = "") -> QMessageBox:
    """The error dialog, not yet shown: the message, what to do, the long story under 'Show Details', and a
    'What does this mean?' button that leads to Help's error page."""
    box = QMessageBox(parent)
    box.setObjectName("error_box")
    box.setIcon(QMessageBox.Critical)
    box.setWindowTitle(title)
    box.setTextFormat(Qt.PlainText)  # messages quote file, layer and run names: shown, never rendered
    box.setText(text)
    if informative:
        box.setInformativeText(informative)
    if details:
        box.setDetailedText(details)
    box.addButton(QMessageBox.Ok)
    meaning = box.addButton("What does this mean?", QMessageBox.HelpRole)
    meaning.setObjectName("error_help_button")
    return box


def follow_help(box: QMessageBox, parent: Optional[QWidget] = None) -> bool:
    """After ``error_box`` closed: open Help's error page when its 'What does this mean?' was clicked."""
    clicked = box.clickedButton()
    if clicked is None or clicked.objectName() != "error_help_button":
        return False
    help_pages.open_help("errors", parent)
    return True


def show_error(parent: Optional[QWidget], title: str, text: str, informative: str = "",
               details: str = "") -> None:
    """A short message, a line saying what to do, the long story under 'Show Details', and a link to what
    the error means."""
    box = error_box(parent, title, text, informative, details)
    box.exec()
    follow_help(box, parent)


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
