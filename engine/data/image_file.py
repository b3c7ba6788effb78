"""The one way nnconsole reads an image file: training's decode, the cache build, ``infer``, ``dataset create``
and the GUI's thumbnails all open images here.

- Only the formats the product supports are tried (Pillow's ``formats=``): a dataset CSV names PNG, JPEG or
  BMP files, ``dataset create`` also reads GIF and TIFF. Whatever a file is named, another format (PostScript,
  which Pillow hands to Ghostscript, and every other plugin) is refused before any plugin parses it.
- Only regular files are read (``regular_file``): a FIFO or device never blocks the reader.
- Bit depth is handled in one place: 16-bit grey (``I;16``, and ``I`` holding 16-bit values) is scaled to
  8 bits (divided by 257, rounded), never clipped at 255; every caller gets the same uint8 pixels.
- Pixels come from Pillow, or, for the common PNG and JPEG kinds, from libspng / libjpeg-turbo
  (``image_fast``: several times faster on small PNGs), which give the same pixels: each fast kind is checked
  against Pillow once per process, and anything unusual (a bad CRC, CMYK, too many pixels, a decoder error)
  is decoded by Pillow, whose messages and limits apply. The format is recognised by the file's signature,
  never its name, and only a format of ``formats`` is decoded either way.
"""
from __future__ import annotations

import contextlib
import io
import os
from typing import BinaryIO, Iterator, Optional, Sequence

import numpy as np
from PIL import Image, UnidentifiedImageError

from nnconsole.engine.data import image_fast
from nnconsole.engine.data.csv_reader import PathLike
from nnconsole.engine.data.regular_file import NotRegularFileError, open_regular

DATASET_FORMATS = ("PNG", "JPEG", "BMP")  # what a dataset CSV may name (csv_reader.IMAGE_EXTENSIONS)
SOURCE_FORMATS = DATASET_FORMATS + ("GIF", "TIFF")  # what dataset create also reads (create/sources.py)

GREY_MODES = frozenset({"1", "L", "LA", "La", "I", "I;16", "I;16B", "I;16L", "I;16N", "F"})
_SIXTEEN_BIT = frozenset({"I;16", "I;16B", "I;16L", "I;16N"})
_COLOUR_MODES = frozenset({"RGBA", "RGBa", "RGBX", "CMYK", "YCbCr", "LAB", "HSV"})


class ImageFileError(ValueError):
    """A file that is not an image the product reads; the message says why (the caller names the file)."""


class NotRegularImageError(ImageFileError):
    """The path names a FIFO, device, socket or folder: never read."""


class ImageTooLargeError(ImageFileError):
    """An image with more pixels than the caller allows (a decompression bomb, or just too large)."""


def format_names(formats: Sequence[str]) -> str:
    """'PNG, JPEG or BMP'."""
    return ", ".join(formats[:-1]) + f" or {formats[-1]}" if len(formats) > 1 else formats[0]


def _open_file(path: PathLike) -> BinaryIO:
    try:
        return open_regular(path)
    except NotRegularFileError as exc:
        raise NotRegularImageError(f"not a regular file (it is {exc.strerror.split(',')[0]})") from None


@contextlib.contextmanager
def _pillow_image(fh: BinaryIO, formats: Sequence[str], max_pixels: Optional[int]) -> Iterator[Image.Image]:
    try:
        img = Image.open(fh, formats=list(formats))
    except UnidentifiedImageError:
        raise ImageFileError(f"not a {format_names(formats)} image (another format, whatever its name, or "
                             "damaged)") from None
    except Image.DecompressionBombError as exc:
        raise ImageTooLargeError(f"too large to decode safely ({exc})") from None
    with img:
        if max_pixels is not None and img.width * img.height > max_pixels:
            raise ImageTooLargeError(f"the image is {img.width}x{img.height} pixels, over the {max_pixels:,} "
                                     "pixel limit; scale it down first")
        yield img


@contextlib.contextmanager
def open_image(path: PathLike, formats: Sequence[str] = DATASET_FORMATS,
               max_pixels: Optional[int] = None) -> Iterator[Image.Image]:
    """The Pillow image of the regular file ``path`` when it is one of ``formats`` (header read, pixels not yet).

    Raises ImageFileError (not a regular file, another format, too many pixels) or OSError (cannot open).
    """
    with _open_file(path) as fh, _pillow_image(fh, formats, max_pixels) as img:
        yield img


