"""The details of an optimizer after the first (a GAN's discriminator, say): its whole ``Optimizer`` in a dialog.

The dialog shows the CONFIG tab's own Optimizer and Solver-parameters forms (``OptimizerForm``, from the settings
schema) bound to ``OptimizerDraft``, a stand-in document holding a copy of that optimizer, so edits reach the
project only on OK: then the copy replaces the optimizer as one undo step of the document (``apply``, the
optimizer list's own edit). Cancel drops the copy. OK refuses a field whose text is not taken, and a value the
project's settings checks (``validate.check_settings``) reject, naming the field; the dialog stays open.
"""
from __future__ import annotations

import copy
import dataclasses
from html import escape
from types import SimpleNamespace
from typing import Any, Callable, List, Optional

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QUndoStack
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from nnconsole.app.config.commands import field_label
from nnconsole.app.config.optimizer_form import OptimizerForm
from nnconsole.engine.project.model import ExtraOptimizer, Optimizer
from nnconsole.engine.project.schema import set_value_at, value_at

ERROR_STYLE = "QLabel { color: #b00020; }"


class OptimizerDraft(QObject):
    """A document-like holder of one Optimizer copy (``project.optimizer``) for the forms to edit.

    It has what the forms use of ``ProjectDocument``: ``get_setting``/``set_setting`` by dotted path,
    ``settings_changed`` and an undo stack (its own, dropped with the dialog).
    """

    settings_changed = Signal(str)

    def __init__(self, optimizer: Optimizer, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self.project = SimpleNamespace(optimizer=copy.deepcopy(optimizer))
        self.undo_stack = QUndoStack(self)

    @property
    def optimizer(self) -> Optimizer:
        return self.project.optimizer

    def get_setting(self, dotted: str) -> Any:
        return value_at(self.project, dotted)

    def set_setting(self, dotted: str, value: Any) -> None:
        set_value_at(self.project, dotted, value)
        self.settings_changed.emit(dotted)


class OptimizerDetailsDialog(QDialog):
    """Edit the Optimizer of ``document.project.optimizers[index]``.

    OK calls ``apply(optimizer)``, which returns why it was refused ('' when taken).
    """

    def __init__(self, document: Any, index: int, apply: Callable[[Optimizer], str],
                 parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        entry: ExtraOptimizer = document.project.optimizers[index]
        self.setObjectName("optimizer_details")
        self.setWindowTitle(f"Optimizer {entry.name}: solver and schedule")
        self.document = document
        self.index = index
        self.apply = apply
        self.draft = OptimizerDraft(entry.optimizer, self)
        self.form = OptimizerForm(self.draft, self, keep_refused=True)
        self.draft.settings_changed.connect(self.form.setting_changed)
        what = QLabel(f"Optimizer <b>{escape(entry.name)}</b> trains network <b>{escape(entry.network)}</b> on the "
                      f"{escape(entry.dataset)} dataset. Its name, network, dataset and range are edited in the list.")
        what.setObjectName("optimizer_details_what")
        what.setWordWrap(True)
        self.note = QLabel()  # what a solver switch did to the learning rate
        self.note.setObjectName("optimizer_details_note")
        self.note.setWordWrap(True)
        self.note.setTextFormat(Qt.PlainText)
        self.error = QLabel()
        self.error.setObjectName("optimizer_details_error")
        self.error.setWordWrap(True)
        self.error.setTextFormat(Qt.PlainText)
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(what)
        layout.addWidget(self.form.optimizer_group)
        layout.addWidget(self.form.solver_group)
        layout.addWidget(self.note)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)
        self.form.message.connect(self.note.setText)
        self.form.reload()
        self.setMinimumWidth(460)

    def problems(self) -> List[str]:
        """Why OK cannot apply the draft: fields whose text is not taken, then the settings checks' problems."""
        from nnconsole.engine.check.validate import check_settings

        refused = self.form.refused()
        if refused:
            return refused
        view = dataclasses.replace(self.document.project, optimizer=self.draft.optimizer)
        found = []
        for problem in check_settings(view):
            if problem.path.startswith("optimizer."):
                label = self._label(problem.path)
                fix = f" ({problem.fix})" if problem.fix else ""
                found.append(f"{label}: {problem.message}{fix} [optimizers[{self.index}].{problem.path}]")
        return found

    def _label(self, dotted: str) -> str:
        for group in self.form.groups:
            if dotted in group.labels:
                return group.labels[dotted].text()
        return field_label(dotted)

    def accept(self) -> None:  # noqa: D401 - Qt override
        """Apply the draft as one undo step, or say why not and stay open."""
        problems = self.problems()
        if not problems:
            refused = self.apply(copy.deepcopy(self.draft.optimizer))
            problems = [refused] if refused else []
        if problems:
            self.error.setText("Not applied: " + "\n".join(problems))
            self.error.show()
            return
        super().accept()
