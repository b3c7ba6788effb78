"""The TRAINING tab's questions and file choosers, as small functions tests can replace."""
from __future__ import annotations

import os
from typing import List, Optional

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QFontMetrics, QGuiApplication
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFileDialog, QInputDialog, QLabel, QLineEdit, QMessageBox,
                               QVBoxLayout, QWidget)

STOP_RUNS, LEAVE_RUNNING, CANCEL_QUIT = "stop", "leave", "cancel"


def ask_quit_during_run(parent: Optional[QWidget], projects: List[str]) -> str:
    """Quitting while runs go: 'stop' them (checkpoints kept), 'leave' them running, or 'cancel'."""
    box = QMessageBox(parent)
    box.setObjectName("quit_during_run_box")
    box.setIcon(QMessageBox.Question)
    box.setWindowTitle("Training is running")
    which = ", ".join(projects)
    box.setText(f"{'A run is' if len(projects) == 1 else f'{len(projects)} runs are'} still training ({which}).")
    box.setInformativeText(
        "Stop and quit: the run stops at the next update and keeps a checkpoint (resume it later).\n\n"
        "Leave it running and quit: it trains on without the window; open its project again to follow "
        "it and stop it.")
    stop = box.addButton("Stop and quit", QMessageBox.DestructiveRole)
    leave = box.addButton("Leave it running and quit", QMessageBox.AcceptRole)
    cancel = box.addButton(QMessageBox.Cancel)
    box.setDefaultButton(cancel)
    box.exec()
    clicked = box.clickedButton()
    return STOP_RUNS if clicked is stop else LEAVE_RUNNING if clicked is leave else CANCEL_QUIT


def confirm_save(parent: Optional[QWidget], name: str) -> bool:
    """'The project has unsaved changes: save and run?' True to save."""
    answer = QMessageBox.question(
        parent, "Save before training",
        f"{name} has unsaved changes. The engine trains the saved file, so it must be saved first.\n\n"
        "Save it and start the run?", QMessageBox.Save | QMessageBox.Cancel, QMessageBox.Save)
    return answer == QMessageBox.Save


def confirm_outside_data(parent: Optional[QWidget], paths: list) -> bool:
    """The datasets lie outside the project folder: train with them anyway? True to allow (this run)."""
    answer = QMessageBox.question(
        parent, "Data outside the project folder",
        "This project reads data outside its own folder:\n\n" + "\n".join(paths) + "\n\n"
        "nnconsole refuses such paths by default, so a shared project cannot read files you did not "
        "choose. Train with them anyway (nnconsole train --allow-outside-data)?",
        QMessageBox.Yes | QMessageBox.Cancel, QMessageBox.Cancel)
    return answer == QMessageBox.Yes


def choose_project_path(parent: Optional[QWidget], suggested: str = "project.yaml") -> str:
    """Where to save a project that has never been saved ('' when cancelled): the app's own save dialog."""
    from nnconsole.app.shell import dialogs as app_dialogs

    return app_dialogs.ask_save_path(parent, suggested) or ""


def choose_save_path(parent: Optional[QWidget], caption: str, suggested: str, filters: str) -> str:
    """A file to write (curve CSV or PNG); '' when cancelled."""
    path, _ = QFileDialog.getSaveFileName(parent, caption, suggested, filters)
    return path


def open_folder(path: str, parent: Optional[QWidget] = None) -> bool:
    """Show a folder in the desktop's file manager; where none opens it (no file manager, a remote session),
    say so and show the path to copy. Returns whether a file manager took it."""
    path = os.path.abspath(path)
    if QDesktopServices.openUrl(QUrl.fromLocalFile(path)):
        return True
    show_path(parent, path)
    return False


def show_path(parent: Optional[QWidget], path: str) -> QDialog:
    """'No file manager opened the folder': its path, selected, in a read-only field, and a Copy button.
    Shown window-modal without blocking (``open``); returned for tests."""
    dialog = QDialog(parent)
    dialog.setObjectName("folder_path_dialog")
    dialog.setWindowTitle("Open folder")
    dialog.setAttribute(Qt.WA_DeleteOnClose)
    text = QLabel("No file manager could open this folder here (none is installed, or the desktop has no "
                  "default one). Its path, to open it yourself:", dialog)
    text.setWordWrap(True)
    field = QLineEdit(path, dialog)
    field.setObjectName("folder_path")
    field.setReadOnly(True)
    field.setMinimumWidth(min(900, max(420, field.fontMetrics().horizontalAdvance(path) + 24)))
    field.selectAll()
    buttons = QDialogButtonBox(QDialogButtonBox.Close, dialog)
    copy = buttons.addButton("Copy path", QDialogButtonBox.ActionRole)
    copy.setObjectName("folder_path_copy")
    copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(path))
    buttons.rejected.connect(dialog.reject)
    layout = QVBoxLayout(dialog)
    layout.addWidget(text)
    layout.addWidget(field)
    layout.addWidget(buttons)
    _SHOWN.append(dialog)  # a dialog without a parent lives as long as Python holds it: until it is closed
    dialog.finished.connect(lambda _result: _SHOWN.remove(dialog) if dialog in _SHOWN else None)
    dialog.open()
    field.setFocus()
    return dialog


