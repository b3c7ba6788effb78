"""libspng / libjpeg-turbo decode (engine/data/image_fast.py) gives exactly Pillow's pixels, through the one image
reader (image_file), for every PNG and JPEG kind it takes; every other kind, and every damaged or oversized file,
is left to Pillow with its messages and limits."""
from __future__ import annotations

import io
import struct

import numpy as np
import pytest
from PIL import Image

from nnconsole.engine.data import image_fast, image_file
from nnconsole.engine.data.image_file import ImageFileError, ImageTooLargeError, decode_image, read_pixels

MODES = (None, "L", "RGB")


def _pattern(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.sin(xx / 3.0) * np.cos(yy / 5.0) * 80 + 100
    return (np.dstack([base, base[::-1], base[:, ::-1]]) + rng.integers(0, 56, (h, w, 3))).astype(np.uint8)


def _png(img: Image.Image, **options) -> bytes:
    out = io.BytesIO()
    img.save(out, "PNG", **options)
    return out.getvalue()


def _jpeg(img: Image.Image, **options) -> bytes:
    out = io.BytesIO()
    img.save(out, "JPEG", **options)
    return out.getvalue()


def _fast_kinds() -> dict:
    rgb = _pattern(32, 32, 1)
    big = _pattern(240, 320, 2)
    grey = rgb[:, :, 0]
    paletted = Image.fromarray(rgb).quantize(64)
    kinds = {
        "png grey 8-bit": _png(Image.fromarray(grey, "L")),
        "png grey 1-bit": _png(Image.fromarray(grey, "L").convert("1")),
        "png grey 2-bit": _png(Image.fromarray(grey & 0xC0, "L"), bits=2),
        "png grey 4-bit": _png(Image.fromarray(grey & 0xF0, "L"), bits=4),
        "png grey 16-bit": _png(Image.fromarray((grey.astype(np.uint16) * 257 - 3 * (grey > 0)).astype(np.uint16))),
        "png grey+alpha": _png(Image.fromarray(np.dstack([grey, 255 - grey]), "LA")),
        "png RGB": _png(Image.fromarray(rgb)),
        "png grey with transparency": _png(Image.fromarray(grey, "L"), transparency=int(grey[0, 0])),
        "png RGB with transparency": _png(Image.fromarray(rgb), transparency=tuple(int(v) for v in rgb[0, 0])),
        "png RGBA": _png(Image.fromarray(np.dstack([rgb, grey]), "RGBA")),
        "png palette": _png(paletted),
        "png palette 4-bit": _png(Image.fromarray(rgb).quantize(16), bits=4),
        "png palette with transparency": _png(paletted, transparency=5),
        "png RGB large": _png(Image.fromarray(big)),
        "jpeg baseline 4:2:0": _jpeg(Image.fromarray(big), quality=90),
        "jpeg 4:4:4": _jpeg(Image.fromarray(big), subsampling=0, quality=95),
        "jpeg 4:2:2": _jpeg(Image.fromarray(big), subsampling=1),
        "jpeg progressive": _jpeg(Image.fromarray(big), progressive=True),
        "jpeg optimised small": _jpeg(Image.fromarray(rgb), optimize=True, quality=70),
        "jpeg grey": _jpeg(Image.fromarray(big[:, :, 1], "L")),
        "jpeg grey progressive": _jpeg(Image.fromarray(big[:, :, 1], "L"), progressive=True),
    }
    for name in ("png RGB", "png grey 8-bit", "png grey 16-bit", "png RGBA", "png grey+alpha"):
        kinds[name + " interlaced"] = image_fast._interlaced_png(Image.open(io.BytesIO(kinds[name])), kinds[name])
    return kinds


FAST = _fast_kinds()


def _pillow(path: str, mode, monkeypatch, formats=image_file.DATASET_FORMATS) -> np.ndarray:
    with monkeypatch.context() as m:
        m.setenv("NNCONSOLE_FAST_DECODE", "0")
        return decode_image(path, mode, formats) if mode else read_pixels(path, formats)


@pytest.mark.parametrize("name", sorted(FAST))
def test_fast_decoders_give_pillows_pixels(name, tmp_path, monkeypatch):
    data = FAST[name]
    if "interlaced" in name:
        assert data[28] == 1  # Adam7, as written
    path = tmp_path / ("image.jpg" if name.startswith("jpeg") else "image.png")
    path.write_bytes(data)
    for mode in MODES:
        fast = image_fast.fast_pixels(data, image_file.DATASET_FORMATS, None, mode, image_file._reference)
        assert fast is not None, (name, mode)  # this kind is decoded by libspng / libjpeg-turbo here
        ours = decode_image(str(path), mode) if mode else read_pixels(str(path))
        reference = _pillow(str(path), mode, monkeypatch)
        assert ours.dtype == reference.dtype == np.uint8
        assert ours.shape == reference.shape, (name, mode)
        assert np.array_equal(ours, reference), (name, mode)


def _cmyk_jpeg() -> bytes:
    return _jpeg(Image.fromarray(_pattern(24, 24, 3)).convert("CMYK"))


@pytest.mark.parametrize("name,data,formats", [
    ("jpeg CMYK", _cmyk_jpeg(), ("JPEG",)),
    ("png RGB 16-bit", None, ("PNG",)),
    ("bmp", None, ("BMP",)),
    ("gif", None, ("GIF",)),
    ("tiff", None, ("TIFF",)),
])
def test_other_kinds_are_decoded_by_pillow(name, data, formats, tmp_path, monkeypatch):
    rgb = _pattern(20, 24, 5)
    if data is None:
        out = io.BytesIO()
        if name.startswith("png"):  # 16-bit colour: written by hand (Pillow writes 8-bit RGB)
            data = _rgb16_png(rgb)
        else:
            Image.fromarray(rgb).save(out, name.split()[0].upper())
            data = out.getvalue()
    assert image_fast.fast_pixels(data, formats, None, "RGB", image_file._reference) is None
    path = tmp_path / "image.bin"
    path.write_bytes(data)
    for mode in MODES:
        ours = decode_image(str(path), mode, formats) if mode else read_pixels(str(path), formats)
        assert np.array_equal(ours, _pillow(str(path), mode, monkeypatch, formats))


def _rgb16_png(rgb: np.ndarray) -> bytes:
    import zlib

    wide = (rgb.astype(">u2") * 257)
    raw = b"".join(b"\x00" + row.tobytes() for row in wide)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", rgb.shape[1], rgb.shape[0], 16, 2, 0, 0, 0)
    return image_fast.PNG_SIGNATURE + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def test_a_damaged_png_reaches_pillow_and_its_error(tmp_path, monkeypatch):
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    info.add_text("Comment", "made by a test")
    data = bytearray(_png(Image.fromarray(_pattern(32, 32, 1)), pnginfo=info))
    text = data.index(b"made by")
    data[text] ^= 0x20  # a flipped bit in a text chunk: its CRC no longer matches (libspng alone would decode)
    assert image_fast.fast_pixels(bytes(data), ("PNG",), None, "RGB", image_file._reference) is None
    path = tmp_path / "damaged.png"
    path.write_bytes(bytes(data))
    with pytest.raises(Exception) as fast_error:
        decode_image(str(path), "RGB")
    with pytest.raises(Exception) as pillow_error:
        _pillow(str(path), "RGB", monkeypatch)
    assert (type(fast_error.value), str(fast_error.value)) == (type(pillow_error.value), str(pillow_error.value))
    truncated = tmp_path / "truncated.png"
    truncated.write_bytes(FAST["png RGB"][:-30])
    assert image_fast.fast_pixels(truncated.read_bytes(), ("PNG",), None, "RGB", image_file._reference) is None


def test_format_allow_list_and_pixel_limit_hold_on_the_fast_path(tmp_path):
    png = tmp_path / "named.jpg"  # a PNG under a JPEG name: its signature decides, and PNG is not allowed here
    png.write_bytes(FAST["png RGB"])
    with pytest.raises(ImageFileError, match="not a JPEG image"):
        decode_image(str(png), "RGB", ("JPEG",))
    with pytest.raises(ImageTooLargeError, match="over the 100 pixel limit"):
        decode_image(str(png), "RGB", max_pixels=100)
    jpeg = tmp_path / "big.jpg"
    jpeg.write_bytes(FAST["jpeg baseline 4:2:0"])
    with pytest.raises(ImageTooLargeError, match="240x320|320x240"):
        read_pixels(str(jpeg), max_pixels=1000)


def test_a_kind_whose_fast_pixels_differ_is_left_to_pillow(tmp_path, monkeypatch):
    monkeypatch.setattr(image_fast, "_verified", {})
    real = image_fast._decode_png
    monkeypatch.setattr(image_fast, "_decode_png", lambda data, kind, mode: real(data, kind, mode) // 2)  # wrong
    path = tmp_path / "image.png"
    path.write_bytes(FAST["png RGB"])
    assert image_fast.fast_pixels(FAST["png RGB"], ("PNG",), None, "RGB", image_file._reference) is None
    assert image_fast._verified["png:RGB"] is False and image_fast._verified["jpeg:RGB"] is True
    assert np.array_equal(decode_image(str(path), "RGB"), _pillow(str(path), "RGB", monkeypatch))
