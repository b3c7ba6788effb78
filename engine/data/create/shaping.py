"""Shaping one image for a created dataset: read it, fit it to W x H (trim, pad or stretch), set its channels.

The arithmetic is that of ``nnabla_cli create_image_classification_dataset`` (and so of NNC's "create
dataset"), step for step, so a dataset made here has the same pixels: trimming crops the centre to the
target aspect ratio, padding adds black borders to it, both then resize bilinearly with Pillow (nnabla's
image backend here); a colour image becomes grey by ``0.299 R + 0.587 G + 0.114 B`` cut to an integer,
a grey one colour by repeating it. Two things nnabla refuses are read here instead: an image with an
alpha channel (the alpha is dropped) and 16-bit grey (scaled to 8 bits).
"""
from __future__ import annotations

import numpy as np
import os

from PIL import Image

from nnconsole.engine.data.create.padded_resize import padded_resize
from nnconsole.engine.data.image_file import SOURCE_FORMATS, ImageFileError, read_pixels

MODES = ("trimming", "padding", "resize")  # nnabla's -m values; "resize" stretches (nnabla: any other value)
CHANNELS = (1, 3)


class ImageShapeError(ValueError):
    """An image that cannot be read or shaped; the message says why (the caller names the file)."""


def read_image(path: str) -> np.ndarray:
    """The image at ``path`` as uint8 pixels: (H, W) grey or (H, W, 3) colour. Raises ImageShapeError.

    Read by ``image_file`` (the one image reader): the source formats only, a regular file only, 16-bit grey scaled.
    """
    try:
        return read_pixels(path, SOURCE_FORMATS)
    except ImageFileError as exc:
        raise ImageShapeError(str(exc)) from None
    except (OSError, SyntaxError, ValueError) as exc:  # truncated files, bad headers
        raise ImageShapeError(f"cannot decode it ({exc})") from None


def _resize(im: np.ndarray, width: int, height: int) -> np.ndarray:
    """Bilinear resize with Pillow, as nnabla's ``imresize`` does for uint8 images."""

    return np.asarray(Image.fromarray(im).resize((width, height), resample=Image.Resampling.BILINEAR))


def fit(im: np.ndarray, width: int, height: int, mode: str) -> np.ndarray:
    """``im`` made exactly ``width`` x ``height``: trimmed, padded or stretched to that aspect ratio, resized."""
    h, w = im.shape[0], im.shape[1]
    if (w, h) == (width, height):
        return im
    if mode == "trimming":
        if float(h) / w > float(height) / width:
            target_h = int(float(w) / width * height)
            im = im[(h - target_h) // 2:h - (h - target_h) // 2, ::]
        else:
            target_w = int(float(h) / height * width)
            im = im[::, (w - target_w) // 2:w - (w - target_w) // 2]
    elif mode == "padding":
        if float(h) / w < float(height) / width:
            target_h = int(float(height) / width * w)
            pad = (((target_h - h) // 2, target_h - (target_h - h) // 2 - h), (0, 0))
        else:
            target_w = int(float(width) / height * h)
            pad = ((0, 0), ((target_w - w) // 2, target_w - (target_w - w) // 2 - w))
        # The same pixels as resizing the padded image, without making it (a 60000x1 strip pads to 60000x60000).
        return padded_resize(im, width, height, pad)
    elif mode != "resize":
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if im.shape[0] == 0 or im.shape[1] == 0:
        raise ImageShapeError(f"is {w}x{h} pixels: too thin to {mode} to {width}x{height}")
    return _resize(im, width, height)


def set_channels(im: np.ndarray, channels: int) -> np.ndarray:
    """Grey (H, W) for ``channels`` 1, colour (H, W, 3) for 3, converting as nnabla does."""
    if im.ndim == 2 and channels == 3:
        return np.array([im, im, im]).transpose((1, 2, 0))
    if im.ndim == 3 and channels == 1:
        return np.dot(im[..., :3], [0.299, 0.587, 0.114]).astype(np.uint8)
    return im


def shape_image(im: np.ndarray, width: int, height: int, mode: str, channels: int) -> np.ndarray:
    """The whole conversion of one decoded image: fit to the size, then set the channels (nnabla's order)."""
    return set_channels(fit(im, width, height, mode), channels)


def save_png(path: str, im: np.ndarray) -> None:
    """Write ``im`` (uint8, (H, W) or (H, W, 3)) as a PNG file at ``path``; refuses to write through a link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    with os.fdopen(fd, "wb") as fh:
        Image.fromarray(np.ascontiguousarray(im)).save(fh, format="PNG")