def wide_grey(img: Image.Image) -> Optional[np.ndarray]:
    """8-bit pixels of a grey image wider than 8 bits (16-bit divided by 257, rounded); None for other modes.

    ``I`` (32-bit integers, which some readers give 16-bit files) is scaled only when it holds values over 255.
    """
    if img.mode not in _SIXTEEN_BIT and img.mode != "I":
        return None
    wide = np.asarray(img, dtype=np.int64)
    return image_fast.wide_to_8(wide, 257.0 if img.mode in _SIXTEEN_BIT or wide.max(initial=0) > 255 else 1.0)


def native_pixels(img: Image.Image) -> np.ndarray:
    """The loaded image as uint8 in its own colour: (H, W) grey or (H, W, 3) colour (alpha dropped)."""
    grey = wide_grey(img)
    if grey is not None:
        return grey
    mode = img.mode
    if mode == "P":
        img = img.convert("RGBA" if "transparency" in img.info else "RGB")
        mode = img.mode
    if mode in ("L", "RGB"):
        return np.asarray(img, dtype=np.uint8)
    if mode in ("1", "LA", "La", "F"):
        return np.asarray(img.convert("L"), dtype=np.uint8)
    if mode in _COLOUR_MODES:
        return np.asarray(img.convert("RGB"), dtype=np.uint8)
    raise ImageFileError(f"unsupported pixel format '{mode}'; re-save it as 8-bit grey or RGB")


def pixels_as(img: Image.Image, mode: str) -> np.ndarray:
    """The loaded image as uint8 in ``mode``: (H, W) for 'L', (H, W, 3) for 'RGB' (Pillow's conversions, with
    16-bit grey scaled first)."""
    grey = wide_grey(img)
    if grey is not None:
        return grey if mode == "L" else np.repeat(grey[:, :, None], 3, axis=2)
    if img.mode != mode:
        img = img.convert(mode)
    return np.asarray(img, dtype=np.uint8)


def _pillow_pixels(img: Image.Image, mode: Optional[str]) -> np.ndarray:
    img.load()
    return native_pixels(img) if mode is None else pixels_as(img, mode)


def _reference(data: bytes, mode: Optional[str]) -> np.ndarray:
    """Pillow's pixels of an encoded image (what ``image_fast`` checks its decoders against)."""
    with Image.open(io.BytesIO(data)) as img:
        return _pillow_pixels(img, mode)


def _pixels(path: PathLike, mode: Optional[str], formats: Sequence[str], max_pixels: Optional[int]) -> np.ndarray:
    """The one decode: the file read once, by libspng / libjpeg-turbo where exact, else by Pillow."""
    with _open_file(path) as fh:
        if os.fstat(fh.fileno()).st_size <= image_fast.MAX_FAST_BYTES:
            data = fh.read()
            pixels = image_fast.fast_pixels(data, formats, max_pixels, mode, _reference)
            if pixels is not None:
                return pixels
            fh = io.BytesIO(data)  # Pillow reads the same bytes (a file changed meanwhile is not read twice)
        with _pillow_image(fh, formats, max_pixels) as img:
            return _pillow_pixels(img, mode)


def decode_image(path: PathLike, mode: str, formats: Sequence[str] = DATASET_FORMATS,
                 max_pixels: Optional[int] = None) -> np.ndarray:
    """One image file as uint8 pixels in ``mode`` ('L' or 'RGB'): what training, infer and evaluate feed."""
    return _pixels(path, mode, formats, max_pixels)


def read_pixels(path: PathLike, formats: Sequence[str] = DATASET_FORMATS,
                max_pixels: Optional[int] = None) -> np.ndarray:
    """One image file as uint8 pixels in its own colour (grey or RGB): what dataset create and thumbnails show."""
    return _pixels(path, None, formats, max_pixels)


def probe_mode(path: PathLike, formats: Sequence[str] = DATASET_FORMATS) -> str:
    """'L' or 'RGB': how to decode an image when the network does not say (reads the header only)."""
    with open_image(path, formats) as img:
        return "L" if img.mode in GREY_MODES else "RGB"
