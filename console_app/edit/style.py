"""Colours and fonts of the EDIT canvas, and the short texts shown on nodes (NNC look).

Kept apart from the items so the palette, statistics view and canvas use the same colours.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from PySide6.QtGui import QColor, QFont

# group -> (fill, accent): light fills so black text stays readable, stronger accents for borders.
GROUP_COLORS = {
    "IO": ("#e6edf5", "#6b7f99"),
    "Basic": ("#d9eafb", "#2f74c0"),
    "Pooling": ("#daf1e1", "#2f8f4e"),
    "Activation": ("#fdefd2", "#d08b12"),
    "Normalization": ("#eae1f7", "#7b55b5"),
    "Arithmetic": ("#d7f0ee", "#23918a"),
    "Loss": ("#fbdede", "#c44545"),
    "Other": ("#ebebeb", "#7a7a7a"),
}
UNKNOWN_COLORS = ("#f3f3f3", "#999999")
ERROR_COLOR = QColor("#d32f2f")
ERROR_FILL = QColor("#fdecec")
SELECTED_COLOR = QColor("#1565c0")
EDGE_COLOR = QColor("#5f6b7a")
CANVAS_BACKGROUND = QColor("#f7f8fa")
GRID_DOT = QColor("#d5d9e0")
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


def fmt_dims(values: Any) -> str:
    """[16, 8, 8] -> '16×8×8'; 10 -> '10'."""
    if isinstance(values, (list, tuple)):
        return "×".join(str(v) for v in values) if values else "()"
    return str(values)


def fmt_count(n: int) -> str:
    """1234567 -> '1.23M', 13706 -> '13.7k', 650 -> '650'."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= limit:
            return f"{n / limit:.3g}{suffix}"
    return str(int(n))


def _nonzero(values: Sequence[int]) -> bool:
    return any(v != 0 for v in values)


def _same(values: Any) -> str:
    """[1, 1] -> '1' (all equal), [1, 2] -> '1×2': short forms for strides and pads."""
    if isinstance(values, (list, tuple)) and values and all(v == values[0] for v in values):
        return str(values[0])
    return fmt_dims(values)


def summarize_params(type_name: str, params: Mapping[str, Any], defaults: Mapping[str, Any]) -> str:
    """The few parameter values a node shows under its name, e.g. '16 maps · 3×3 · pad 1×1'."""
    p = params
    parts = []
    if type_name in ("Convolution", "Deconvolution"):
        parts = [f"{p.get('outmaps')} maps", fmt_dims(p.get("kernel", ()))]
        if any(s != 1 for s in p.get("stride", ())):
            parts.append(f"stride {_same(p['stride'])}")
        if _nonzero(p.get("pad", ())):
            parts.append(f"pad {_same(p['pad'])}")
    elif type_name == "Affine":
        parts = [f"{fmt_dims(p.get('out_shape'))} units"]
    elif type_name in ("MaxPooling", "AveragePooling"):
        parts = [fmt_dims(p.get("kernel", ()))]
        if p.get("stride") and list(p["stride"]) != list(p.get("kernel", ())):
            parts.append(f"stride {_same(p['stride'])}")
        if _nonzero(p.get("pad", ())):
            parts.append(f"pad {_same(p['pad'])}")
    elif type_name == "Input":
        parts = [f"variable {p.get('variable')}"] if p.get("variable") else []
    elif type_name == "Embed":
        parts = [f"{p.get('n_inputs')} → {p.get('n_features')}"]
    elif type_name == "Reshape":
        parts = [f"to {fmt_dims(p.get('shape', ()))}"]
    else:
        for key, value in p.items():
            default = defaults.get(key)
            if isinstance(default, tuple):
                default = list(default)
            shown = list(value) if isinstance(value, tuple) else value
            if shown != default or type_name in ("Dropout", "LeakyReLU", "ELU", "Concatenate"):
                parts.append(f"{key} {fmt_dims(shown) if isinstance(shown, list) else _fmt_value(shown)}")
            if len(parts) == 3:
                break
    return " · ".join(parts)


def _fmt_value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
