"""Issue 25, items 1 and 6 in the GUI: thumbnails (dataset preview, evaluation, inference) read images with the
engine's one reader: a PostScript file named .png never reaches a decoder, a FIFO never blocks the GUI, and a
16-bit grey PNG shows the scaled pixels training sees (Qt's own reader had its own formats and conversions)."""
from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import EpsImagePlugin, Image

from nnconsole.app.dataset import thumbnails

POSTSCRIPT = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 8 8\n%%EndComments\nshowpage\n%%EOF\n"

pytestmark = pytest.mark.gui


def test_a_postscript_or_fifo_named_png_gives_no_thumbnail_and_reaches_no_decoder(qtbot, tmp_path, monkeypatch):
    parsed = []
    real = EpsImagePlugin.EpsImageFile._open
    monkeypatch.setattr(EpsImagePlugin.EpsImageFile, "_open", lambda self: parsed.append(1) or real(self))
    (tmp_path / "ps.png").write_bytes(POSTSCRIPT)
    os.mkfifo(tmp_path / "fifo.png")
    assert thumbnails.thumbnail(str(tmp_path / "ps.png")).isNull()
    assert thumbnails.thumbnail(str(tmp_path / "fifo.png")).isNull()  # returns at once: never opened for reading
    assert parsed == []


def test_a_16_bit_thumbnail_shows_the_pixels_training_sees(qtbot, tmp_path):
    wide = np.full((8, 8), 32896, np.uint16)  # 32896 / 257 = 128: mid grey, not white as clipping gives
    Image.fromarray(wide).save(tmp_path / "x.png")
    image = thumbnails.image_of(str(tmp_path / "x.png"))
    assert not image.isNull() and (image.width(), image.height()) == (8, 8)
    assert image.pixelColor(3, 3).red() == 128
    assert thumbnails.image_size(str(tmp_path / "x.png"), 64) == (8, 8)
