"""Decoding a dataset's variables: image files (Pillow) into uint8 samples, numeric columns into float32,
checked against the shapes the network's Input layers declare."""
from __future__ import annotations

import math
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np

from nnconsole.engine.data.csv_reader import IMAGE_EXTENSIONS, DatasetError, _err, _looks_like_image, _Table, _Var
from nnconsole.engine.data.image_file import decode_image, probe_mode
from nnconsole.engine.test_seams import seam_int

def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def _image_target(var: _Var, expected: Optional[Tuple[int, ...]], shown: str) -> Optional[Tuple[int, int, int]]:
    """(channels, H, W) required by the network for an image variable, or None when not constrained.

    channels is 0 for a 2-D expected shape [H, W] (grey, no channel axis).
    """
    if expected is None:
        return None
    if len(expected) == 3 and expected[0] in (1, 3):
        return int(expected[0]), int(expected[1]), int(expected[2])
    if len(expected) == 2:
        return 0, int(expected[0]), int(expected[1])
    raise _err(shown, 1, var.name, f"'{var.name}' holds images but the network's Input '{var.name}' has shape "
               f"{_shape_text(expected)}; an image variable needs shape [1, H, W] (grey), [3, H, W] (colour) "
               "or [H, W]; change the Input layer's shape")


def _decode_image(path: str, mode: str) -> np.ndarray:
    """Decode one image file into a uint8 array, (H, W) for mode 'L', (H, W, 3) for 'RGB' (``image_file``: the
    supported formats only, regular files only, 16-bit grey scaled)."""
    return decode_image(path, mode)


def _probe_mode(path: str) -> str:
    """The Pillow mode ('L' or 'RGB') to decode with when the network does not say (reads the header only)."""
    return probe_mode(path)


def _inside(path: str, root: str) -> bool:
    full = os.path.normpath(os.path.abspath(os.fspath(path)))
    try:
        return os.path.commonpath([root, full]) == root
    except ValueError:
        return False


def _stat_or_none(path: str) -> Optional[os.stat_result]:
    try:
        return os.stat(path)
    except OSError:
        return None


FileStamp = Tuple[int, int]  # (mtime in ns, size): what the cache key reads of a file (an os.stat_result is 630 B)


def image_cell(shown: str, line: int, var: str, cell: str, folder: str, root: Optional[str] = None
               ) -> Tuple[str, FileStamp]:
    """(path, (mtime_ns, size)) of the image file a stripped CSV ``cell`` names, checked to exist, to be a regular
    file and (with ``root``) to lie inside it; else the located error for CSV ``line``."""
    path, st = image_stat(shown, line, var, cell, folder, root)
    return path, (st.st_mtime_ns, st.st_size)


def image_stat(shown: str, line: int, var: str, cell: str, folder: str, root: Optional[str] = None
               ) -> Tuple[str, os.stat_result]:
    """``image_cell``'s checks, returning the file's whole stat (its device and inode tell which file a spelling
    names: the dataset index's one stat per distinct spelling)."""
    if not cell:
        raise _err(shown, line, var, "empty cell; give the image file path (relative to the CSV's folder)")
    if not _looks_like_image(cell):
        raise _err(shown, line, var, f"'{cell}' is not an image path but the column holds images; "
                   f"use a {'/'.join(e[1:] for e in IMAGE_EXTENSIONS)} file path on every line")
    path, st = resolve_image(folder, cell)
    if root is not None and not _inside(path, root):
        raise _err(shown, line, var, f"image path '{cell}' points outside the project's folder "
                   f"({root}); a project may only read files inside its folder: copy the images there, or "
                   "allow it with '--allow-outside-data' if you trust this project")
    if st is None:
        raise _err(shown, line, var, f"image file '{cell}' not found (paths are relative to the "
                   f"CSV's folder, here '{folder}'); fix the path or add the file")
    if not stat.S_ISREG(st.st_mode):  # a folder, FIFO or device: decoding would fail or hang
        raise _err(shown, line, var, f"'{cell}' is not a regular file; point the cell at an image file")
    return path, st


def resolve_image(folder: str, cell: str) -> Tuple[str, Optional[os.stat_result]]:
    """The path a stripped image cell names (relative to the CSV's ``folder``; a Windows path as NNC writes it
    tried with '/' when the cell as written is missing) and its stat, None when it is missing."""
    path = os.path.join(folder, cell)
    st = _stat_or_none(path)
    if st is None and "\\" in cell:  # CSVs written on Windows by NNC
        alt = os.path.join(folder, cell.replace("\\", "/"))
        st = _stat_or_none(alt)
        path = alt if st is not None else path
    return path, st


def _image_files(table: _Table, var: _Var, base: Path, root: Optional[str] = None
                 ) -> List[Tuple[str, FileStamp]]:
    """(path, (mtime_ns, size)) of every image of ``var``, checked to exist (one stat each)."""
    col = var.columns[0]
    folder = os.fspath(base)
    return [image_cell(table.shown, line, var.name, row[col].strip(), folder, root)
            for row, line in zip(table.rows, table.lines)]


