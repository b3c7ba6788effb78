"""A label that shows an error or a message from the engine exactly as written.

Qt guesses whether a label's text is HTML (``Qt.AutoText``): an engine message escaped for HTML but
guessed to be plain shows ``network&#x27;s input &#x27;x&#x27;``, and one guessed to be HTML loses its
``<`` and line breaks. A message label is plain text, always: its text is set as is, line breaks kept,
selectable so it can be copied into a bug report.
"""
from __future__ import annotations

from typing import Iterable, Optional

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

from nnconsole.app.widgets import theme

ENGINE_NOISE = ("[nnabla][INFO]",)  # lines of a command's output that are never the message


def message_label(name: str, error: bool = True, parent: Optional[QWidget] = None) -> QLabel:
    """A hidden, word-wrapped, selectable plain-text label (styled as an error when ``error``)."""
    label = QLabel(parent)
    label.setObjectName(name)
    label.setTextFormat(Qt.PlainText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextSelectableByMouse)
    if error:
        label.setStyleSheet(theme.error_box_style())
    label.hide()
    return label


def command_message(stdout: str, stderr: str, fallback: str, noise: Iterable[str] = ENGINE_NOISE) -> str:
    """What a failed command said: its stderr (else stdout) without log noise, or ``fallback``."""
    message = stderr.strip() or stdout.strip()
    lines = [line for line in message.splitlines() if not any(n in line for n in noise)]
    return "\n".join(lines).strip() or message or fallback
