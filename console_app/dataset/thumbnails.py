"""Small image thumbnails for dataset and evaluation tables, decoded once and cached.

Images are read by the engine's one image reader (``nnconsole.engine.data.image_file``), as training reads
them: only the supported formats (a file named .png holding PostScript is never handed to another decoder),
regular files only (a FIFO never blocks the GUI), 16-bit grey scaled to 8 bits as training sees it. Tiny
images (8x8 digits) are enlarged without smoothing so pixels stay crisp; large ones are scaled down
smoothly. A missing or unreadable file gives a null pixmap, never an exception.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Optional, Tuple

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPixmap

from nnconsole.engine.data.image_file import read_pixels

THUMBNAIL_SIZE = 32
MAX_PIXELS = 64_000_000  # a larger image is not decoded for a thumbnail (as infer refuses it)
_CACHE_LIMIT = 4096
_cache: "OrderedDict[Tuple[str, int], Tuple[QPixmap, Optional[Tuple[int, int]]]]" = OrderedDict()


def image_of(path: str) -> QImage:
    """The image at ``path`` as a QImage (grey or RGB, 8 bits), or a null QImage when it cannot be read."""
    try:
        pixels = np.ascontiguousarray(read_pixels(path, max_pixels=MAX_PIXELS))
    except Exception:  # noqa: BLE001 - any unreadable file is shown as no thumbnail
        return QImage()
    height, width = pixels.shape[:2]
    fmt = QImage.Format_RGB888 if pixels.ndim == 3 else QImage.Format_Grayscale8
    return QImage(pixels.data, width, height, pixels.strides[0], fmt).copy()  # copy: owns its pixels


def _load(path: str, size: int) -> Tuple[QPixmap, Optional[Tuple[int, int]]]:
    key = (path, size)
    cached = _cache.get(key)
    if cached is not None:
        _cache.move_to_end(key)
        return cached
    image = image_of(path)
    if image.isNull():
        made: Tuple[QPixmap, Optional[Tuple[int, int]]] = (QPixmap(), None)
    else:
        small = image.width() <= size and image.height() <= size
        mode = Qt.FastTransformation if small else Qt.SmoothTransformation
        made = (QPixmap.fromImage(image.scaled(size, size, Qt.KeepAspectRatio, mode)),
                (image.width(), image.height()))
    _cache[key] = made
    if len(_cache) > _CACHE_LIMIT:
        _cache.popitem(last=False)
    return made


def thumbnail(path: str, size: int = THUMBNAIL_SIZE) -> QPixmap:
    """A pixmap of at most ``size`` x ``size`` pixels for the image at ``path`` (null if unreadable)."""
    return _load(path, size)[0]


def image_size(path: str, size: int = THUMBNAIL_SIZE) -> Optional[Tuple[int, int]]:
    """(width, height) of the image ``thumbnail(path, size)`` shows, or None when it cannot be read."""
    return _load(path, size)[1]
