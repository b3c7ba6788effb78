"""Colours and fonts of the EDIT canvas, and the short texts shown on nodes (NNC look).

Each palette group's colours are defined with the groups (nnconsole.engine.layers.groups) and each
node's caption by its layer type's registration; this module turns them into Qt colours and fonts.

Kept apart from the items so the palette, statistics view and canvas use the same colours.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from PySide6.QtGui import QColor, QFont

from nnconsole.engine.layers.captions import fmt_dims  # noqa: F401  (the canvas modules format through style)
from nnconsole.engine.layers.registry import caption
from nnconsole.engine.layers.captions import generic as generic_caption
from nnconsole.engine.layers.groups import GROUP_COLORS

UNKNOWN_COLORS = ("#f3f3f3", "#999999")
ERROR_COLOR = QColor("#d32f2f")
ERROR_FILL = QColor("#fdecec")
SELECTED_COLOR = QColor("#1565c0")
SEARCH_COLOR = QColor("#ef8f00")  # a property marked searched (NNC's Search flag): amber tag and outline
EDGE_COLOR = QColor("#5f6b7a")
TEXT = QColor("#1d2630")
TEXT_MUTED = QColor("#56606b")


def group_colors(group: Optional[str]) -> tuple:
    fill, accent = GROUP_COLORS.get(group or "", UNKNOWN_COLORS)
    return QColor(fill), QColor(accent)


def font(point_size: float = 9.0, bold: bool = False) -> QFont:
    f = QFont()
    f.setPointSizeF(point_size)
    f.setBold(bold)
    return f


def fmt_count(n: int) -> str:
    """1234567 -> '1.23M', 13706 -> '13.7k', 650 -> '650'."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= limit:
            return f"{n / limit:.3g}{suffix}"
    return str(int(n))


def summarize_params(type_name: str, params: Mapping[str, Any], defaults: Mapping[str, Any]) -> str:
    """The few parameter values a node shows under its name, e.g. '16 maps · 3×3 · pad 1×1'.

    The layer type's registration decides (its ``caption`` hook); unknown types show the
    parameters that differ from ``defaults``."""
    from nnconsole.engine.layers import UnknownLayerType, get_spec

    try:
        get_spec(type_name)
    except UnknownLayerType:
        return generic_caption(params, defaults)
    return caption(type_name, params)
