"""Undo commands for project settings (CONFIG tab fields, dataset paths): each only calls the document.

``SetSettingCommand`` sets one dotted settings path (``config.batch_size``) through
``ProjectDocument.set_setting``; consecutive edits of the same field merge into one undo step, so
typing ``0.001`` digit by digit undoes in one go. ``set_setting`` pushes one unless nothing changes.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, Optional

from PySide6.QtGui import QUndoCommand

from nnconsole.engine.project.schema import SETTINGS

MERGE_ID = 0x5E77  # QUndoCommand.id() of mergeable setting edits

# What the undo menu says for a field ("Undo Change Batch size"): the schema's label, as in the form.
FIELD_LABELS: Dict[str, str] = {setting.path: setting.label for setting in SETTINGS}


def field_label(dotted: str) -> str:
    """The undo label of a setting path (the path itself for one the schema does not name)."""
    return FIELD_LABELS.get(dotted, dotted)


class SetSettingCommand(QUndoCommand):
    """Set ``document``'s setting ``dotted`` to ``value``; undo restores the previous value."""

    def __init__(self, document: Any, dotted: str, value: Any, mergeable: bool = True,
                 merge_key: Optional[str] = None) -> None:
        super().__init__(f"Change {field_label(dotted)}")
        self.document = document
        self.dotted = dotted
        self.old = copy.deepcopy(document.get_setting(dotted))
        self.new = copy.deepcopy(value)
        self.mergeable = mergeable
        # Edits merge only with the same key: one solver parameter inside optimizer.solver_params, say.
        self.merge_key = merge_key or dotted

    def redo(self) -> None:
        self.document.set_setting(self.dotted, copy.deepcopy(self.new))

    def undo(self) -> None:
        self.document.set_setting(self.dotted, copy.deepcopy(self.old))

    def id(self) -> int:  # noqa: A003 - Qt's name
        return MERGE_ID if self.mergeable else -1

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 - Qt override
        if not isinstance(other, SetSettingCommand) or other.merge_key != self.merge_key or not other.mergeable:
            return False
        self.new = copy.deepcopy(other.new)
        if self.new == self.old:
            self.setObsolete(True)  # typed back to the original value: nothing to undo
        return True


def set_setting(document: Any, dotted: str, value: Any, mergeable: bool = True,
                merge_key: Optional[str] = None) -> bool:
    """Push a SetSettingCommand on the document's undo stack unless the value is unchanged."""
    if document.get_setting(dotted) == value:
        return False
    document.undo_stack.push(SetSettingCommand(document, dotted, value, mergeable, merge_key=merge_key))
    return True


def _split_dict_path(document: Any, dotted: str) -> tuple:
    """("optimizer.solver_params", "beta1") when ``dotted`` goes into a dict setting, else (dotted, None)."""
    target: Any = document.project
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if isinstance(target, dict):
            return ".".join(parts[:i]), ".".join(parts[i:])
        target = getattr(target, part)
    return dotted, None


def get_path(document: Any, dotted: str, default: Any = None) -> Any:
    """A setting by dotted path, also into dict settings (``optimizer.solver_params.beta1``)."""
    base, key = _split_dict_path(document, dotted)
    value = document.get_setting(base)
    return value.get(key, default) if key is not None else value


def set_path(document: Any, dotted: str, value: Any) -> bool:
    """Like ``set_setting``, also into dict settings: the dict is replaced by a copy with that key changed."""
    base, key = _split_dict_path(document, dotted)
    if key is None:
        return set_setting(document, dotted, value)
    current = dict(document.get_setting(base))
    if key in current and current[key] == value:
        return False
    current[key] = value
    return set_setting(document, base, current, merge_key=dotted)


def set_settings(document: Any, values: Dict[str, Any], text: str) -> bool:
    """Several settings as one undo step (a macro), e.g. a solver and its matching parameters."""
    changed = {k: v for k, v in values.items() if document.get_setting(k) != v}
    if not changed:
        return False
    stack = document.undo_stack
    stack.beginMacro(text)
    try:
        for dotted, value in changed.items():
            stack.push(SetSettingCommand(document, dotted, value, mergeable=False))
    finally:
        stack.endMacro()
    return True
