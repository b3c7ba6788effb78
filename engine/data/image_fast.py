"""Faster decoders for the common cases of ``image_file``: libspng (``pyspng``) for PNG and libjpeg-turbo
(``simplejpeg``) for JPEG, used only where they give the same pixels as Pillow.

Measured (bench/decode_speed.py, this machine): a 32x32 RGB PNG decodes in about a third of Pillow's time, a
512x512 JPEG in about half; dataset builds and decode-on-the-fly are bound by it.

When a file is decoded here (``fast_pixels`` returns pixels) and when it is left to Pillow (None):

- PNG: 8-bit grey, grey+alpha, RGB, RGBA; palette images of 1-8 bits; 1-, 2-, 4- and 16-bit grey; interlaced
  or not. Every chunk's CRC is checked first (libspng as ``pyspng`` runs it would decode through a bad CRC;
  Pillow refuses one), so a damaged file always reaches Pillow and its error. 16-bit colour PNGs go to Pillow.
- JPEG: grey and YCbCr (any subsampling, baseline or progressive), decoded with the accurate DCT and fancy
  upsampling, as Pillow's libjpeg-turbo does; CMYK and YCCK go to Pillow. libjpeg-turbo's DCT-domain
  downscaling (1/2, 1/4, 1/8) is NOT used: no caller decodes a JPEG larger than the pixels it keeps except to
  resize it with Pillow from the full image (``dataset create``, ``infer --resize``), and a DCT-scaled decode
  gives other pixels; training refuses an image whose size differs from the network's input.
- Anything else (BMP, GIF, TIFF, a format not allowed, more pixels than allowed or than Pillow's
  decompression-bomb limit, a file over ``MAX_FAST_BYTES``, any error of the fast decoder) goes to Pillow.

Equality is not assumed from the libraries' versions: the first use in a process decodes a set of generated
images of each kind both ways (``_self_check``) and a kind whose pixels differ is left to Pillow from then on.
``NNCONSOLE_FAST_DECODE=0`` turns the fast decoders off (benchmarks compare with it).
"""
from __future__ import annotations

import io
import os
import struct
import threading
import zlib
from typing import Callable, Dict, Optional, Sequence, Tuple

import numpy as np
from PIL import Image

try:
    import pyspng
except ImportError:  # a platform without its wheel: Pillow decodes every PNG
    pyspng = None
try:
    import simplejpeg
except ImportError:  # likewise for JPEG
    simplejpeg = None

MAX_FAST_BYTES = 64 * 1024 * 1024  # larger files are streamed by Pillow, not read into memory whole
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
JPEG_SIGNATURE = b"\xff\xd8\xff"

# PNG (colour type, bit depth) -> the channels libspng is asked for. Pillow's modes for these: grey "1"/"L"
# (1-8 bits), "I;16" (16 bits), "LA", "RGB", "RGBA", "P".
_PNG_KINDS: Dict[Tuple[int, int], str] = {
    (0, 1): "L", (0, 2): "L", (0, 4): "L", (0, 8): "L", (0, 16): "wide",
    (2, 8): "RGB", (3, 1): "RGB", (3, 2): "RGB", (3, 4): "RGB", (3, 8): "RGB", (4, 8): "LA", (6, 8): "RGBA",
}
_JPEG_KINDS = {"Gray": "GRAY", "YCbCr": "RGB"}

_lock = threading.Lock()
_verified: Dict[str, bool] = {}  # kind -> the fast decoder gave Pillow's pixels on the self-check images


def enabled() -> bool:
    """Whether the fast decoders may be used in this process (``NNCONSOLE_FAST_DECODE=0`` turns them off)."""
    return os.environ.get("NNCONSOLE_FAST_DECODE", "1") != "0"


def _png_header(data: bytes) -> Optional[Tuple[int, int, int, int]]:
    """(width, height, bit depth, colour type) of a PNG whose every chunk's CRC is right, else None."""
    if len(data) < 33 or data[12:16] != b"IHDR":
        return None
    pos, end = 8, len(data)
    crc32 = zlib.crc32
    while pos + 12 <= end:
        length, = struct.unpack_from(">I", data, pos)
        stop = pos + 8 + length
        if stop + 4 > end or crc32(data[pos + 4:stop]) != struct.unpack_from(">I", data, stop)[0]:
            return None
        if data[pos + 4:pos + 8] == b"IEND":
            width, height, depth, colour = struct.unpack_from(">IIBB", data, 16)
            return width, height, depth, colour
        pos = stop + 4
    return None  # no IEND: truncated


def _grey_to(pixels: np.ndarray, mode: Optional[str]) -> np.ndarray:
    return np.repeat(pixels[:, :, None], 3, axis=2) if mode == "RGB" else pixels


