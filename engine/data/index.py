"""The dataset index (issue 31): a dataset CSV parsed once, in chunks, into columns of numbers that every rank
of a host memory-maps from the cache entry instead of holding rows as Python objects.

Per row it keeps 4 bytes per image variable (``row_files``: the row's index into that variable's table of
distinct files, uint32) and the float32 values of each numeric variable (4 bytes for a class label): 8 bytes
a row for an ``x:image,y:label`` CSV. Per distinct image file it keeps the cell as written (UTF-8 bytes, for
the evaluation table and error messages), the CSV line that first names it, and its (mtime, size) when
indexed, which a warm start compares against one ``stat`` per distinct file (not per row).

A file is told by what it is, not how it is spelled: ``a.png``, ``./a.png``, ``sub/../a.png``, an absolute path
and a symlink to it are one file (the device and inode of the one stat each distinct spelling gets anyway, so
matching costs no system call: ``realpath`` would cost an ``lstat`` per path component). A second spelling is
kept as an alias of its file (its cell and file number) and stat'd on a warm start too, since a link can be
pointed elsewhere without the CSV changing; most CSVs spell each file one way and have none.

Every check of ``check_dataset``/``load_dataset`` is made while streaming (``csv_stream``): the same messages
naming file, line, column and fix. Paths become Python strings only where a person or a decoder needs them
(``FileTable.cell``, ``FilePaths``).
"""
from __future__ import annotations

import array
import contextlib
import gc
import threading
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from nnconsole.engine.data.csv_reader import PathLike, _err, _looks_like_image, _Table, _Var
from nnconsole.engine.data.csv_stream import CHUNK_ROWS, CsvStream
from nnconsole.engine.data.decode import _image_target, _load_numbers, image_stat, resolve_image
from nnconsole.engine.data.labels import first_bad_label, label_rule_text
from nnconsole.engine.data.matrix import load_matrices, looks_like_matrix

Target = Optional[Tuple[int, int, int]]


@dataclass
class FileTable:
    """The distinct image files of one image variable, in order of first appearance in the CSV."""

    cells: np.ndarray  # uint8: each file's stripped CSV cell, UTF-8, concatenated
    offsets: np.ndarray  # int64 (n + 1,): where each cell starts in ``cells``
    stamps: np.ndarray  # int64 (n, 2): (mtime_ns, size) when indexed
    lines: np.ndarray  # int64 (n,): the CSV line that first names the file
    # uint32 (m,): the file each further spelling names; their cells follow the files' in ``cells``
    aliases: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))

    def __len__(self) -> int:
        return int(len(self.lines))

    def cell(self, i: int) -> str:
        """The CSV cell naming file ``i`` where it first appears, as written (stripped); ``len(self) + j``: the
        cell of alias ``j``."""
        return bytes(self.cells[int(self.offsets[i]):int(self.offsets[i + 1])]).decode("utf-8")

    def spelling_files(self) -> Iterator[Tuple[int, int]]:
        """(spelling, file) for every distinct spelling: each file's first, then the aliases."""
        n = len(self)
        yield from ((i, i) for i in range(n))
        yield from ((n + j, int(f)) for j, f in enumerate(self.aliases))

    def paths(self, folder: str) -> "FilePaths":
        return FilePaths(self, folder)


class FilePaths(Sequence[str]):
    """The files of a FileTable as paths (relative to the CSV's ``folder``), made when read: a build's decode
    tasks take a slice at a time, so no list of every path is ever held."""

    def __init__(self, table: FileTable, folder: str) -> None:
        self._table = table
        self._folder = folder

    def __len__(self) -> int:
        return len(self._table)

    def __getitem__(self, i: Union[int, slice]):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return resolve_image(self._folder, self._table.cell(i))[0]


