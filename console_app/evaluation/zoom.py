"""A larger view of a sample's image on demand: click a thumbnail in an evaluation or inference table.

The popup shows the image at up to 256 pixels (tiny images enlarged without smoothing, so an 8x8
digit shows its pixels), its path and size; it closes on a click anywhere else or on Escape.
"""
from __future__ import annotations

import html
import os
from typing import Optional

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from nnconsole.app.dataset.thumbnails import image_size, thumbnail
from nnconsole.app.widgets.rich_text import plain_tooltip

LARGE_SIZE = 256


class ImagePopup(QFrame):
    """A frameless popup holding one enlarged image and a caption."""

    def __init__(self, path: str, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent, Qt.Popup)
        self.setObjectName("image_popup")
        self.setFrameShape(QFrame.Box)
        self.path = path
        self.image = QLabel(self)
        self.image.setObjectName("image_popup_picture")
        self.image.setAlignment(Qt.AlignCenter)
        pixmap = thumbnail(path, LARGE_SIZE)
        original = image_size(path, LARGE_SIZE)  # read as the thumbnail was (the engine's image reader)
        size = "" if original is None else f" &mdash; {original[0]}x{original[1]} pixels"
        if pixmap.isNull():
            self.image.setText("cannot read this image")
        else:
            self.image.setPixmap(pixmap)
        self.caption = QLabel(f"<small>{html.escape(os.path.basename(path))}{size}</small>", self)
        self.caption.setToolTip(plain_tooltip(path))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.image)
        layout.addWidget(self.caption)


def show_large_image(path: str, parent: Optional[QWidget], at: QPoint) -> ImagePopup:
    """Open the popup for ``path`` with its top-left corner at the global point ``at``."""
    popup = ImagePopup(path, parent)
    popup.setAttribute(Qt.WA_DeleteOnClose)
    popup.adjustSize()
    popup.move(at)
    popup.show()
    return popup
