"""Small image thumbnails for dataset and evaluation tables, decoded once and cached.

Tiny images (8x8 digits) are enlarged without smoothing so pixels stay crisp; large ones are scaled
down smoothly. A missing or unreadable file gives a null pixmap, never an exception.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Tuple

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPixmap

THUMBNAIL_SIZE = 32
_CACHE_LIMIT = 4096
_cache: "OrderedDict[Tuple[str, int], QPixmap]" = OrderedDict()


def thumbnail(path: str, size: int = THUMBNAIL_SIZE) -> QPixmap:
    """A pixmap of at most ``size`` x ``size`` pixels for the image at ``path`` (null if unreadable)."""
    key = (path, size)
    cached = _cache.get(key)
    if cached is not None:
        _cache.move_to_end(key)
        return cached
    image = QImage(path)
    if image.isNull():
        pixmap = QPixmap()
    else:
        small = image.width() <= size and image.height() <= size
        mode = Qt.FastTransformation if small else Qt.SmoothTransformation
        pixmap = QPixmap.fromImage(image.scaled(size, size, Qt.KeepAspectRatio, mode))
    _cache[key] = pixmap
    if len(_cache) > _CACHE_LIMIT:
        _cache.popitem(last=False)
    return pixmap
