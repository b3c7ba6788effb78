"""The files nnconsole imports, by extension: constants only, importing nothing.

The GUI offers and recognises these files (File > Open) but never imports them itself: the importers
reach nnabla, so the GUI runs ``nnconsole import`` in a subprocess. This module is what it may import.
"""
from __future__ import annotations

NNTXT_EXTENSIONS = (".nntxt", ".prototxt", ".protobuf", ".pb", ".nnp")
SDCPROJ_EXTENSIONS = (".sdcproj",)
IMPORT_EXTENSIONS = NNTXT_EXTENSIONS + SDCPROJ_EXTENSIONS
# For the GUI's open dialog.
IMPORT_FILTER = "NNC / nnabla files (*.sdcproj *.nntxt *.nnp *.prototxt *.protobuf)"