@dataclass
class DatasetIndex:
    """A dataset CSV as columns: what ``load_dataset`` needs besides the pixels."""

    shown: str  # the CSV as the caller named it (error messages)
    columns: List[str]
    variables: List[str]
    kinds: Dict[str, str]  # "image", "numeric" or "matrix"
    size: int
    numbers: Dict[str, np.ndarray] = field(default_factory=dict)  # float32 (size, *shape), numeric and matrix
    row_files: Dict[str, np.ndarray] = field(default_factory=dict)  # uint32 (size,) per image variable
    # per image variable (row_files index it) and per matrix variable (its files' stamps for the warm check)
    files: Dict[str, FileTable] = field(default_factory=dict)
    targets: Dict[str, Target] = field(default_factory=dict)  # the network's (C, H, W) per image variable

    @property
    def image_variables(self) -> List[str]:
        return [v for v in self.variables if self.kinds[v] == "image"]


def check_labels(table: _Table, var: _Var, values: Optional[np.ndarray], classes: int) -> None:
    """Every value of a class-label variable is a class index (nnconsole.engine.data.labels), else a located error."""
    if values is None:
        raise _err(table.shown, 1, var.name, f"'{var.name}' holds file paths, but the network reads it as class "
                   f"labels; {label_rule_text(classes)}")
    bad = first_bad_label(values, classes)
    if bad is not None:
        sample, index, problem = bad
        column = var.columns[index]
        raise _err(table.shown, table.lines[sample], table.names[column],
                   f"class label '{table.rows[sample][column].strip()}' {problem}: {label_rule_text(classes)}")


