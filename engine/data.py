"""NNC-format CSV datasets: parsing, image decoding, a decode cache, and per-worker batch order.

A dataset CSV has a header naming variables (``x:image,y:label``; the part before ``:`` is the
variable name, the rest a description). A column whose cells are paths to png/jpg/bmp files
(relative to the CSV's folder) is an image variable; numeric columns ``x__0,x__1,...`` (or
``x__0__0,x__0__1,...``) form one array variable ``x``; a single numeric column ``y`` has shape (1,).
Every problem is reported as a :class:`DatasetError` naming the file, CSV line, column and fix.
"""
from __future__ import annotations

import csv
import hashlib
import io
import logging
import math
import os
import re
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from nnconsole.engine.atomic import write_via

log = logging.getLogger(__name__)

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp")
CACHE_FOLDER = ".nnconsole-cache"
CACHE_VERSION = "nnconsole-dataset-cache-v1"
_GREY_MODES = {"1", "L", "LA", "La", "I", "I;16", "I;16B", "I;16L", "F"}
_INDEXED = re.compile(r"(.+?)((?:__\d+)+)")

PathLike = Union[str, "os.PathLike[str]"]


class DatasetError(ValueError):
    """A dataset CSV (or a file it references) cannot be used; the message says where and how to fix it.

    ``path`` is the CSV as the caller named it, ``line`` the 1-based CSV line (header = 1) or None.
    """

    def __init__(self, message: str, path: Optional[str] = None, line: Optional[int] = None,
                 variable: Optional[str] = None):
        super().__init__(message)
        self.path = path
        self.line = line
        self.variable = variable  # the variable the problem is about; None when it is the file as a whole


@dataclass
class Dataset:
    """A loaded dataset: one float32 array of shape (size, *shape) per variable, in header order.

    ``kinds`` says ``"image"`` or ``"numeric"`` per variable; ``sources`` keeps the CSV cells of
    image variables (the relative paths) so that evaluation tables can show them.
    """

    path: str
    variables: List[str]
    arrays: Dict[str, np.ndarray]
    size: int
    kinds: Dict[str, str] = field(default_factory=dict)
    sources: Dict[str, List[str]] = field(default_factory=dict)

    @property
    def shapes(self) -> Dict[str, Tuple[int, ...]]:
        """Per-variable sample shape, batch dimension excluded (NNC style)."""
        return {v: tuple(self.arrays[v].shape[1:]) for v in self.variables}


@dataclass
class CsvPreview:
    """What the GUI's dataset preview shows: raw header cells, variable names, row count, first rows."""

    path: str
    columns: List[str]
    variables: List[str]
    row_count: int
    rows: List[List[str]]


# --------------------------------------------------------------------------------------------
# Reading and parsing the CSV text
# --------------------------------------------------------------------------------------------

@dataclass
class _Var:
    """One header variable: a plain column, or indexed columns ``name__i[__j]`` forming an array."""

    name: str
    columns: List[int]  # CSV column indices, in array (C) order once finalised
    indices: List[Tuple[int, ...]]  # () for a plain column
    shape: Tuple[int, ...] = ()
    kind: str = "numeric"

    @property
    def plain(self) -> bool:
        return self.indices == [()]


@dataclass
class _Table:
    shown: str
    raw: bytes
    columns: List[str]
    names: List[str]
    rows: List[List[str]]
    lines: List[int]  # CSV line where each row starts
    variables: List[_Var]


def _err(shown: str, line: Optional[int], column: Optional[str], problem: str) -> DatasetError:
    where = shown
    if line is not None:
        where += f" line {line}"
    variable = None
    if column is not None:
        where += f", column {column}"
        name = column.split(" ", 1)[0]  # 'x__* (4 columns)' names the variable x
        indexed = _INDEXED.fullmatch(name)
        variable = indexed.group(1) if indexed else name.split("__", 1)[0]
    return DatasetError(f"{where}: {problem}", path=shown, line=line, variable=variable)


