"""Editing the canvas notes (NNC's Comment): add, move, rewrite and delete, each one undo step.

The project document stays the single source of truth: every edit is a ``SetCommentsCommand`` on the
document's undo stack whose redo/undo replace the shown network's ``comments`` and announce the change;
the canvas then redraws the notes from the model (``NetworkScene.sync``). ``CommentDialog`` edits a
note's text (Enter keeps it, Shift+Enter starts a new line, Escape cancels).
"""
from __future__ import annotations

import copy
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QUndoCommand
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from nnconsole.app.edit import layout
from nnconsole.engine.project.model import Comment

Position = Tuple[float, float]


def _plain(text: str) -> str:
    """One line-break convention (NNC's files and ours write ``\\n``)."""
    return str(text).replace("\r\n", "\n").replace("\r", "\n")


class SetCommentsCommand(QUndoCommand):
    """Replace the comments of the network shown when it was made; undo puts the old list back."""

    def __init__(self, document: Any, comments: Sequence[Comment], text: str) -> None:
        super().__init__(text)
        self._doc = document
        self._net = document.active_network
        self._old = copy.deepcopy(list(document.network.comments))
        self._new = copy.deepcopy(list(comments))

    def _apply(self, comments: List[Comment]) -> None:
        self._doc.show_network(self._net)
        self._doc.network.comments = copy.deepcopy(comments)
        self._doc.network_changed.emit()  # the canvas redraws the notes from the model

    def redo(self) -> None:
        self._apply(self._new)

    def undo(self) -> None:
        self._apply(self._old)


class CommentEditor:
    """Checked note edits on a ProjectDocument's shown network, each pushed as one undo command."""

    def __init__(self, document: Any) -> None:
        self.document = document

    @property
    def comments(self) -> List[Comment]:
        return self.document.network.comments

    def _push(self, comments: List[Comment], text: str) -> None:
        self.document.undo_stack.push(SetCommentsCommand(self.document, comments, text))

    @contextmanager
    def together(self, text: str, needed: bool) -> Iterator[None]:
        """One undo step for the edits inside (a macro) when ``needed``, e.g. layers and notes deleted at once."""
        stack = self.document.undo_stack
        if needed:
            stack.beginMacro(text)
        try:
            yield
        finally:
            if needed:
                stack.endMacro()

    def add(self, text: str, position: Position) -> int:
        """Add a note at ``position`` (snapped to the grid); return its index."""
        comments = copy.deepcopy(self.comments)
        comments.append(Comment(_plain(text), (layout.snap(position[0]), layout.snap(position[1]))))
        self._push(comments, "Add comment")
        return len(comments) - 1

    def set_text(self, index: int, text: str) -> bool:
        """Rewrite note ``index``; False (and no undo step) when the text is unchanged or the note is gone."""
        if not 0 <= index < len(self.comments) or self.comments[index].text == _plain(text):
            return False
        comments = copy.deepcopy(self.comments)
        comments[index].text = _plain(text)
        self._push(comments, "Edit comment")
        return True

    def move(self, positions: Dict[int, Position]) -> None:
        """Store the notes' new positions (one undo step)."""
        comments = copy.deepcopy(self.comments)
        changed = False
        for index, (x, y) in positions.items():
            if 0 <= index < len(comments) and tuple(comments[index].position or ()) != (float(x), float(y)):
                comments[index].position = (float(x), float(y))
                changed = True
        if changed:
            self._push(comments, "Move comment" if len(positions) == 1 else f"Move {len(positions)} comments")

    def remove(self, indices: Sequence[int]) -> None:
        """Delete the notes at ``indices`` (one undo step)."""
        doomed = {i for i in indices if 0 <= i < len(self.comments)}
        if doomed:
            kept = [c for i, c in enumerate(copy.deepcopy(self.comments)) if i not in doomed]
            self._push(kept, "Delete comment" if len(doomed) == 1 else f"Delete {len(doomed)} comments")


class _EnterCommits(QObject):
    """Enter (without Shift) accepts the dialog; Shift+Enter is a line break in the note."""

    def __init__(self, dialog: QDialog) -> None:
        super().__init__(dialog)
        self._dialog = dialog

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.KeyPress and event.key() in (Qt.Key_Return, Qt.Key_Enter) \
                and not event.modifiers() & Qt.ShiftModifier:
            self._dialog.accept()
            return True
        return False


class CommentDialog(QDialog):
    """A small editor for one note's text (plain text; it never renders markup)."""

    def __init__(self, text: str, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("comment_dialog")
        self.setWindowTitle("Comment")
        self.edit = QPlainTextEdit()
        self.edit.setObjectName("comment_text")
        self.edit.setPlainText(text)
        self.edit.selectAll()
        self.edit.installEventFilter(_EnterCommits(self))
        hint = QLabel("Enter keeps the text · Shift+Enter starts a new line · Esc cancels")
        hint.setStyleSheet("color: #56606b;")
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        box = QVBoxLayout(self)
        box.addWidget(self.edit)
        box.addWidget(hint)
        box.addWidget(buttons)
        self.resize(380, 220)

    def text(self) -> str:
        return self.edit.toPlainText()


class CanvasComments:
    """The EDIT page's note gestures: add at the context-menu point, edit on double-click, delete and move
    together with the selected layers (one undo step each)."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.editor = CommentEditor(page.document)
        self.dialog: Optional[CommentDialog] = None  # the open editor, if any
        page.scene.comment_activated.connect(self.ask_text)

    def add_at(self, position: Position) -> int:
        """A new empty note at ``position``, opened for writing."""
        index = self.editor.add("", position)
        self.page.flush()
        self.ask_text(index)
        return index

    def ask_text(self, index: int) -> Optional[CommentDialog]:
        """Open the text editor for note ``index`` (window-modal, not blocking: OK/Enter keeps the text)."""
        if not 0 <= index < len(self.editor.comments):
            return None
        if self.dialog is not None:
            self.dialog.reject()
        before = copy.deepcopy(self.editor.comments[index])
        dialog = CommentDialog(before.text, self.page)
        net = self.page.document.active_network

        def finished(result: int) -> None:
            comments = self.editor.comments
            same = self.page.document.active_network == net and index < len(comments) and comments[index] == before
            if result == QDialog.Accepted and same:  # the note is still the one opened
                self.editor.set_text(index, dialog.text())
                self.page.flush()
            if self.dialog is dialog:
                self.dialog = None
            dialog.deleteLater()

        dialog.finished.connect(finished)
        self.dialog = dialog
        dialog.open()
        return dialog

    def keep_on_cut(self) -> None:
        """Deselect the notes (the clipboard holds layers only, so a cut leaves the notes where they are)."""
        for item in self.page.scene.comment_items():
            item.setSelected(False)

    def delete_with(self, remove_layers: Callable[[], None]) -> None:
        """Delete the selected notes with what ``remove_layers`` deletes, as one undo step."""
        scene = self.page.scene
        notes = scene.selected_comments()
        with self.editor.together("Delete", bool(notes) and bool(scene.selected_names() or scene.selected_edges())):
            remove_layers()
            self.editor.remove(notes)

    def moved(self, layers: Dict[str, Position], notes: Dict[int, Position],
              move_layers: Callable[[Dict[str, Position]], None]) -> None:
        """A finished drag: the layers' and the notes' new positions as one undo step."""
        with self.editor.together("Move", bool(layers) and bool(notes)):
            if layers:
                move_layers(layers)
            self.editor.move(notes)
