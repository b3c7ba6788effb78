"""Issue 25, items 1 and 6: images are read by one reader, in the supported formats only, with bit depth handled.

Item 1: a file named ``x.png`` holding PostScript is handed by an unrestricted ``Image.open`` to Pillow's EPS
plugin, which runs Ghostscript on it. Every reader (training's decode with and without the cache, ``infer``,
``dataset create``) must refuse it, and a file of any other Pillow format, before a plugin parses it.

Item 6: a 16-bit grey PNG was clipped at 255 by ``convert("L")`` (binarised) in training while ``dataset
create`` scaled it; training, the cache, infer and create must now give the same scaled pixels.
"""
from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import EpsImagePlugin, Image

from nnconsole.engine.data.create.shaping import ImageShapeError, read_image
from nnconsole.engine.data.image_file import DATASET_FORMATS, SOURCE_FORMATS, decode_image, read_pixels
from nnconsole.engine.data.loading import DatasetError, load_dataset
from nnconsole.engine.evaluate.inference import InferenceError, load_image

POSTSCRIPT = (b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 8 8\n%%EndComments\n"
              b"(/tmp/nnconsole-was-here) (w) file closefile\nshowpage\n%%EOF\n")


@pytest.fixture
def eps_plugin_calls(monkeypatch):
    """Every time Pillow's EPS plugin parses a file or calls Ghostscript, recorded (and Ghostscript never run)."""
    calls = []
    real_open = EpsImagePlugin.EpsImageFile._open

    def spy_open(self):
        calls.append("parse")
        return real_open(self)

    monkeypatch.setattr(EpsImagePlugin.EpsImageFile, "_open", spy_open)
    monkeypatch.setattr(EpsImagePlugin, "Ghostscript", lambda *a, **k: calls.append("ghostscript") or (_ for _ in ()
                                                                                                       ).throw(OSError))
    return calls


def dataset_of(folder: Path, names) -> Path:
    (folder / "train.csv").write_text("x:image,y:label\n" + "".join(f"{n},0\n" for n in names))
    return folder / "train.csv"


@pytest.mark.parametrize("cache", [True, False])
def test_postscript_named_png_is_refused_by_training_before_the_eps_plugin_sees_it(tmp_path, eps_plugin_calls,
                                                                                    cache):
    (tmp_path / "x.png").write_bytes(POSTSCRIPT)
    csv_path = dataset_of(tmp_path, ["x.png"])
    with pytest.raises(DatasetError, match=r"line 2, column x: cannot decode image file 'x.png' \(not a PNG, JPEG "
                                           r"or BMP image"):
        load_dataset(csv_path, cache=cache, cache_dir=tmp_path / "cache")
    with pytest.raises(DatasetError, match="not a PNG, JPEG or BMP image"):  # the network names the shape
        load_dataset(csv_path, {"x": (1, 8, 8)}, cache=cache, cache_dir=tmp_path / "cache")
    assert eps_plugin_calls == []


def test_postscript_named_png_is_refused_by_infer_and_dataset_create(tmp_path, eps_plugin_calls):
    path = tmp_path / "x.png"
    path.write_bytes(POSTSCRIPT)
    with pytest.raises(InferenceError, match="x.png: cannot decode the image"):
        load_image(str(path), (1, 8, 8), "x", True, None)
    with pytest.raises(ImageShapeError, match="not a PNG, JPEG, BMP, GIF or TIFF image"):
        read_image(str(path))
    assert eps_plugin_calls == []


def _pillow_writable_formats():
    Image.init()
    return sorted(set(Image.SAVE) & set(Image.OPEN))


def _encoded(fmt: str):
    """An 8x8 image in ``fmt`` as Pillow writes it (the first mode it accepts), or None when it cannot."""
    for mode in ("L", "RGB", "RGBA", "1", "P", "I", "F"):
        buffer = io.BytesIO()
        try:
            Image.new(mode, (8, 8), 0).save(buffer, format=fmt)
        except Exception:  # noqa: BLE001 - a format that needs another mode, size or library
            continue
        return buffer.getvalue()
    return None


