"""Pillow's bilinear resize of an image padded with black bands, computed without making the padded image.

'padding' fits an image to W x H by adding black bands up to the target's aspect ratio and then resizing
(nnabla's ``create_image_classification_dataset``). Made literally, the padded image of a 60000 x 1 strip
is 60000 x 60000 pixels (3.6 GB grey, 10 GB colour) for a 28 x 28 result. This module gives the same
pixels, to the bit, from the strip itself: it repeats Pillow's separable BILINEAR resampling
(``libImaging/Resample.c``: per output pixel a window of input pixels, weights from the triangle filter
widened by the scale, normalised and rounded to 22-bit fixed point; a horizontal pass rounded to 8 bits,
then a vertical one) over the padded geometry, summing only the pixels that are not padding (the bands
are zeros and add nothing). Memory stays that of Pillow resizing the unpadded image: the image, one
intermediate of its height x W, and a window at a time. ``tests/engine/data/test_padding_fit.py``
checks the result against Pillow on the padded image for many sizes.
"""
from __future__ import annotations

from typing import List, Tuple

import numpy as np

PRECISION_BITS = 32 - 8 - 2  # Pillow's fixed point for 8-bit images
_ONE = float(1 << PRECISION_BITS)
_HALF = float(1 << (PRECISION_BITS - 1))


def _windows(in_size: int, out_size: int) -> List[Tuple[int, np.ndarray]]:
    """Per output pixel: (first input pixel, integer weights), as Pillow's ``precompute_coeffs`` and
    ``normalize_coeffs_8bpc`` compute them for BILINEAR (support 1) over an input of ``in_size`` pixels."""
    scale = float(in_size) / out_size
    filterscale = max(scale, 1.0)
    support = 1.0 * filterscale
    ss = 1.0 / filterscale
    windows = []
    for xx in range(out_size):
        center = (xx + 0.5) * scale
        xmin = max(int(center - support + 0.5), 0)  # C's (int) cast: toward zero
        xmax = min(int(center + support + 0.5), in_size) - xmin
        arg = np.abs((np.arange(xmin, xmin + xmax) - center + 0.5) * ss)
        w = np.where(arg < 1.0, 1.0 - arg, 0.0)
        ww = float(np.add.accumulate(w)[-1]) if len(w) else 0.0  # summed in order, as the C loop does
        if ww != 0.0:
            w = w / ww
        windows.append((xmin, np.trunc(0.5 + w * _ONE)))  # all weights >= 0: (int)(0.5 + k * 2^22)
    return windows


def _pass(data: np.ndarray, padded: int, offset: int, out_size: int) -> np.ndarray:
    """One resampling pass along axis 0 of uint8 ``data``, which sits at ``offset`` in zeros ``padded`` long.

    Pillow skips a pass whose size does not change; then the result is the padded data itself. Sums are
    taken in float64, exact here: every product is below 2^31 and so is every sum (as in Pillow's int32).
    """
    n = data.shape[0]
    if padded == out_size:
        out = np.zeros((out_size,) + data.shape[1:], np.uint8)
        out[offset:offset + n] = data
        return out
    out = np.empty((out_size,) + data.shape[1:], np.uint8)
    for j, (xmin, weights) in enumerate(_windows(padded, out_size)):
        lo, hi = max(xmin, offset), min(xmin + len(weights), offset + n)  # the window's pixels that are data
        total = np.full(data.shape[1:], _HALF)
        if lo < hi:
            total += np.tensordot(weights[lo - xmin:hi - xmin], data[lo - offset:hi - offset].astype(np.float64),
                                  axes=(0, 0))
        out[j] = np.clip(np.floor(total / _ONE), 0, 255)
    return out


def padded_resize(im: np.ndarray, width: int, height: int, padding: Tuple[Tuple[int, int], Tuple[int, int]]
                  ) -> np.ndarray:
    """``im`` (uint8, (H, W) or (H, W, C)) padded with zeros by ``padding`` ((top, bottom), (left, right))
    and resized to ``width`` x ``height`` as Pillow's BILINEAR resize does, without making the padded image."""
    (top, bottom), (left, right) = padding
    h, w = im.shape[0], im.shape[1]
    padded_h, padded_w = h + top + bottom, w + left + right
    # Horizontal pass first (columns: axis 1), then vertical, as Pillow does; each rounds to 8 bits.
    across = np.moveaxis(_pass(np.moveaxis(im, 1, 0), padded_w, left, width), 0, 1)
    return _pass(across, padded_h, top, height)
