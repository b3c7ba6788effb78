"""Reading an NNC dataset CSV: bytes, text, records, the header's variables, and errors naming line and column.

A dataset CSV has a header naming variables (``x:image,y:label``; the part before ``:`` is the
variable name, the rest a description). A column whose cells are paths to png/jpg/bmp files
(relative to the CSV's folder) is an image variable; numeric columns ``x__0,x__1,...`` (or
``x__0__0,x__0__1,...``) form one array variable ``x``; a single numeric column ``y`` has shape (1,).
Every problem is reported as a :class:`DatasetError` naming the file, CSV line, column and fix.
"""
from __future__ import annotations

import csv
import io
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from nnconsole.engine.data.regular_file import NotRegularFileError, read_regular
from nnconsole.engine.errors import NnconsoleError

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp")
_INDEXED = re.compile(r"(.+?)((?:__\d+)+)")

PathLike = Union[str, "os.PathLike[str]"]


class DatasetError(NnconsoleError, ValueError):
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
    try:
        return read_regular(path)
    except NotRegularFileError as exc:  # a FIFO or device would block the reader; a folder is no CSV
        raise DatasetError(f"{shown}: is {exc.strerror}; point the dataset at a .csv file", path=shown) from None
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