def _rgb_to(pixels: np.ndarray, mode: Optional[str]) -> np.ndarray:
    if mode == "L":  # Pillow's own RGB -> L conversion (ITU-R 601-2 luma, its integer rounding)
        return np.asarray(Image.fromarray(pixels, "RGB").convert("L"), dtype=np.uint8)
    return pixels


def wide_to_8(wide: np.ndarray, scale: float = 257.0) -> np.ndarray:
    """Grey wider than 8 bits as uint8: divided by ``scale`` (257: 65535 -> 255), rounded, never clipped early."""
    return np.clip(np.round(wide.astype(np.int64) / scale), 0, 255).astype(np.uint8)


def _decode_png(data: bytes, kind: str, mode: Optional[str]) -> np.ndarray:
    if kind == "wide":
        wide = pyspng.load(data)  # uint16: libspng gives grey + alpha (H, W, 2) for 16-bit grey
        if wide.dtype != np.uint16 or wide.ndim != 3 or wide.shape[2] != 2:
            raise ValueError("unexpected 16-bit layout")
        wide = wide[:, :, 0]
        return _grey_to(wide_to_8(wide), mode)
    if kind == "L":
        return _grey_to(pyspng.load(data, "L"), mode)
    if kind == "LA":
        return _grey_to(np.ascontiguousarray(pyspng.load(data, "RGB")[:, :, 0]), mode)  # no "L" from grey+alpha
    rgb = pyspng.load(data, "RGBA")[:, :, :3] if kind == "RGBA" else pyspng.load(data, "RGB")
    return _rgb_to(np.ascontiguousarray(rgb), mode)


def _decode_jpeg(data: bytes, kind: str, mode: Optional[str]) -> np.ndarray:
    if kind == "GRAY":
        grey = simplejpeg.decode_jpeg(data, colorspace="GRAY", fastdct=False, fastupsample=False, strict=True)
        return _grey_to(np.ascontiguousarray(grey[:, :, 0]), mode)
    rgb = simplejpeg.decode_jpeg(data, colorspace="RGB", fastdct=False, fastupsample=False, strict=True)
    return _rgb_to(rgb, mode)


# reference(data, mode): Pillow's pixels of an encoded image, as image_file decodes them (it passes its own)
Reference = Callable[[bytes, Optional[str]], np.ndarray]


def _check_samples() -> Dict[str, list]:
    """Generated images of every kind decoded here, encoded by Pillow (odd sizes, noise, interlaced PNGs)."""
    rng = np.random.default_rng(7)
    rgb = rng.integers(0, 256, (19, 23, 3), dtype=np.uint8)
    rgb[:6] //= 3  # flat areas as well as noise
    grey = rgb[:, :, 1].copy()
    samples: Dict[str, list] = {}

    def png(key: str, img: Image.Image, **options: object) -> None:
        for interlace in (False, True):
            out = io.BytesIO()
            img.save(out, "PNG", **options)
            data = out.getvalue()
            if interlace:  # Pillow cannot write Adam7: re-encode the raw rows with interlace via our own writer
                data = _interlaced_png(img, data)
            if data is not None:
                samples.setdefault(key, []).append(data)

    png("png:L", Image.fromarray(grey, "L"))
    png("png:L", Image.fromarray(grey, "L").convert("1"))
    for bits in (2, 4):
        png("png:L", Image.fromarray(grey >> (8 - bits) << (8 - bits), "L"), bits=bits)
    png("png:wide", Image.fromarray((grey.astype(np.uint16) * 251 + 7).astype(np.uint16)))
    png("png:RGB", Image.fromarray(rgb, "RGB"))
    png("png:RGB", Image.fromarray(rgb, "RGB").quantize(37))
    png("png:RGB", Image.fromarray(rgb, "RGB").quantize(12), bits=4)
    png("png:RGB", Image.fromarray(rgb, "RGB").quantize(2), bits=1)
    paletted = Image.fromarray(rgb, "RGB").quantize(40)
    paletted.info["transparency"] = 3
    png("png:RGB", paletted, transparency=3)
    png("png:LA", Image.fromarray(np.dstack([grey, 255 - grey]), "LA"))
    png("png:RGBA", Image.fromarray(np.dstack([rgb, grey]), "RGBA"))
    for key, img in (("jpeg:GRAY", Image.fromarray(grey, "L")), ("jpeg:RGB", Image.fromarray(rgb, "RGB"))):
        for options in ({"quality": 90}, {"quality": 75, "progressive": True}, {"subsampling": 0},
                        {"subsampling": 1}, {"subsampling": 2, "quality": 60, "optimize": True}):
            out = io.BytesIO()
            img.save(out, "JPEG", **options)
            samples.setdefault(key, []).append(out.getvalue())
    return samples