class _Builder:
    """The columns of a dataset as its chunks stream by, every check made on the way."""

    def __init__(self, stream: CsvStream, expected: Mapping[str, Tuple[int, ...]], root: Optional[str],
                 label_classes: Optional[Mapping[str, int]], first: List[List[str]]) -> None:
        self.stream, self.shown, self.expected, self.root = stream, stream.shown, expected, root
        self.folder = os.fspath(stream.path.parent)
        self.label_classes = dict(label_classes or {})
        by_name = {v.name: v for v in stream.variables}
        for name in expected:
            if name not in by_name:
                raise _err(self.shown, 1, None, f"the header has no variable '{name}' (the network's Input layer "
                           f"'{name}' needs it; the header names {', '.join(by_name)}); add a '{name}' column or "
                           "change the Input layer's variable")
        self.targets: Dict[str, Target] = {}
        for var in stream.variables:
            cell = next((r[var.columns[0]] for r in first if r[var.columns[0]].strip()), "")
            if var.plain and _looks_like_image(cell):
                var.kind = "image"
                self.targets[var.name] = _image_target(var, expected.get(var.name), self.shown)
            elif var.plain and looks_like_matrix(cell):  # NNC's sequences: a .csv matrix per sample
                var.kind = "matrix"
        # per distinct spelling, in order of first appearance (files are found among them at the end: _files_of)
        self.ids: Dict[str, Dict[str, int]] = {v.name: {} for v in self._images}
        self.cells: Dict[str, List[bytes]] = {v.name: [] for v in self._images}
        self.stamps: Dict[str, List[Tuple[int, int]]] = {v.name: [] for v in self._images}
        self.lines: Dict[str, List[int]] = {v.name: [] for v in self._images}
        self.identity: Dict[str, "array.array[int]"] = {v.name: array.array("Q") for v in self._images}
        self.row_files: Dict[str, List[np.ndarray]] = {v.name: [] for v in self._images}
        self.numbers: Dict[str, List[np.ndarray]] = {v.name: [] for v in stream.variables if v.kind != "image"}
        # matrix cell -> (mtime_ns, size, first line): its values are cached per row, so a warm start must see
        # a matrix file change as it sees an image change (one stat per distinct matrix file)
        self.matrix_files: Dict[str, Dict[str, Tuple[int, int, int]]] = {
            v.name: {} for v in stream.variables if v.kind == "matrix"}

    @property
    def _images(self) -> List[_Var]:
        return [v for v in self.stream.variables if v.kind == "image"]

    def add(self, table: _Table) -> None:
        for var in self._images:
            self.row_files[var.name].append(self._files(table, var))
        values: Dict[str, np.ndarray] = {}
        for var in self.stream.variables:  # numbers are parsed every load, so their errors never hide
            if var.kind == "numeric":
                values[var.name] = _load_numbers(table, var, self.expected.get(var.name))
        for var in self.stream.variables:
            if var.kind == "matrix":
                values[var.name] = self._matrices(table, var)
        for name, chunk in values.items():
            self.numbers[name].append(chunk)
        for var in self.stream.variables:
            if var.name in self.label_classes:
                check_labels(table, var, values.get(var.name), int(self.label_classes[var.name]))

    def _files(self, table: _Table, var: _Var) -> np.ndarray:
        """The chunk's rows as indices into ``var``'s distinct spellings; each new one checked (one stat)."""
        col, ids = var.columns[0], self.ids[var.name]
        cells = [row[col].strip() for row in table.rows]
        found = [ids.get(cell) for cell in cells]  # known files: one dict look-up a row, no Python loop body
        if None in found:
            for k, i in enumerate(found):
                if i is None:
                    cell = cells[k]
                    i = ids.get(cell)
                    if i is None:
                        line = table.lines[k]
                        _, st = image_stat(self.shown, line, var.name, cell, self.folder, self.root)
                        i = ids[cell] = len(ids)
                        self.cells[var.name].append(cell.encode("utf-8"))
                        self.stamps[var.name].append((st.st_mtime_ns, st.st_size))
                        self.lines[var.name].append(line)
                        self.identity[var.name].extend((st.st_dev, st.st_ino))
                    found[k] = i
        return np.array(found, dtype=np.uint32)

    def _matrices(self, table: _Table, var: _Var) -> np.ndarray:
        known, col = self.matrix_files[var.name], var.columns[0]
        for row, line in zip(table.rows, table.lines):  # stamped before it is read: a change meanwhile shows
            cell = row[col].strip()
            if cell and cell not in known:
                _, st = resolve_image(self.folder, cell)
                if st is not None:  # else load_matrices names the missing file
                    known[cell] = (st.st_mtime_ns, st.st_size, line)
        chunk = load_matrices(table, var, Path(self.folder), self.expected.get(var.name), self.root)
        before = self.numbers[var.name]
        if before and before[0].shape[1:] != chunk.shape[1:]:
            raise _err(self.shown, table.lines[0], var.name, f"the matrices from this line on are "
                       f"{'x'.join(map(str, chunk.shape[1:]))} but those before are "
                       f"{'x'.join(map(str, before[0].shape[1:]))}; every sample of a variable needs the same "
                       "number of time steps and features (pad or cut the sequences)")
        return chunk

    def finish(self) -> DatasetIndex:
        variables = [v.name for v in self.stream.variables]
        index = DatasetIndex(self.shown, list(self.stream.columns), variables,
                             {v.name: v.kind for v in self.stream.variables}, self.stream.rows,
                             targets=dict(self.targets))
        for name, chunks in self.numbers.items():
            index.numbers[name] = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
        for name, chunks in self.row_files.items():
            rows = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
            first, file_of = _files_of(np.frombuffer(self.identity[name], dtype=np.uint64).reshape(-1, 2))
            spellings = self.cells[name]
            index.row_files[name] = rows if file_of is None else file_of[rows]
            aliases = np.zeros(0, dtype=np.int64) if file_of is None else np.setdiff1d(np.arange(len(spellings)),
                                                                                       first)
            cells = spellings if file_of is None else ([spellings[int(k)] for k in first]
                                                       + [spellings[int(k)] for k in aliases])
            offsets = np.zeros(len(cells) + 1, dtype=np.int64)
            np.cumsum([len(c) for c in cells], out=offsets[1:])
            stamps = np.array(self.stamps[name], dtype=np.int64).reshape(-1, 2)
            index.files[name] = FileTable(np.frombuffer(b"".join(cells), dtype=np.uint8).copy(), offsets,
                                          stamps[first], np.array(self.lines[name], dtype=np.int64)[first],
                                          np.zeros(0, np.uint32) if file_of is None else file_of[aliases])
        for name, known in self.matrix_files.items():
            index.files[name] = _plain_table(known)
        return index


