"""Palette groups: the order the EDIT tab lists layer types in and each group's node colours.

A layer type's registration names its group; the palette, the canvas and the statistics view colour
it from here (light fills so black text stays readable, stronger accents for borders). The first
eight are nnconsole's groups since its first release; the rest follow NNC's palette categories
(layer_component.txt) for the types issue 16 adds. Adding a group is one line here.
"""
from __future__ import annotations

from typing import Dict, NamedTuple, Tuple


class Group(NamedTuple):
    name: str
    fill: str
    accent: str


PALETTE_GROUPS: Tuple[Group, ...] = (
    Group("IO", "#e6edf5", "#6b7f99"),
    Group("Basic", "#d9eafb", "#2f74c0"),
    Group("Pooling", "#daf1e1", "#2f8f4e"),
    Group("Activation", "#fdefd2", "#d08b12"),
    Group("Normalization", "#eae1f7", "#7b55b5"),
    Group("Arithmetic", "#d7f0ee", "#23918a"),
    Group("Loss", "#fbdede", "#c44545"),
    Group("Other", "#ebebeb", "#7a7a7a"),
    Group("Parameter", "#e3ecd9", "#5b7f2f"),
    Group("Quantize", "#f3e4d7", "#9a5b2a"),
    Group("Spectral", "#e0e4f7", "#4a57a8"),
    Group("Math", "#dff0f5", "#2a7f99"),
    Group("Trigonometric", "#e8f3dc", "#5a8f2a"),
    Group("Logical", "#f5e0ec", "#a33a78"),
    Group("Validation", "#f7e6d9", "#b0622b"),
    Group("Pre Process", "#f0ead8", "#8a7433"),
    Group("LoopControl", "#ece8f2", "#a18fb2"),  # NNC's loop-control colour (0xa18fb2)
    Group("Unit", "#dcebf2", "#6aa1bd"),  # NNC's unit colour (0x6aa1bd)
)

GROUPS: Tuple[str, ...] = tuple(g.name for g in PALETTE_GROUPS)
GROUP_COLORS: Dict[str, Tuple[str, str]] = {g.name: (g.fill, g.accent) for g in PALETTE_GROUPS}
