"""NNC's matrix cells: a dataset CSV cell naming a per-sample ``.csv`` file of numbers (rows = time steps,
columns = features, no header), as nnabla's ``load_csv`` reads them; decoded into float32 ``(T, F)`` arrays,
reshaped to the network's Input shape when it holds as many values (nnabla reshapes the same way).

A sequence dataset is a main CSV such as ``x:sequence,y`` whose ``x`` cells are ``seq/0001.csv``; paths are
relative to the main CSV's folder and, as for images, must stay inside the project's folder when the
caller confines them. Every problem names the main CSV's line and column and, for a bad matrix, the
matrix file's row and column.
"""
from __future__ import annotations

import csv
import io
import math
import os
import stat
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np

from nnconsole.engine.data.csv_reader import _err, _Table, _Var
from nnconsole.engine.data.regular_file import NotRegularFileError, read_regular
from nnconsole.engine.data.decode import _inside  # the one inside-the-project-folder rule for data files

MATRIX_EXTENSION = ".csv"
MAX_MATRIX_BYTES = 64 * 1024 * 1024  # one sample's matrix; larger is certainly not a sequence sample


def looks_like_matrix(cell: str) -> bool:
    """Whether a dataset cell names a per-sample matrix file."""
    return os.path.splitext(cell.strip())[1].lower() == MATRIX_EXTENSION


def _matrix_path(table: _Table, var: _Var, line: int, cell: str, base: Path, root: Optional[str]) -> Path:
    rel = cell.strip()
    path = base / rel
    if not path.exists() and "\\" in rel:  # written on Windows by NNC
        path = base / rel.replace("\\", "/")
    if root is not None and not _inside(path, root):
        raise _err(table.shown, line, var.name, f"matrix path '{cell}' points outside the project's folder ({root}); "
                   "a project may only read files inside its folder: copy the file there, or allow it with "
                   "'--allow-outside-data' if you trust this project")
    try:
        st = path.stat()
    except OSError:
        raise _err(table.shown, line, var.name, f"matrix file '{cell}' not found (paths are relative to the CSV's "
                   f"folder, here '{base}'); fix the path or add the file") from None
    if not stat.S_ISREG(st.st_mode):
        raise _err(table.shown, line, var.name, f"'{cell}' is not a regular file; point the cell at a .csv matrix")
    if st.st_size > MAX_MATRIX_BYTES:
        raise _err(table.shown, line, var.name, f"matrix file '{cell}' is {st.st_size} bytes, more than the "
                   f"{MAX_MATRIX_BYTES // (1024 * 1024)} MiB one sample may hold")
    return path


def read_matrix(path: Path, where: str) -> np.ndarray:
    """One matrix file as float64 (rows, columns); ValueError naming ``where`` (file), row and column."""
    try:
        raw = read_regular(path, MAX_MATRIX_BYTES)  # the cell was checked; this open re-checks the file itself
    except NotRegularFileError as exc:
        raise ValueError(f"{where}: is {exc.strerror}; point the cell at a .csv matrix") from None
    if len(raw) > MAX_MATRIX_BYTES:
        raise ValueError(f"{where}: more than the {MAX_MATRIX_BYTES // (1024 * 1024)} MiB one sample may hold")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{where}: not UTF-8 text; save the matrix as a plain .csv of numbers") from None
    rows: List[List[float]] = []
    width = None
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not any(cell.strip() for cell in row):
            continue  # nnabla skips empty lines too
        values = []
        for column, cell in enumerate(row, start=1):
            try:
                value = float(cell)
            except ValueError:
                raise ValueError(f"{where} row {number}, column {column}: non-numeric value '{cell.strip()}'; a "
                                 "matrix holds numbers only (no header line)") from None
            if not math.isfinite(value):
                raise ValueError(f"{where} row {number}, column {column}: value '{cell.strip()}' is not a finite "
                                 "number")
            values.append(value)
        if width is None:
            width = len(values)
        elif len(values) != width:
            raise ValueError(f"{where} row {number}: {len(values)} values where row 1 has {width}; every row of a "
                             "matrix (one time step) needs the same number of columns (features)")
        rows.append(values)
    if not rows:
        raise ValueError(f"{where}: the matrix is empty; write one line of numbers per time step")
    return np.array(rows, dtype=np.float64)


def load_matrices(table: _Table, var: _Var, base: Path, expected: Optional[Tuple[int, ...]],
                  root: Optional[str] = None) -> np.ndarray:
    """Every sample's matrix of ``var`` as float32 (N, T, F), or (N, *expected) when the Input says so."""
    col = var.columns[0]
    first_shape = None
    first_line = None
    out: Optional[np.ndarray] = None
    for i, (row, line) in enumerate(zip(table.rows, table.lines)):
        cell = row[col].strip()
        if not cell:
            raise _err(table.shown, line, var.name, "empty cell; give the matrix file path (relative to the CSV's "
                       "folder)")
        if not looks_like_matrix(cell):
            raise _err(table.shown, line, var.name, f"'{cell}' is not a .csv matrix path but the column holds "
                       "matrices; use a .csv file path on every line")
        path = _matrix_path(table, var, line, cell, base, root)
        try:
            matrix = read_matrix(path, f"matrix '{cell}'")
        except ValueError as exc:
            raise _err(table.shown, line, var.name, str(exc)) from None
        if first_shape is None:
            first_shape, first_line = matrix.shape, line
            if expected is not None and math.prod(expected) != matrix.size:
                raise _err(table.shown, line, var.name, f"matrix '{cell}' is {matrix.shape[0]}x{matrix.shape[1]} "
                           f"(time x features, {matrix.size} values) but the network's Input '{var.name}' expects "
                           f"shape {list(expected)} ({math.prod(expected)} values); fix the Input layer's shape or "
                           "the matrices")
            sample = tuple(expected) if expected is not None else tuple(matrix.shape)
            out = np.empty((len(table.rows),) + sample, dtype=np.float32)
        elif matrix.shape != first_shape:
            raise _err(table.shown, line, var.name, f"matrix '{cell}' is {matrix.shape[0]}x{matrix.shape[1]} but "
                       f"the one on line {first_line} is {first_shape[0]}x{first_shape[1]}; every sample of a "
                       "variable needs the same number of time steps and features (pad or cut the sequences)")
        assert out is not None
        out[i] = matrix.astype(np.float32).reshape(out.shape[1:])
    assert out is not None
    return out