def _plain_table(known: Mapping[str, Tuple[int, int, int]]) -> FileTable:
    """A file table from cell -> (mtime_ns, size, line), in order of first appearance (no aliases)."""
    cells = [cell.encode("utf-8") for cell in known]
    offsets = np.zeros(len(cells) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in cells], out=offsets[1:])
    stamped = np.array(list(known.values()), dtype=np.int64).reshape(-1, 3)
    return FileTable(np.frombuffer(b"".join(cells), dtype=np.uint8).copy(), offsets, stamped[:, :2].copy(),
                     stamped[:, 2].copy())


def _files_of(identity: np.ndarray) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """(each distinct file's first spelling, in order of first appearance; spelling -> file as uint32, None when
    every spelling names a file of its own) from the spellings' (st_dev, st_ino) rows.

    The usual case (no file spelled twice) costs one sort of a 64-bit key (0.05 s at 1.28 M files, where a
    ``np.unique(axis=0)`` took 6 s); only a CSV with aliases pays for the stable two-key sort."""
    n = len(identity)
    dev, ino = identity[:, 0], identity[:, 1]
    with np.errstate(over="ignore"):
        key = np.sort(ino ^ (dev * np.uint64(0x9E3779B97F4A7C15)))  # equal files, equal keys
    if not (key[1:] == key[:-1]).any():
        return np.arange(n), None
    order = np.lexsort((ino, dev))  # stable: within a file, its spellings in order of appearance
    ordered = identity[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    if new.all():
        return np.arange(n), None
    first = order[new]  # per file (in sorted order), its first spelling
    group = np.empty(n, dtype=np.int64)
    group[order] = np.cumsum(new) - 1
    by_appearance = np.argsort(first, kind="stable")  # files numbered by their first spelling's appearance
    number = np.empty(len(first), dtype=np.uint32)
    number[by_appearance] = np.arange(len(first), dtype=np.uint32)
    return first[by_appearance], number[group]


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic garbage collector paused while a CSV streams: its rows (lists of strings, no cycles) would
    make it scan every chunk again and again (a third of the time at a million rows).

    Only on the main thread: the switch is process-wide, and a thread that turned it back on as it finished
    would undo a GUI's main-thread-only collection (``console_app/shell/main_thread_gc.py``) or a caller's own
    choice made meanwhile. Elsewhere the rows stream with the collector as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_index(csv_path: PathLike, expected: Mapping[str, Tuple[int, ...]], root: Optional[str] = None,
                label_classes: Optional[Mapping[str, int]] = None, chunk_rows: int = CHUNK_ROWS
                ) -> Tuple[DatasetIndex, str, int]:
    """(the index of ``csv_path``, the CSV's SHA-256, its size), every row checked in one streamed pass.

    ``expected``: variable -> the network's sample shape; ``root``: image and matrix paths must lie inside it;
    ``label_classes``: class-label variable -> class count. Raises DatasetError naming file, line and fix."""
    with CsvStream(csv_path, chunk_rows) as stream, _no_gc():
        builder: Optional[_Builder] = None
        for rows, lines in stream.chunks():
            if builder is None:
                builder = _Builder(stream, expected, root, label_classes, rows)
            builder.add(stream.table(rows, lines))
        if builder is None:
            raise _err(stream.shown, 2, None, "the CSV has a header but no data rows; add one line per sample")
        return builder.finish(), stream.digest, stream.size


def changed_file(table: FileTable, folder: str) -> Optional[int]:
    """The first spelling (``table.cell``'s number) whose file's (mtime, size) differs from the index's, or that
    is gone; None when none: the warm start's one stat per distinct file (and per alias: a link pointed at
    another file changes what its rows hold, though the CSV does not change)."""
    for spelling, i in table.spelling_files():
        _, st = resolve_image(folder, table.cell(spelling))
        if st is None or st.st_mtime_ns != int(table.stamps[i, 0]) or st.st_size != int(table.stamps[i, 1]):
            return spelling
    return None


def bytes_per_row(index: DatasetIndex) -> int:
    """What the index holds per row (row-to-file indices and numeric columns), for the bench's report."""
    total = sum(a.nbytes for a in index.row_files.values()) + sum(a.nbytes for a in index.numbers.values())
    return math.ceil(total / max(index.size, 1))
