"""Decode speed per image (issue 31): Pillow against libspng (``pyspng``) and libjpeg-turbo (``simplejpeg``), raw
and through nnconsole's one image reader (``image_file.decode_image``) with its fast path on and off.

    .venv/bin/python bench/decode_speed.py [--quick]

Images are generated into a temp folder: 32x32 RGB and grey PNGs (CIFAR-/digits-like: a pattern plus noise) and
JPEGs of 512x512 and 1024x768 (quality 90, 4:2:0). Each figure is the median of rounds, each round decoding every
file of its kind once, the decoders interleaved round by round. The last column shows what libjpeg-turbo's
DCT-domain downscaling (decode at 1/4 size) would cost, for reference: it is not used, as its pixels are not
Pillow's (engine/data/image_fast.py says why). Goal: the reader's fast path at least 1.5x Pillow on 32x32 PNGs.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from typing import Callable, Dict, List

from common import machine, median, parse_quick, pin_threads, run_main, table

GOAL = 1.5


def _images(folder: str, count: int) -> Dict[str, List[str]]:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    kinds: Dict[str, List[str]] = {"png 32x32 RGB": [], "png 32x32 grey": [], "jpeg 512x512": [],
                                   "jpeg 1024x768": []}
    for i in range(count):
        yy, xx = np.mgrid[0:32, 0:32]
        base = np.sin(xx * (i % 10 + 1) / 32 * 3.1) * np.cos(yy / 32 * 2.3) * 80 + 100
        rgb = (np.dstack([base, base.T, base[::-1]]) + rng.integers(0, 56, (32, 32, 3))).astype(np.uint8)
        for kind, img in (("png 32x32 RGB", Image.fromarray(rgb)), ("png 32x32 grey", Image.fromarray(rgb[:, :, 0]))):
            path = os.path.join(folder, f"{kind.replace(' ', '_')}_{i}.png")
            img.save(path)
            kinds[kind].append(path)
    for kind, (w, h) in (("jpeg 512x512", (512, 512)), ("jpeg 1024x768", (1024, 768))):
        for i in range(max(count // 50, 4)):
            small = rng.integers(0, 256, (h // 16, w // 16, 3), dtype=np.uint8)
            big = np.kron(small, np.ones((16, 16, 1), np.uint8)) + rng.integers(0, 24, (h, w, 3), dtype=np.uint8)
            path = os.path.join(folder, f"{kind.replace(' ', '_')}_{i}.jpg")
            Image.fromarray(big).save(path, quality=90)
            kinds[kind].append(path)
    return kinds


def _decoders(kind: str) -> Dict[str, Callable[[str], object]]:
    import numpy as np
    import pyspng
    import simplejpeg
    from PIL import Image

    from nnconsole.engine.data.image_file import decode_image

    mode = "L" if "grey" in kind else "RGB"

    def pillow_raw(path: str) -> object:
        with Image.open(path) as img:
            return np.asarray(img.convert(mode))

    def reader(fast: bool) -> Callable[[str], object]:
        def decode(path: str) -> object:
            os.environ["NNCONSOLE_FAST_DECODE"] = "1" if fast else "0"
            return decode_image(path, mode)
        return decode

    out = {"Pillow (raw)": pillow_raw, "reader, Pillow": reader(False), "reader, fast": reader(True)}
    if kind.startswith("png"):
        out["pyspng (raw)"] = lambda p: pyspng.load(open(p, "rb").read())
    else:
        out["simplejpeg (raw)"] = lambda p: simplejpeg.decode_jpeg(open(p, "rb").read())
        def quarter(path: str) -> object:
            data = open(path, "rb").read()
            height, width, _, _ = simplejpeg.decode_jpeg_header(data)
            return simplejpeg.decode_jpeg(data, min_height=height // 4, min_width=width // 4, min_factor=4)
        out["simplejpeg 1/4 (DCT scaling, not used)"] = quarter
    return out


def main() -> int:
    args = parse_quick(__doc__.split("\n\n")[0]).parse_args()
    pin_threads()
    print(f"# decode_speed: {machine()}; load {os.getloadavg()[0]:.1f}")
    count, rounds = (200, 3) if args.quick else (1000, 7)
    folder = tempfile.mkdtemp(prefix="nnconsole-bench-decode-")
    rows, ratio_png = [], []
    try:
        for kind, paths in _images(folder, count).items():
            decoders = _decoders(kind)
            for decode in decoders.values():  # warm: imports, the fast path's one self-check, the page cache
                decode(paths[0])
            times: Dict[str, List[float]] = {name: [] for name in decoders}
            for _ in range(rounds):
                for name, decode in decoders.items():
                    started = time.perf_counter()
                    for path in paths:
                        decode(path)
                    times[name].append((time.perf_counter() - started) / len(paths))
            pillow = median(times["reader, Pillow"])
            for name in decoders:
                us = median(times[name]) * 1e6
                rows.append((kind, len(paths), name, us, pillow * 1e6 / us))
            if kind.startswith("png"):
                ratio_png.append(pillow / median(times["reader, fast"]))
    finally:
        os.environ.pop("NNCONSOLE_FAST_DECODE", None)
        shutil.rmtree(folder, ignore_errors=True)
    print(table(("images", "files", "decoder", "us per image (median)", "reader-with-Pillow / this"), rows,
                title=f"Decode time per image, median of {rounds} rounds (goal: reader fast / Pillow >= {GOAL} on "
                      "32x32 PNGs)"))
    met = min(ratio_png) >= GOAL
    print(f"\n32x32 PNG speed-up of the reader: {', '.join(f'{r:.2f}x' for r in ratio_png)} "
          f"({'met' if met else 'missed'})")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(run_main(main))
