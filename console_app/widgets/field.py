"""A text field that checks what was typed: the value is handed to a callback when editing
finishes, and a refusal is explained right under the field while the old value comes back.
"""
from __future__ import annotations

from typing import Callable, Optional

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QLabel, QLineEdit, QVBoxLayout, QWidget

ERROR_STYLE = "color: #c62828;"
INVALID_EDIT_STYLE = "QLineEdit { border: 1px solid #c62828; border-radius: 3px; padding: 1px 3px; }"


class CheckedField(QWidget):
    """A QLineEdit plus an error label. ``apply(text)`` returns None when accepted, else a message.

    Escape puts back the value shown before the edit. The line edit keeps no undo history of its
    own: Ctrl+Z / Ctrl+Shift+Z go to the document's undo stack (the window's Undo / Redo), so the
    field always shows the model; during an uncommitted edit Ctrl+Z reverts the edit, as Escape.
    """

    value_refused = Signal(str)  # the message shown

    def __init__(self, name: str, apply: Callable[[str], Optional[str]], parent: Optional[QWidget] = None,
                 show_error: bool = True) -> None:
        super().__init__(parent)
        self._apply = apply
        self._show_error = show_error
        self._shown = ""
        self._error = ""
        self.edit = QLineEdit(self)
        self.edit.setObjectName(name)
        self.error = QLabel(self)
        self.error.setObjectName(name.replace("param_", "param_error_", 1) if name.startswith("param_")
                                 else name + "_error")
        self.error.setWordWrap(True)
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.hide()
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        box.addWidget(self.edit)
        box.addWidget(self.error)
        self.edit.editingFinished.connect(self._finished)
        self.edit.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched is not self.edit or event.type() not in (QEvent.ShortcutOverride, QEvent.KeyPress):
            return False
        undo, redo = event.matches(QKeySequence.Undo), event.matches(QKeySequence.Redo)
        if event.key() == Qt.Key_Escape or ((undo or redo) and self.edit.text() != self._shown):
            if event.type() == QEvent.KeyPress:
                self.revert()
            event.accept()  # the field takes the key (a ShortcutOverride accepted reaches keyPress)
            return event.type() == QEvent.KeyPress
        if undo or redo:  # not the line edit's own history: the window's Undo / Redo shortcut acts
            event.ignore()
            return True
        return False

    def revert(self) -> None:
        """Show the value the field had before the edit (nothing is applied)."""
        self.edit.setText(self._shown)
        self.edit.setCursorPosition(0)
        self.clear_error()

    def set_text(self, text: str) -> None:
        """Show the model's value (does not apply it)."""
        self._shown = text
        if self.edit.text() != text:
            self.edit.setText(text)
            self.edit.setCursorPosition(0)

    def clear_error(self) -> None:
        self.error.hide()
        self.error.setText("")
        self._error = ""
        self.edit.setStyleSheet("")

    def error_text(self) -> str:
        """The message of the last refused value ('' once a value was accepted)."""
        return self._error

    def _finished(self) -> None:
        text = self.edit.text()
        if text == self._shown:
            return
        message = self._apply(text)
        if message:
            self.edit.setText(self._shown)  # keep the old value
            self._error = message
            self.error.setText(f"{message} — kept {self._shown or 'the old value'}")
            self.error.setVisible(self._show_error)
            self.edit.setStyleSheet(INVALID_EDIT_STYLE)
            self.value_refused.emit(message)
        else:
            self.clear_error()
            self._shown = text