_SHOWN: List[QDialog] = []


# ---- the run history's menu --------------------------------------------------------------------------
def confirm_delete_runs(parent: Optional[QWidget], names: List[str]) -> bool:
    """'Move these runs to the trash?' True to go on (Cancel is the default)."""
    answer = QMessageBox.question(parent, "Delete runs" if len(names) > 1 else "Delete run", delete_question(names),
                                  QMessageBox.Yes | QMessageBox.Cancel, QMessageBox.Cancel)
    return answer == QMessageBox.Yes


def delete_question(names: List[str]) -> str:
    """The question of ``confirm_delete_runs``, worded for one run or several."""
    listed = "\n".join(names[:12]) + (f"\n... and {len(names) - 12} more" if len(names) > 12 else "")
    if len(names) == 1:
        return (f"Move this run to the trash?\n\n{listed}\n\n"
                "Its curves, checkpoints and trained parameters go with it; restore it from the trash.")
    return (f"Move these runs to the trash?\n\n{listed}\n\n"
            "Their curves, checkpoints and trained parameters go with them; restore them from the trash.")


def ask_run_note(parent: Optional[QWidget], name: str, title: str, note: str) -> Optional[tuple]:
    """(title, note) the user typed for run ``name``; None when cancelled."""
    from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLineEdit, QPlainTextEdit

    dialog = QDialog(parent)
    dialog.setObjectName("run_note_dialog")
    dialog.setWindowTitle(f"Rename / annotate {name}")
    title_edit = QLineEdit(title)
    title_edit.setObjectName("run_note_title")
    title_edit.setPlaceholderText(name)
    note_edit = QPlainTextEdit(note)
    note_edit.setObjectName("run_note_text")
    note_edit.setPlaceholderText("What this run tried, what came of it...")
    buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
    buttons.accepted.connect(dialog.accept)
    buttons.rejected.connect(dialog.reject)
    form = QFormLayout(dialog)
    form.addRow("Title:", title_edit)
    form.addRow("Note:", note_edit)
    form.addRow(buttons)
    fit_title(dialog)
    if dialog.exec() != QDialog.Accepted:
        return None
    return title_edit.text(), note_edit.toPlainText()


# What a window manager's title bar takes beside the title's text: icon, buttons and padding (about 3 buttons
# of 30 px and an icon on common desktops), so a dialog at least this much wider than its title shows it whole.
TITLE_BAR_EXTRA = 160


def fit_title(dialog: QWidget) -> None:
    """Make ``dialog`` wide enough that the window manager's title bar shows its whole title."""
    font = QGuiApplication.font()
    font.setBold(True)  # title bars draw bold text on most desktops: the wider of the two
    need = QFontMetrics(font).horizontalAdvance(dialog.windowTitle()) + TITLE_BAR_EXTRA
    dialog.setMinimumWidth(max(dialog.minimumWidth(), need))


def workers_dialog(parent: Optional[QWidget], name: str, workers: int) -> QInputDialog:
    """The question ``ask_workers`` shows: 'Resume <run>' as its title, wide enough to show it whole."""
    dialog = QInputDialog(parent)
    dialog.setObjectName("resume_workers_dialog")
    dialog.setInputMode(QInputDialog.IntInput)
    dialog.setWindowTitle(f"Resume {name}")
    dialog.setLabelText(f"Resume run {name} with how many workers (GPUs, or CPU processes)?")
    dialog.setIntRange(1, 4096)
    dialog.setIntValue(workers)
    fit_title(dialog)
    return dialog


def ask_workers(parent: Optional[QWidget], name: str, workers: int) -> Optional[int]:
    """The worker count to resume run ``name`` with (its own by default); None when cancelled."""
    dialog = workers_dialog(parent, name, workers)
    return dialog.intValue() if dialog.exec() == QDialog.Accepted else None


EXPORT_FILTERS = {"NNP, for nnabla and NNC (*.nnp)": "nnp", "ONNX (*.onnx)": "onnx", "nntxt, the network as "
                  "text (*.nntxt)": "nntxt"}


def choose_export(parent: Optional[QWidget], suggested: str) -> Optional[tuple]:
    """(format, file) to export a trained run to; None when cancelled. The format follows the filter."""
    path, chosen = QFileDialog.getSaveFileName(parent, "Export the trained model", suggested,
                                               ";;".join(EXPORT_FILTERS))
    if not path:
        return None
    fmt = EXPORT_FILTERS.get(chosen) or os.path.splitext(path)[1].lstrip(".").lower()
    return (fmt, path) if fmt in EXPORT_FILTERS.values() else None


def choose_reedit_path(parent: Optional[QWidget], suggested: str) -> str:
    """Where to save the project made from a run ('' when cancelled)."""
    path, _ = QFileDialog.getSaveFileName(parent, "Save the run's project as", suggested, "Project (*.yaml)")
    return path


def tell(parent: Optional[QWidget], title: str, text: str, warning: bool = False) -> None:
    """A message the user acknowledges."""
    (QMessageBox.warning if warning else QMessageBox.information)(parent, title, text)
