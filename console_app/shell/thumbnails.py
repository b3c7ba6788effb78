"""Network thumbnails for the start page's gallery: a project's Main network drawn small, offscreen, and kept
in the app's cache folder (never in a project folder), keyed by the file's path, size and modification time.

Each layer is a box in its palette group's colour at its canvas position (a network without positions is
stacked top to bottom, as the canvas would place it), each connection a line; so a CNN, a ResNet's skips
or a GAN's two networks are told apart at a glance. Drawing reads the project file only.
"""
from __future__ import annotations

import hashlib
import os
from typing import Dict, Optional, Tuple

from PySide6.QtCore import QPointF, QRectF, QSize, QStandardPaths, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPen

from nnconsole.app.edit import style
from nnconsole.app.widgets import theme
from nnconsole.engine.layers import find_spec
from nnconsole.engine.project.errors import ProjectError
from nnconsole.engine.project.io import load_project
from nnconsole.engine.project.model import Network

SIZE = QSize(136, 96)
NODE = (120.0, 44.0)  # a layer box in canvas units (the canvas's node is about 240x52)


def _positions(network: Network) -> Dict[str, Tuple[float, float]]:
    placed = {layer.name: tuple(layer.position) for layer in network.layers if layer.position is not None}
    if len(placed) == len(network.layers):
        return placed
    return {layer.name: (0.0, 80.0 * i) for i, layer in enumerate(network.layers)}


def render_network(network: Network, size: QSize = SIZE) -> QImage:
    """``network`` drawn into an image of ``size`` on the theme's base colour."""
    image = QImage(size, QImage.Format_ARGB32_Premultiplied)
    colors = theme.colors()
    image.fill(colors.canvas)
    where = _positions(network)
    if not where:
        return image
    xs = [p[0] for p in where.values()]
    ys = [p[1] for p in where.values()]
    left, top = min(xs), min(ys)
    width, height = max(xs) - left + NODE[0], max(ys) - top + NODE[1]
    margin = 6.0
    scale = min((size.width() - 2 * margin) / width, (size.height() - 2 * margin) / height)
    dx = (size.width() - width * scale) / 2 - left * scale
    dy = (size.height() - height * scale) / 2 - top * scale

    def box(name: str) -> QRectF:
        x, y = where[name]
        return QRectF(x * scale + dx, y * scale + dy, max(2.0, NODE[0] * scale), max(2.0, NODE[1] * scale))

    painter = QPainter(image)
    painter.setRenderHint(QPainter.Antialiasing)
    painter.setPen(QPen(colors.edge, 1.0))
    for layer in network.layers:
        for source in layer.inputs:
            if source in where:
                a, b = box(source), box(layer.name)
                painter.drawLine(QPointF(a.center().x(), a.bottom()), QPointF(b.center().x(), b.top()))
    for layer in network.layers:
        spec = find_spec(layer.type)
        fill, accent = style.group_colors(spec.group if spec else None)
        painter.setPen(QPen(accent, 1.0))
        painter.setBrush(fill)
        painter.drawRoundedRect(box(layer.name), 2, 2)
    painter.end()
    return image


def cache_folder() -> str:
    """Where thumbnails are kept: the app's cache folder (``~/.cache/nnconsole/thumbnails``)."""
    return os.path.join(QStandardPaths.writableLocation(QStandardPaths.CacheLocation), "thumbnails")


def cache_file(project_path: str) -> Optional[str]:
    """The thumbnail file of a project file as it is now (None when the file cannot be read)."""
    try:
        st = os.stat(project_path)
    except OSError:
        return None
    key = f"{os.path.abspath(project_path)}|{st.st_size}|{st.st_mtime_ns}|{int(theme.is_dark())}"
    return os.path.join(cache_folder(), hashlib.sha1(key.encode("utf-8")).hexdigest() + ".png")


def thumbnail(project_path: str) -> Optional[QImage]:
    """The project's network thumbnail, from the cache or drawn (and cached); None for an unreadable file."""
    target = cache_file(project_path)
    if target is None:
        return None
    if os.path.isfile(target):
        image = QImage(target)
        if not image.isNull():
            return image
    try:
        project = load_project(project_path)
    except (ProjectError, OSError):
        return None
    image = render_network(project.network)
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        partial = f"{target}.{os.getpid()}.tmp.png"
        if image.save(partial, "PNG"):
            os.replace(partial, target)
    except OSError:
        pass  # a thumbnail that cannot be cached is drawn again next time
    return image


def placeholder(size: QSize = SIZE) -> QImage:
    """What a project that cannot be read shows instead of its network."""
    image = QImage(size, QImage.Format_ARGB32_Premultiplied)
    image.fill(QColor(theme.colors().canvas))
    painter = QPainter(image)
    painter.setPen(theme.colors().muted)
    painter.drawText(image.rect(), Qt.AlignCenter, "?")
    painter.end()
    return image
