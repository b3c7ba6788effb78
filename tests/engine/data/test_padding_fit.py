"""'padding' fits an image without making the padded image (issue 25 item 13): a thin strip pads to a huge
square before the resize; the fit now gives Pillow's pixels, to the bit, from the strip itself."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from PIL import Image

from nnconsole.engine.data.create.shaping import fit


def _padded_then_resized(im: np.ndarray, width: int, height: int) -> np.ndarray:
    """The reference: nnabla's arithmetic, padding made literally, then Pillow's BILINEAR resize."""
    h, w = im.shape[0], im.shape[1]
    if float(h) / w < float(height) / width:
        target_h = int(float(height) / width * w)
        pad = (((target_h - h) // 2, target_h - (target_h - h) // 2 - h), (0, 0))
    else:
        target_w = int(float(width) / height * h)
        pad = ((0, 0), ((target_w - w) // 2, target_w - (target_w - w) // 2 - w))
    padded = np.pad(im, pad + (((0, 0),) if im.ndim == 3 else ()), "constant")
    return np.asarray(Image.fromarray(padded).resize((width, height), resample=Image.Resampling.BILINEAR))


def test_padding_gives_pillows_pixels_for_every_size_and_scale():
    rng = np.random.default_rng(25)
    for _ in range(400):
        h, w = (int(v) for v in rng.integers(1, 90, 2))
        width, height = (int(v) for v in rng.integers(1, 60, 2))
        if (w, h) == (width, height):
            continue
        im = rng.integers(0, 256, (h, w) + ((3,) if rng.random() < 0.5 else ()), dtype=np.uint8)
        if rng.random() < 0.3:
            im[:] = 255  # saturated: the rounding at the top of the range
        assert np.array_equal(fit(im, width, height, "padding"), _padded_then_resized(im, width, height)), \
            (h, w, width, height, im.ndim)


@pytest.mark.parametrize("shape", [(1, 20_000), (20_000, 1), (1, 20_000, 3), (20_000, 1, 3)])
def test_a_thin_strip_is_fitted_without_allocating_the_padded_square(shape):
    """A 20000-pixel strip pads to 20000x20000 (400 MB grey, 1.2 GB colour); the fit stays within a few MB."""
    im = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    tracemalloc.start()
    try:
        out = fit(im, 28, 28, "padding")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.shape == (28, 28) + shape[2:]
    assert peak < 20_000_000, f"peak {peak / 1e6:.0f} MB"


@pytest.mark.parametrize("shape", [(1, 2000), (2000, 1), (2, 1500, 3), (1500, 3, 3)])
def test_thin_strips_give_pillows_pixels_too(shape):
    im = np.random.default_rng(1).integers(0, 256, shape, dtype=np.uint8)
    for width, height in ((28, 28), (32, 20), (5, 40)):
        assert np.array_equal(fit(im, width, height, "padding"), _padded_then_resized(im, width, height))