def _read_bytes(path: Path, shown: str) -> bytes:
    if path.exists() and not path.is_file() and not path.is_dir():  # a FIFO or device: reading would block
        raise DatasetError(f"{shown}: is not a regular file (a FIFO or device); point the dataset at a .csv file",
                           path=shown)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(
            f"{shown}: dataset CSV not found; check the dataset path (project dataset paths are "
            f"relative to the project file)", path=shown) from None
    except IsADirectoryError:
        raise DatasetError(f"{shown}: is a folder, not a dataset CSV file; point the dataset at a .csv file",
                           path=shown) from None
    except OSError as exc:
        raise DatasetError(f"{shown}: cannot read the dataset CSV ({exc.strerror}); check its permissions",
                           path=shown) from None


def _decode_text(raw: bytes, shown: str) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        byte = raw[exc.start: exc.start + 1].hex()
        raise _err(shown, line, None,
                   f"not valid UTF-8 (byte 0x{byte} at offset {exc.start}); save the CSV as UTF-8 "
                   f"(e.g. in a spreadsheet: 'CSV UTF-8')") from None
    if text.startswith("\ufeff"):  # byte-order mark written by some spreadsheet programs
        text = text[1:]
    return text


def _parse_records(text: str, shown: str) -> Tuple[List[List[str]], List[int]]:
    """All CSV records with the line each starts on; blank lines are skipped."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records: List[List[str]] = []
    lines: List[int] = []
    previous = 0
    while True:
        start = previous + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            if "NUL" in str(exc):
                raise _err(shown, start, None, "the line contains a NUL byte; a dataset CSV is text (was it "
                           "saved as UTF-16, or is it not a CSV file?); save it as UTF-8 CSV") from None
            raise _err(shown, start, None, f"malformed CSV ({exc}); check the quotes on this line") from None
        previous = reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        records.append(row)
        lines.append(start)
    return records, lines


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _looks_like_image(cell: str) -> bool:
    return os.path.splitext(cell.strip())[1].lower() in IMAGE_EXTENSIONS


def _parse_header(header: List[str], shown: str) -> Tuple[List[str], List[str], List[_Var]]:
    columns = [c.strip() for c in header]
    if all(_is_number(c) or _looks_like_image(c) for c in columns):
        raise _err(shown, 1, None,
                   "the first line looks like data, not a header; add a header line naming the variables, "
                   "e.g. 'x:image,y:label' or 'x__0,x__1,y'")
    names = [c.split(":", 1)[0].strip() for c in columns]
    by_name: Dict[str, _Var] = {}
    first_column: Dict[str, int] = {}
    order: List[_Var] = []
    seen_columns: Dict[str, int] = {}
    for i, name in enumerate(names):
        if not name:
            raise _err(shown, 1, f"{i + 1}", "the header cell has no variable name; name every column "
                       "(e.g. 'x:image' or 'y:label'), or delete the empty column")
        if name in seen_columns:
            raise _err(shown, 1, name, f"duplicated column '{name}' (columns {seen_columns[name] + 1} and "
                       f"{i + 1}); every header name must be unique, rename or delete one of them")
        seen_columns[name] = i
        match = _INDEXED.fullmatch(name)
        base, index = (match.group(1), tuple(int(p) for p in match.group(2).split("__")[1:])) if match \
            else (name, ())
        var = by_name.get(base)
        if var is None:
            var = _Var(base, [], [])
            by_name[base] = var
            first_column[base] = i
            order.append(var)
        elif (index == ()) or (var.indices and var.indices[0] == ()):
            raise _err(shown, 1, name, f"variable '{base}' is defined twice (columns {first_column[base] + 1} "
                       f"and {i + 1}); use either one column '{base}' or indexed columns '{base}__0,{base}__1,"
                       "...', with unique names")
        elif len(index) != len(var.indices[0]):
            raise _err(shown, 1, name, f"indexed columns of '{base}' mix {len(var.indices[0])}-D and "
                       f"{len(index)}-D indices; use the same number of '__i' parts on every '{base}' column")
        var.columns.append(i)
        var.indices.append(index)
    for var in order:
        if var.plain:
            var.shape = (1,)
            continue
        dims = len(var.indices[0])
        shape = tuple(max(ix[d] for ix in var.indices) + 1 for d in range(dims))
        if len(var.indices) != math.prod(shape):
            present = set(var.indices)
            missing = next(ix for ix in np.ndindex(*shape) if tuple(ix) not in present)
            label = var.name + "".join(f"__{k}" for k in missing)
            raise _err(shown, 1, label, f"column '{label}' is missing: indexed columns of '{var.name}' must "
                       f"cover every index of shape {list(shape)} without gaps")
        # Put the columns in C order of their indices.
        pairs = sorted(zip(var.indices, var.columns))
        var.indices = [p[0] for p in pairs]
        var.columns = [p[1] for p in pairs]
        var.shape = shape
    return columns, names, order


def _read_table(csv_path: PathLike) -> _Table:
    shown = os.fspath(csv_path)
    raw = _read_bytes(Path(csv_path), shown)
    text = _decode_text(raw, shown)
    records, lines = _parse_records(text, shown)
    if not records:
        raise _err(shown, 1, None, "the CSV is empty; it needs a header line naming the variables (e.g. "
                   "'x:image,y:label') followed by one line per sample")
    columns, names, variables = _parse_header(records[0], shown)
    rows, row_lines = records[1:], lines[1:]
    for row, line in zip(rows, row_lines):
        if len(row) != len(columns):
            raise _err(shown, line, None, f"the row has {len(row)} values but the header names {len(columns)} "
                       f"columns ({', '.join(names)}); every line needs exactly one value per column "
                       "(quote values that contain commas)")
    return _Table(shown, raw, columns, names, rows, row_lines, variables)


# --------------------------------------------------------------------------------------------
# Shapes, images and numbers
# --------------------------------------------------------------------------------------------

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
    """Decode one image file with Pillow into a uint8 array, (H, W) for mode 'L', (H, W, 3) for 'RGB'."""
    from PIL import Image

    with Image.open(path) as img:
        img.load()
        if img.mode != mode:
            img = img.convert(mode)
        return np.asarray(img, dtype=np.uint8)


def _probe_mode(path: str) -> str:
    """The Pillow mode ('L' or 'RGB') to decode with when the network does not say (reads the header only)."""
    from PIL import Image

    with Image.open(path) as img:
        return "L" if img.mode in _GREY_MODES else "RGB"


def _resolve(base: Path, cell: str) -> Path:
    rel = cell.strip()
    candidate = base / rel
    if not candidate.exists() and "\\" in rel:  # CSVs written on Windows by NNC
        alt = base / rel.replace("\\", "/")
        if alt.exists():
            return alt
    return candidate


def _inside(path: Path, root: str) -> bool:
    full = os.path.normpath(os.path.abspath(os.fspath(path)))
    try:
        return os.path.commonpath([root, full]) == root
    except ValueError:
        return False


def _image_files(table: _Table, var: _Var, base: Path, root: Optional[str] = None
                 ) -> List[Tuple[Path, os.stat_result]]:
    col = var.columns[0]
    out = []
    for row, line in zip(table.rows, table.lines):
        cell = row[col].strip()
        if not cell:
            raise _err(table.shown, line, var.name, "empty cell; give the image file path (relative to the CSV's "
                       "folder)")
        if not _looks_like_image(cell):
            raise _err(table.shown, line, var.name, f"'{cell}' is not an image path but the column holds images; "
                       f"use a {'/'.join(e[1:] for e in IMAGE_EXTENSIONS)} file path on every line")
        path = _resolve(base, cell)
        if root is not None and not _inside(path, root):
            raise _err(table.shown, line, var.name, f"image path '{cell}' points outside the project's folder "
                       f"({root}); a project may only read files inside its folder: copy the images there, or "
                       "allow it with '--allow-outside-data' if you trust this project")
        try:
            st = path.stat()
        except OSError:
            raise _err(table.shown, line, var.name, f"image file '{cell}' not found (paths are relative to the "
                       f"CSV's folder, here '{base}'); fix the path or add the file") from None
        if not stat.S_ISREG(st.st_mode):  # a folder, FIFO or device: decoding would fail or hang
            raise _err(table.shown, line, var.name, f"'{cell}' is not a regular file; point the cell at an "
                       "image file")
        out.append((path, st))
    return out


def _load_images(table: _Table, var: _Var, files: List[Tuple[Path, os.stat_result]],
                 target: Optional[Tuple[int, int, int]], normalize: bool) -> np.ndarray:
    col = var.columns[0]
    if target is not None:
        mode = "RGB" if target[0] == 3 else "L"
    else:
        try:
            mode = _probe_mode(str(files[0][0]))
        except Exception as exc:  # noqa: BLE001 - any decode failure is a dataset error
            raise _err(table.shown, table.lines[0], var.name,
                       f"cannot decode image file '{table.rows[0][col].strip()}' ({exc}); re-save it as "
                       "PNG, JPEG or BMP") from None
    want_hw = (target[1], target[2]) if target is not None else None
    out: Optional[np.ndarray] = None
    for i, ((path, _), row, line) in enumerate(zip(files, table.rows, table.lines)):
        cell = row[col].strip()
        try:
            pixels = _decode_image(str(path), mode)
        except Exception as exc:  # noqa: BLE001
            raise _err(table.shown, line, var.name, f"cannot decode image file '{cell}' ({exc}); re-save it as "
                       "PNG, JPEG or BMP") from None
        hw = tuple(pixels.shape[:2])
        if want_hw is None:
            want_hw = hw
        if hw != want_hw:
            if target is not None:
                fix = (f"the network's Input '{var.name}' expects {want_hw[0]}x{want_hw[1]}; resize the images or "
                       "change the Input layer's shape")
            else:
                fix = (f"the first image (line {table.lines[0]}) is {want_hw[0]}x{want_hw[1]}; all images of a "
                       "variable must have the same size")
            raise _err(table.shown, line, var.name, f"image '{cell}' is {hw[0]}x{hw[1]} (HxW) but {fix}")
        if out is None:
            channels = 3 if mode == "RGB" else 1
            sample = (want_hw[0], want_hw[1]) if (target is not None and target[0] == 0) else \
                (channels, want_hw[0], want_hw[1])
            out = np.empty((len(files),) + sample, dtype=np.float32)
        chw = pixels.transpose(2, 0, 1) if pixels.ndim == 3 else pixels
        out[i] = chw.reshape(out.shape[1:])
    assert out is not None
    if normalize:
        out /= 255.0
    return out


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
    cells = [[row[c] for c in var.columns] for row in table.rows]
    try:
        values = np.array(cells, dtype=str).astype(np.float64) if n else np.empty((0, count))
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


# --------------------------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------------------------

def _cache_key(table: _Table, files: Sequence[Tuple[Path, os.stat_result]], normalize: bool,
               expected: Mapping[str, Tuple[int, ...]]) -> str:
    h = hashlib.sha256()
    h.update(CACHE_VERSION.encode())
    h.update(hashlib.sha256(table.raw).digest())
    for _, st in files:  # in CSV order; the file names are part of the CSV bytes above
        h.update(f"{st.st_mtime_ns}\0{st.st_size}\n".encode())
    h.update(f"normalize={bool(normalize)}\n".encode())
    h.update(repr(sorted((k, tuple(v)) for k, v in expected.items())).encode())
    return h.hexdigest()


def _cache_dirs(csv_path: Path, cache_dir: Optional[PathLike]) -> List[Path]:
    if cache_dir is not None:
        return [Path(cache_dir)]
    return [csv_path.resolve().parent / CACHE_FOLDER, Path.home() / ".cache" / "nnconsole" / "datasets"]


def _cache_prefix(csv_path: Path) -> str:
    tag = hashlib.sha256(str(csv_path.resolve()).encode()).hexdigest()[:8]
    return f"{csv_path.stem}-{tag}-"


def _cache_read(dirs: List[Path], name: str, variables: List[str], n: int) -> Optional[Dict[str, np.ndarray]]:
    for d in dirs:
        path = d / name
        if not path.is_file():
            continue
        try:
            with np.load(path, allow_pickle=False) as npz:
                stored = [str(v) for v in npz["__variables__"]]
                if stored != variables:
                    continue
                arrays = {v: npz[f"v{i}"] for i, v in enumerate(variables)}
        except Exception as exc:  # noqa: BLE001 - a broken cache file is rebuilt, never fatal
            log.warning("ignoring unreadable dataset cache %s (%s)", path, exc)
            continue
        if all(a.shape[0] == n and a.dtype == np.float32 for a in arrays.values()):
            return arrays
    return None


def _cache_write(dirs: List[Path], prefix: str, name: str, variables: List[str],
                 arrays: Dict[str, np.ndarray]) -> Optional[Path]:
    payload = {f"v{i}": arrays[v] for i, v in enumerate(variables)}
    payload["__variables__"] = np.array(variables, dtype=str)
    for d in dirs:
        try:
            d.mkdir(parents=True, exist_ok=True)
            write_via(str(d / name), lambda tmp: np.savez(tmp, **payload))
        except OSError as exc:
            log.info("dataset cache folder %s not writable (%s); trying the next one", d, exc)
            continue
        for old in d.glob(prefix + "*.npz"):  # stale entries of the same CSV
            if old.name != name:
                try:
                    old.unlink()
                except OSError:
                    pass
        return d / name
    log.warning("no writable dataset cache folder among %s; images will be decoded again next time",
                ", ".join(map(str, dirs)))
    return None


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------

def _prepare(table: _Table, expected: Dict[str, Tuple[int, ...]], base: Path, root: Optional[str] = None,
             label_classes: Optional[Mapping[str, int]] = None) -> Tuple[
        Dict[str, List[Tuple[Path, os.stat_result]]], Dict[str, Optional[Tuple[int, int, int]]], Dict[str, np.ndarray]]:
    """Every check that needs no image decoding: rows, variables, image files present, numbers.

    Returns (image files per image variable, image target per image variable, numeric arrays).
    """
    shown = table.shown
    if not table.rows:
        raise _err(shown, 2, None, "the CSV has a header but no data rows; add one line per sample")
    by_name = {v.name: v for v in table.variables}
    for name in expected:
        if name not in by_name:
            raise _err(shown, 1, None, f"the header has no variable '{name}' (the network's Input layer '{name}' "
                       f"needs it; the header names {', '.join(by_name)}); add a '{name}' column or change the "
                       "Input layer's variable")
    files: Dict[str, List[Tuple[Path, os.stat_result]]] = {}
    targets: Dict[str, Optional[Tuple[int, int, int]]] = {}
    for var in table.variables:
        first = next((r[var.columns[0]] for r in table.rows if r[var.columns[0]].strip()), "")
        if var.plain and _looks_like_image(first):
            var.kind = "image"
            targets[var.name] = _image_target(var, expected.get(var.name), shown)
            files[var.name] = _image_files(table, var, base, root)
    # Numeric columns are parsed every time (cheap) so their errors never hide behind a cache hit.
    numeric = {v.name: _load_numbers(table, v, expected.get(v.name)) for v in table.variables
               if v.kind == "numeric"}
    for var in table.variables:
        if label_classes and var.name in label_classes:
            _check_labels(table, var, numeric.get(var.name), int(label_classes[var.name]))
    return files, targets, numeric


def _check_labels(table: _Table, var: _Var, values: Optional[np.ndarray], classes: int) -> None:
    """Every value of a class-label variable is a class index (nnconsole.engine.labels), else a located error."""
    from nnconsole.engine.labels import first_bad_label, label_rule_text

    if values is None:
        raise _err(table.shown, 1, var.name, f"'{var.name}' holds file paths, but the network reads it as class "
                   f"labels; {label_rule_text(classes)}")
    bad = first_bad_label(values, classes)
    if bad is not None:
        sample, index, problem = bad
        column = var.columns[index]
        raise _err(table.shown, table.lines[sample], table.names[column],
                   f"class label '{table.rows[sample][column].strip()}' {problem}: {label_rule_text(classes)}")


def check_dataset(csv_path: PathLike, expected_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                  confine_to: Optional[PathLike] = None, label_classes: Optional[Mapping[str, int]] = None
                  ) -> CsvPreview:
    """Check a dataset as ``load_dataset`` would, except decoding images; returns a preview without rows.

    Reads every row and number and checks that every image file exists, so ``nnconsole validate``
    and ``train`` report a bad dataset (file, line, column, fix) before any worker starts. With
    ``confine_to`` (the project's folder) image paths that lead outside it are refused;
    ``label_classes`` as for ``load_dataset``. Raises :class:`DatasetError`.
    """
    table = _read_table(csv_path)
    expected = {str(k): tuple(int(s) for s in v) for k, v in (expected_shapes or {}).items()}
    root = os.path.normpath(os.path.abspath(os.fspath(confine_to))) if confine_to is not None else None
    _prepare(table, expected, Path(csv_path).parent, root, label_classes)
    return CsvPreview(table.shown, table.columns, [v.name for v in table.variables], len(table.rows), [])


def load_dataset(csv_path: PathLike, expected_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                 normalize: bool = True, cache: bool = True, cache_dir: Optional[PathLike] = None,
                 label_classes: Optional[Mapping[str, int]] = None) -> Dataset:
    """Load an NNC dataset CSV into float32 arrays, checking them against the network's Input shapes.

    ``expected_shapes`` maps variable name -> sample shape from the Input layers (batch dim excluded);
    each must exist in the CSV and match (image H x W, vector length). Images become (C, H, W), grey
    or RGB as the expected channel count says, divided by 255 when ``normalize``. With ``cache`` the
    decoded arrays of image datasets are kept in ``<csv folder>/.nnconsole-cache/`` (or
    ``~/.cache/nnconsole/datasets/``, or ``cache_dir``) keyed by the CSV bytes, the referenced files'
    mtimes and sizes, ``normalize`` and the expected shapes; a hit decodes nothing.
    ``label_classes`` maps each class-label variable to its class count (``nnconsole.engine.labels``): every
    value must be a whole number from 0 to count - 1. Raises :class:`DatasetError` on any problem.
    """
    table = _read_table(csv_path)
    shown = table.shown
    expected = {str(k): tuple(int(s) for s in v) for k, v in (expected_shapes or {}).items()}
    files, targets, numeric = _prepare(table, expected, Path(csv_path).parent, label_classes=label_classes)
    variables = [v.name for v in table.variables]
    kinds = {v.name: v.kind for v in table.variables}
    sources = {v.name: [row[v.columns[0]].strip() for row in table.rows] for v in table.variables
               if v.kind == "image"}

    use_cache = cache and bool(files)
    name = prefix = ""
    dirs: List[Path] = []
    if use_cache:
        all_files = [f for v in variables if v in files for f in files[v]]
        prefix = _cache_prefix(Path(csv_path))
        name = prefix + _cache_key(table, all_files, normalize, expected)[:32] + ".npz"
        dirs = _cache_dirs(Path(csv_path), cache_dir)
        hit = _cache_read(dirs, name, variables, len(table.rows))
        if hit is not None:
            return Dataset(shown, variables, hit, len(table.rows), kinds, sources)

    arrays: Dict[str, np.ndarray] = {}
    for var in table.variables:
        if var.kind == "image":
            arrays[var.name] = _load_images(table, var, files[var.name], targets[var.name], normalize)
        else:
            arrays[var.name] = numeric[var.name]
    if use_cache:
        _cache_write(dirs, prefix, name, variables, arrays)
    return Dataset(shown, variables, arrays, len(table.rows), kinds, sources)


def peek_csv(path: PathLike, max_rows: int = 20) -> CsvPreview:
    """Header, variable names, row count and the first ``max_rows`` rows as strings; decodes no image."""
    table = _read_table(path)
    return CsvPreview(table.shown, table.columns, [v.name for v in table.variables], len(table.rows),
                      [list(r) for r in table.rows[: max(0, int(max_rows))]])


def class_histogram(dataset: Dataset, variable: str) -> Dict[int, int]:
    """Sample count per integer class of a label variable (one value per sample), sorted by class."""
    if variable not in dataset.arrays:
        raise KeyError(f"{dataset.path}: no variable '{variable}' (variables: {', '.join(dataset.variables)})")
    values = dataset.arrays[variable].reshape(dataset.size, -1)
    if values.shape[1] != 1:
        raise ValueError(f"{dataset.path}: variable '{variable}' has {values.shape[1]} values per sample; "
                         "a class histogram needs one label per sample")
    labels = values[:, 0]
    if not np.all(labels == np.round(labels)):
        raise ValueError(f"{dataset.path}: variable '{variable}' holds non-integer values; it is not a class "
                         "label")
    counts = Counter(int(v) for v in labels)
    return dict(sorted(counts.items()))


def epoch_order(size: int, seed: int, epoch: int, shuffle: bool = True) -> np.ndarray:
    """The sample order of one epoch: a permutation seeded by (seed, epoch), the same on every worker.

    Without ``shuffle`` it is ``arange(size)``.
    """
    if size < 0:
        raise ValueError(f"dataset size must be >= 0, got {size}")
    if not shuffle:
        return np.arange(size, dtype=np.int64)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(epoch)])))
    return rng.permutation(size).astype(np.int64)


def _check_rank(batch_size: int, rank: int, world_size: int) -> None:
    if batch_size < 1:
        raise ValueError(f"batch size must be >= 1, got {batch_size}")
    if world_size < 1:
        raise ValueError(f"world size must be >= 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank}")


def worker_batches(order: np.ndarray, batch_size: int, rank: int, world_size: int) -> List[np.ndarray]:
    """This worker's index arrays, one per iteration, for an epoch whose sample order is ``order``.

    Iteration i covers the global slice [i*B*N, (i+1)*B*N) of the order and worker r takes its r-th
    block of B. There are ceil(size / (B*N)) iterations; the last global batch is completed by
    wrapping around to the start of the order, so every batch is full. Hence across workers every
    sample is seen at least once per epoch, and exactly once when size is divisible by B*N.
    """
    _check_rank(batch_size, rank, world_size)
    order = np.asarray(order, dtype=np.int64)
    size = len(order)
    if size == 0:
        return []
    step = batch_size * world_size
    iterations = -(-size // step)
    extended = np.resize(order, iterations * step)  # np.resize repeats cyclically: the wrap-around
    return [extended[i * step + rank * batch_size: i * step + (rank + 1) * batch_size].copy()
            for i in range(iterations)]


def validation_batches(size: int, batch_size: int, rank: int, world_size: int) -> List[Tuple[np.ndarray, int]]:
    """This worker's validation batches as (indices, valid_rows), for exact metrics across workers.

    Worker r gets a disjoint contiguous share of [0, size) (shares differ in length by at most one).
    Each batch is padded to ``batch_size`` by repeating an index; only the first ``valid_rows`` rows
    count. Every worker gets the same number of batches (some may have 0 valid rows) so collective
    calls stay in step, and the valid rows summed over workers equal ``size`` exactly.
    """
    _check_rank(batch_size, rank, world_size)
    if size <= 0:
        return []
    base, extra = divmod(size, world_size)
    start = rank * base + min(rank, extra)
    count = base + (1 if rank < extra else 0)
    share = np.arange(start, start + count, dtype=np.int64)
    longest = base + (1 if extra else 0)
    n_batches = -(-longest // batch_size)
    pad_index = int(share[-1]) if count else 0
    out: List[Tuple[np.ndarray, int]] = []
    for b in range(n_batches):
        chunk = share[b * batch_size:(b + 1) * batch_size]
        valid = len(chunk)
        if valid < batch_size:
            chunk = np.concatenate([chunk, np.full(batch_size - valid, pad_index, dtype=np.int64)])
        out.append((chunk, valid))
    return out