def _interlaced_png(img: Image.Image, plain: bytes) -> Optional[bytes]:
    """``plain`` (a non-interlaced PNG of ``img``) rewritten with Adam7 interlacing (filter type 0), or None
    for the kinds this writer does not handle (palette and low bit depths)."""
    header = _png_header(plain)
    if header is None:
        return None
    width, height, depth, colour = header
    if depth not in (8, 16) or colour == 3:
        return None
    pixels = np.asarray(img)
    if depth == 16:
        pixels = pixels.astype(">u2")  # PNG's byte order
    raw = bytearray()
    for y0, x0, dy, dx in ((0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2),
                           (1, 0, 2, 1)):
        sub = pixels[y0::dy, x0::dx]
        if sub.shape[0] == 0 or sub.shape[1] == 0:
            continue
        for row in sub:
            raw += b"\x00" + np.ascontiguousarray(row).tobytes()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 1)
    return PNG_SIGNATURE + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b"")


def _self_check(key: str, reference: Reference) -> bool:
    """Whether the fast decoder of ``key`` gives ``reference``'s (Pillow's) pixels on every generated sample, in
    every mode; decided once per process."""
    with _lock:
        if not _verified:
            samples = _check_samples()
            for name, datas in samples.items():
                ok = True
                for data in datas:
                    for mode in (None, "L", "RGB"):
                        try:
                            ours = _dispatch(data, mode, None)
                        except Exception:  # noqa: BLE001 - a decoder that fails on a valid image is not used
                            ours = None
                        if ours is None or not np.array_equal(ours, reference(data, mode)):
                            ok = False
                _verified[name] = ok
        return _verified.get(key, False)


def _dispatch(data: bytes, mode: Optional[str], reference: Optional[Reference]) -> Optional[np.ndarray]:
    """The fast decode of ``data`` (PNG or JPEG by its signature), or None when it does not apply; with a
    ``reference``, only for a kind the self-check found exact."""
    decode: Callable[[bytes, str, Optional[str]], np.ndarray]
    if data.startswith(PNG_SIGNATURE):
        header = _png_header(data) if pyspng is not None else None
        kind = _PNG_KINDS.get((header[3], header[2])) if header else None
        if kind is None:
            return None
        key, decode = f"png:{kind}", _decode_png
    elif data.startswith(JPEG_SIGNATURE) and simplejpeg is not None:
        try:
            height, width, colourspace, _ = simplejpeg.decode_jpeg_header(data, strict=True)
        except ValueError:
            return None
        kind = _JPEG_KINDS.get(colourspace)
        if kind is None:
            return None
        header = (width, height)
        key, decode = f"jpeg:{kind}", _decode_jpeg
    else:
        return None
    if reference is not None and not _self_check(key, reference):
        return None
    pixels = decode(data, kind, mode)
    if pixels.shape[:2] != (header[1], header[0]):
        raise ValueError("decoded size differs from the header")
    return pixels


def image_size(data: bytes) -> Optional[Tuple[int, int]]:
    """(width, height) from a PNG's IHDR or a JPEG's frame header; None for another format or a bad header."""
    if data.startswith(PNG_SIGNATURE) and len(data) >= 24 and data[12:16] == b"IHDR":
        return struct.unpack_from(">II", data, 16)
    if data.startswith(JPEG_SIGNATURE) and simplejpeg is not None:
        try:
            height, width, _, _ = simplejpeg.decode_jpeg_header(data, strict=True)
            return width, height
        except ValueError:
            return None
    return None


def fast_pixels(data: bytes, formats: Sequence[str], max_pixels: Optional[int], mode: Optional[str],
                reference: Reference) -> Optional[np.ndarray]:
    """The uint8 pixels of the file ``data`` in ``mode`` ('L', 'RGB', or None: its own colour, alpha dropped)
    as ``reference`` (image_file's Pillow decode) gives them, decoded by libspng or libjpeg-turbo; None when
    Pillow must decode it."""
    if not enabled() or len(data) > MAX_FAST_BYTES:
        return None
    if not ((data.startswith(PNG_SIGNATURE) and "PNG" in formats)
            or (data.startswith(JPEG_SIGNATURE) and "JPEG" in formats)):
        return None
    size = image_size(data)
    if size is None:
        return None
    pixels_count = size[0] * size[1]
    bomb = Image.MAX_IMAGE_PIXELS
    if (max_pixels is not None and pixels_count > max_pixels) or (bomb is not None and pixels_count > bomb) \
            or pixels_count == 0:
        return None  # Pillow's path raises (or warns) as it always did
    try:
        return _dispatch(data, mode, reference)
    except Exception:  # noqa: BLE001 - whatever the fast decoder refuses, Pillow decides (and names the problem)
        return None