@dataclass(frozen=True)
class ImageLayout:
    """How an image variable's files become uint8 samples: Pillow mode, size, and the sample's axes."""

    mode: str  # "L" (grey) or "RGB"
    height: int
    width: int
    channel_axis: bool  # False for a network Input of shape [H, W] (grey, no channel axis)

    @property
    def sample_shape(self) -> Tuple[int, ...]:
        if not self.channel_axis:
            return self.height, self.width
        return (3 if self.mode == "RGB" else 1), self.height, self.width


def decode_problem(shown: str, line: int, var: str, cell: str, reason: str) -> DatasetError:
    return _err(shown, line, var, f"cannot decode image file '{cell}' ({reason}); re-save it as PNG, JPEG or BMP")


def image_layout(shown: str, var: str, target: Optional[Tuple[int, int, int]], first_path: str, first_line: int,
                 first_cell: str) -> ImageLayout:
    """The layout every image of ``var`` must have: the network's target, else the first image's mode and size."""
    if target is not None:
        return ImageLayout("RGB" if target[0] == 3 else "L", target[1], target[2], target[0] != 0)
    try:
        mode = _probe_mode(first_path)
        height, width = _decode_image(first_path, mode).shape[:2]
    except Exception as exc:  # noqa: BLE001 - any decode failure is a dataset error
        raise decode_problem(shown, first_line, var, first_cell, str(exc)) from None
    return ImageLayout(mode, int(height), int(width), True)


def decode_images(paths: Sequence[str], layout: ImageLayout, out: np.ndarray) -> Optional[Tuple[int, str, str]]:
    """Decode ``paths`` into the uint8 rows of ``out`` (one sample each, in ``layout``); stops at the first bad file.

    Returns None when all were decoded, else (position, "decode" or "size", reason or "HxW"), so that
    a pool worker can report the problem as data and the caller name the CSV line.
    """
    delay = seam_int("decode_delay_ms")  # tests only (nnconsole.engine.test_seams): a build slow enough to stop
    for i, path in enumerate(paths):
        if delay:
            time.sleep(delay / 1000.0)
        try:
            pixels = _decode_image(path, layout.mode)
        except Exception as exc:  # noqa: BLE001
            return i, "decode", str(exc)
        if pixels.shape[:2] != (layout.height, layout.width):
            return i, "size", f"{pixels.shape[0]}x{pixels.shape[1]}"
        chw = pixels.transpose(2, 0, 1) if pixels.ndim == 3 else pixels
        out[i] = chw.reshape(out.shape[1:])
    return None


def image_problem(shown: str, var: str, layout: ImageLayout, target: Optional[Tuple[int, int, int]],
                  first_line: int, line: int, cell: str, kind: str, reason: str) -> DatasetError:
    """The located error for a failure ``decode_images`` reported for the image ``cell`` named on CSV ``line``
    (``first_line``: the line of the variable's first image)."""
    if kind == "decode":
        return decode_problem(shown, line, var, cell, reason)
    if target is not None:
        fix = (f"the network's Input '{var}' expects {layout.height}x{layout.width}; resize the images or "
               "change the Input layer's shape")
    else:
        fix = (f"the first image (line {first_line}) is {layout.height}x{layout.width}; all images of a "
               "variable must have the same size")
    return _err(shown, line, var, f"image '{cell}' is {reason} (HxW) but {fix}")


def _load_numbers(table: _Table, var: _Var, expected: Optional[Tuple[int, ...]]) -> np.ndarray:
    n = len(table.rows)
    count = len(var.columns)
    shape = var.shape
    if expected is not None:
        if math.prod(expected) != count:
            cols = var.name if var.plain else f"{var.name}__* ({count} columns)"
            raise _err(table.shown, 1, cols, f"'{var.name}' has {count} value(s) per row (shape "
                       f"{_shape_text(shape)}) but the network's Input '{var.name}' expects shape "
                       f"{_shape_text(expected)} ({math.prod(expected)} values); fix the Input layer's shape or "
                       "the CSV columns")
        shape = tuple(int(s) for s in expected)
    col = var.columns[0]
    cells = [row[col] for row in table.rows] if count == 1 else [[row[c] for c in var.columns] for row in table.rows]
    try:
        values = np.array(cells, dtype=str).astype(np.float64).reshape(n, count) if n else np.empty((0, count))
        ok = bool(np.isfinite(values).all())
    except ValueError:
        ok = False
    if not ok:  # find the first bad cell to name it
        for row, line in zip(table.rows, table.lines):
            for c in var.columns:
                cell = row[c].strip()
                label = table.names[c]
                if not cell:
                    raise _err(table.shown, line, label, "empty value; every numeric cell needs a number")
                try:
                    value = float(cell)
                except ValueError:
                    hint = (" (a file path: only png/jpg/bmp images are supported)"
                            if os.path.splitext(cell)[1] else "")
                    raise _err(table.shown, line, label, f"non-numeric value '{cell}'{hint}; the column holds "
                               "numbers, write a number such as 0, 1.5 or -2e-3") from None
                if not math.isfinite(value):
                    raise _err(table.shown, line, label, f"value '{cell}' is not a finite number; replace it "
                               "with a real number")
        raise _err(table.shown, None, var.name, "cannot read the numbers")  # pragma: no cover
    return values.astype(np.float32).reshape((n,) + shape)