@pytest.mark.parametrize("fmt", _pillow_writable_formats())
def test_a_file_of_any_pillow_format_named_png_is_read_only_when_its_format_is_supported(tmp_path, fmt):
    """The generator: every format Pillow can write, under a .png name, through every reader."""
    data = _encoded(fmt)
    if data is None:
        pytest.skip(f"Pillow cannot write {fmt} here")
    path = tmp_path / "x.png"
    path.write_bytes(data)
    try:
        detected = Image.open(io.BytesIO(data)).format  # what an unrestricted open would dispatch to
    except Exception:  # noqa: BLE001 - Pillow cannot read back what it wrote (ICO of 8x8 here)
        pytest.skip(f"Pillow cannot read back its own {fmt} file")
    if detected in DATASET_FORMATS:
        assert decode_image(path, "L").shape == (8, 8)
        assert load_dataset(dataset_of(tmp_path, ["x.png"]), cache_dir=tmp_path / "c").images["x"].shape[0] == 1
    else:
        with pytest.raises(DatasetError, match="not a PNG, JPEG or BMP image"):
            load_dataset(dataset_of(tmp_path, ["x.png"]), cache_dir=tmp_path / "c")
        with pytest.raises(InferenceError):
            load_image(str(path), (1, 8, 8), "x", True, None)
    if detected in SOURCE_FORMATS:
        assert read_image(str(path)).shape[:2] == (8, 8)
    else:
        with pytest.raises(ImageShapeError, match="not a PNG, JPEG, BMP, GIF or TIFF image"):
            read_image(str(path))


def sixteen_bit_png(path: Path) -> np.ndarray:
    """A 16-bit grey PNG whose values cover 0..65535; returns the 8-bit pixels it stands for (v / 257)."""
    wide = np.linspace(0, 65535, 64).round().astype(np.uint16).reshape(8, 8)
    Image.fromarray(wide).save(path)
    assert Image.open(path).mode == "I;16"
    return np.round(wide / 257.0).astype(np.uint8)


@pytest.mark.parametrize("cache", [True, False])
def test_a_16_bit_png_trains_scaled_as_dataset_create_reads_it(tmp_path, cache):
    expected = sixteen_bit_png(tmp_path / "x.png")
    csv_path = dataset_of(tmp_path, ["x.png"])
    grey = load_dataset(csv_path, {"x": (1, 8, 8)}, cache=cache, cache_dir=tmp_path / "c1")
    np.testing.assert_array_equal(grey.images["x"][0, 0], expected)
    probed = load_dataset(csv_path, cache=cache, cache_dir=tmp_path / "c2")  # no shape from the network
    np.testing.assert_array_equal(probed.images["x"][0, 0], expected)
    colour = load_dataset(csv_path, {"x": (3, 8, 8)}, cache=cache, cache_dir=tmp_path / "c3")
    for channel in range(3):
        np.testing.assert_array_equal(colour.images["x"][0, channel], expected)
    np.testing.assert_array_equal(read_image(str(tmp_path / "x.png")), expected)  # dataset create
    inferred = load_image(str(tmp_path / "x.png"), (1, 8, 8), "x", False, None)  # infer, as training decodes
    np.testing.assert_array_equal(inferred[0], expected.astype(np.float32))


@pytest.mark.parametrize("fmt,mode", [("PNG", "I;16"), ("TIFF", "I;16"), ("PNG", "L"), ("PNG", "LA"), ("PNG", "P"),
                                      ("PNG", "RGBA"), ("PNG", "1"), ("BMP", "RGB"), ("JPEG", "L"), ("TIFF", "I"),
                                      ("TIFF", "F"), ("GIF", "P")])
def test_every_bit_depth_gives_the_same_pixels_to_training_and_to_dataset_create(tmp_path, fmt, mode):
    """The generator of bit depths: training's grey decode equals create's grey reading for grey images."""
    levels = (np.arange(64).reshape(8, 8) * 1000) % 65536
    if mode in ("L", "LA", "P", "1", "RGB", "RGBA"):
        image = Image.fromarray((levels % 256).astype(np.uint8)).convert(mode)
    elif mode == "F":
        image = Image.fromarray((levels % 256).astype(np.float32), mode="F")
    else:
        image = Image.fromarray(levels.astype(np.uint16 if mode == "I;16" else np.int32))
    path = tmp_path / f"x.{fmt.lower()}"
    image.save(path, format=fmt)
    formats = SOURCE_FORMATS
    training = decode_image(path, "L", formats)
    native = read_pixels(path, formats)
    assert training.dtype == native.dtype == np.uint8 and training.shape == (8, 8)
    if native.ndim == 2:
        np.testing.assert_array_equal(training, native)
    if mode in ("I;16", "I"):
        assert training.max() > 1 and len(np.unique(training)) > 2, "16-bit levels were clipped (binarised)"


def test_a_fifo_named_png_is_refused_by_every_reader_without_blocking(tmp_path):
    fifo = tmp_path / "x.png"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        decode_image(fifo, "L")
    with pytest.raises(ImageShapeError, match="not a regular file"):
        read_image(str(fifo))
    with pytest.raises(InferenceError, match="not a regular file"):
        load_image(str(fifo), (1, 8, 8), "x", True, None)
