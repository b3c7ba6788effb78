"""The one place for theme colours: light or dark, taken from the application's palette.

Cells that mark something (the project's column of the N-worker plan, a matching dataset variable), the
error boxes, the plots and the EDIT canvas ask here for their colours instead of hard-coding light ones,
so a dark palette (the system's, or View > Theme > Dark) never shows light text on a light background.
Each marked background is the palette's base colour blended towards a hue, and its text is the palette's
text colour, so the contrast follows the palette (``contrast_ratio``: WCAG's ratio, >= 4.5 is readable).

``apply_theme`` switches the whole application (Light, Dark or System: the platform's own palette);
``notifier().changed`` tells plots and canvases that drew with the previous colours to draw again.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QPalette

THEMES = ("system", "light", "dark")
_OK, _BAD, _CURRENT, _ERROR = QColor("#2e7d32"), QColor("#c62828"), QColor("#1565c0"), QColor("#c62828")


def palette() -> QPalette:
    app = QGuiApplication.instance()
    return app.palette() if app is not None else QPalette()


def is_dark(pal: Optional[QPalette] = None) -> bool:
    """Whether the palette's windows are dark (light text on a dark background)."""
    pal = pal or palette()
    return pal.color(QPalette.Window).lightness() < 128


def _luminance(color: QColor) -> float:
    def channel(v: float) -> float:
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(color.redF()) + 0.7152 * channel(color.greenF()) + 0.0722 * channel(color.blueF())


def contrast_ratio(a: QColor, b: QColor) -> float:
    """WCAG 2 contrast ratio of two colours, 1 (same) to 21 (black on white); text needs 4.5."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def blend(base: QColor, hue: QColor, amount: float) -> QColor:
    """``base`` moved ``amount`` (0..1) of the way towards ``hue``."""
    mix = [b + (h - b) * amount for b, h in zip(base.getRgbF()[:3], hue.getRgbF()[:3])]
    return QColor.fromRgbF(*mix)


@dataclass(frozen=True)
class Colors:
    """Every themed colour of the app, for one palette."""

    dark: bool
    base: QColor  # table cells, plot and canvas background
    text: QColor
    muted: QColor  # secondary text, axis lines
    grid: QColor
    current: QColor  # a marked cell: the project's column of the plan
    ok: QColor  # a matching cell (DATASET's variables)
    bad: QColor  # a mismatching cell
    ok_text: QColor  # a success line's text
    error_text: QColor
    error_fill: QColor
    canvas: QColor
    canvas_dot: QColor
    edge: QColor


def colors(pal: Optional[QPalette] = None) -> Colors:
    """The themed colours of ``pal`` (the application's palette by default)."""
    pal = pal or palette()
    dark = is_dark(pal)
    base, text = pal.color(QPalette.Base), pal.color(QPalette.Text)
    tint = 0.28 if dark else 0.12
    return Colors(
        dark=dark, base=base, text=text, muted=blend(text, base, 0.4), grid=blend(base, text, 0.18),
        current=blend(base, _CURRENT, tint), ok=blend(base, _OK, tint), bad=blend(base, _BAD, tint),
        ok_text=QColor("#81c784") if dark else QColor("#1e6b1e"),
        error_text=QColor("#ff8a80") if dark else QColor("#a00000"), error_fill=blend(base, _ERROR, tint),
        canvas=blend(base, text, 0.04), canvas_dot=blend(base, text, 0.22),
        edge=QColor("#9aa6b4") if dark else QColor("#5f6b7a"))


def brush(color: QColor) -> QBrush:
    return QBrush(color)


def error_box_style() -> str:
    """The style sheet of an error box (a label) in the current palette."""
    c = colors()
    return (f"QLabel {{ color: {c.error_text.name()}; background: {c.error_fill.name()}; "
            f"border: 1px solid {blend(c.error_fill, c.error_text, 0.4).name()}; padding: 4px; }}")


def dark_palette() -> QPalette:
    """A dark palette for every widget (Fusion's roles, dark greys, light text, a blue highlight)."""
    pal = QPalette()
    window, base, text = QColor("#2b2d30"), QColor("#1f2124"), QColor("#e6e6e6")
    for role, color in ((QPalette.Window, window), (QPalette.WindowText, text), (QPalette.Base, base),
                        (QPalette.AlternateBase, QColor("#26282b")), (QPalette.ToolTipBase, QColor("#3a3d41")),
                        (QPalette.ToolTipText, text), (QPalette.Text, text), (QPalette.Button, QColor("#34373b")),
                        (QPalette.ButtonText, text), (QPalette.BrightText, QColor("#ff6e6e")),
                        (QPalette.Highlight, QColor("#3d7bd9")), (QPalette.HighlightedText, QColor("#ffffff")),
                        (QPalette.Link, QColor("#8ab4f8")), (QPalette.PlaceholderText, QColor("#9a9a9a"))):
        pal.setColor(role, color)
    for role in (QPalette.Text, QPalette.WindowText, QPalette.ButtonText):
        pal.setColor(QPalette.Disabled, role, QColor("#7a7a7a"))
    return pal


class _Notifier(QObject):
    changed = Signal()


_NOTIFIER: Optional[_Notifier] = None
_SYSTEM: Optional[QPalette] = None


def notifier() -> _Notifier:
    """The object whose ``changed`` signal says the theme changed (plots and canvases redraw)."""
    global _NOTIFIER
    if _NOTIFIER is None:
        _NOTIFIER = _Notifier()
    return _NOTIFIER


def apply_theme(name: str) -> None:
    """Switch the application to ``name`` ('light', 'dark' or 'system': the palette the app started with)."""
    global _SYSTEM
    app = QGuiApplication.instance()
    if app is None:
        return
    if _SYSTEM is None:
        _SYSTEM = QPalette(app.palette())
    if name == "dark":
        app.setPalette(dark_palette())
    elif name == "light":
        app.setPalette(QPalette(QColor("#efefef")) if is_dark(_SYSTEM) else _SYSTEM)
    else:
        app.setPalette(_SYSTEM)
    notifier().changed.emit()
