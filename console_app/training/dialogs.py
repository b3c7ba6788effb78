"""The TRAINING tab's questions and file choosers, as small functions tests can replace."""
from __future__ import annotations

import os
from typing import List, Optional

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

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
    from nnconsole.app import dialogs as app_dialogs

    return app_dialogs.ask_save_path(parent, suggested) or ""


def choose_save_path(parent: Optional[QWidget], caption: str, suggested: str, filters: str) -> str:
    """A file to write (curve CSV or PNG); '' when cancelled."""
    path, _ = QFileDialog.getSaveFileName(parent, caption, suggested, filters)
    return path


def open_folder(path: str) -> bool:
    """Show a folder in the desktop's file manager."""
    return QDesktopServices.openUrl(QUrl.fromLocalFile(os.path.abspath(path)))
