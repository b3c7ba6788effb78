"""Work around a PySide6 6.12.0 bug on Python 3.10/3.11 (no Qt import here).

PySide6 6.12.0's abi3 wheel returns the singletons ``None``, ``True`` and ``False`` without taking
a reference (correct only on Python 3.12+, where they are immortal): every void call such as
``label.setText(...)`` drops a reference to None and every ``signal.emit(...)`` one to True, and
the interpreter aborts ("Fatal Python error: none_dealloc: deallocating None", or
"munmap_chunk(): invalid pointer" when True is freed) after a few thousand calls. PySide6 6.11.3
does not have the bug; pinning ``PySide6-Essentials<6.12`` is the real fix. Until then we give
these singletons the same "never freed" reference count Python 3.12 gives them, which is
harmless because they are never freed anyway.
"""
from __future__ import annotations

import sys

_BALLAST = 1 << 40  # references added to each singleton; far more than any run drops
_SINGLETONS = (None, True, False, NotImplemented, Ellipsis)


def protect_none_refcount() -> bool:
    """Make None/True/False effectively immortal on CPython < 3.12; True when counts were raised."""
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    import ctypes

    raised = False
    for obj in _SINGLETONS:
        refcount = ctypes.c_ssize_t.from_address(id(obj))  # ob_refcnt is PyObject's first field
        if refcount.value < _BALLAST:
            refcount.value += _BALLAST
            raised = True
    return raised
