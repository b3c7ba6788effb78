"""The dataset index in a cache entry: its columns as ``.npy`` files beside the decoded pixels, each with its
checksum in the meta, memory-mapped read-only by every rank of the host (one copy in the page cache).

Files: ``x<j>.npy`` numeric variable j (float32), ``r<i>.npy`` image variable i's row-to-file indices (uint32),
``n<i>.npy``/``o<i>.npy`` its distinct files' cells (UTF-8 bytes) and their offsets, ``s<i>.npy`` their
(mtime_ns, size), ``l<i>.npy`` the CSV line naming each first and ``a<i>.npy`` the file each further spelling
names (aliases, whose cells follow the files'). A matrix variable's files (their values are in ``x<j>.npy``) get
the next numbers ``i`` for their ``n``/``o``/``s``/``l`` arrays, so a warm start stats them as it stats images.
The meta's ``index`` part says which is which.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Mapping

import numpy as np

from nnconsole.engine.data.cache import array_checksum, npy_layout
from nnconsole.engine.data.index import DatasetIndex, FileTable

INDEX_CHUNK_ROWS = 1 << 16  # rows per checksum chunk of an index array
INDEX_DTYPES = ("uint8", "uint32", "int64", "float32")  # what an index array may be (anything else is refused)
_TABLE_PARTS = {"cells": "n", "offsets": "o", "stamps": "s", "lines": "l", "aliases": "a"}


def _save(folder: Path, file: str, array: np.ndarray, arrays: Dict[str, Dict[str, Any]]) -> None:
    array = np.ascontiguousarray(array)
    path = folder / file
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o666)
    with os.fdopen(fd, "wb") as fh:
        np.save(fh, array, allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())
    offset = npy_layout(path)[0]
    rows = array.shape[0]
    row_bytes = array.itemsize * int(np.prod(array.shape[1:], dtype=np.int64))
    read = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        checksum = array_checksum(read, offset, rows, row_bytes, INDEX_CHUNK_ROWS)
    finally:
        os.close(read)
    arrays[file] = {"dtype": str(array.dtype), "shape": list(array.shape), "chunk_rows": INDEX_CHUNK_ROWS,
                    "checksum": checksum}


def save_index(index: DatasetIndex, folder: Path) -> Dict[str, Any]:
    """Write ``index``'s columns into the build folder ``folder``; returns the meta's ``index`` part."""
    arrays: Dict[str, Dict[str, Any]] = {}
    numbers, row_files, files = {}, {}, {}
    for j, name in enumerate(sorted(index.numbers)):
        numbers[name] = f"x{j}.npy"
        _save(folder, numbers[name], index.numbers[name].astype(np.float32, copy=False), arrays)
    for i, name in enumerate(index.image_variables):
        row_files[name] = f"r{i}.npy"
        _save(folder, row_files[name], index.row_files[name], arrays)
        table = index.files[name]
        files[name] = {part: f"{letter}{i}.npy" for part, letter in _TABLE_PARTS.items()
                       if part != "aliases" or len(table.aliases)}  # no empty array: an empty file maps nothing
        for part, file in files[name].items():
            _save(folder, file, getattr(table, part), arrays)
    matrices = [name for name in index.variables if index.kinds.get(name) == "matrix" and name in index.files]
    for i, name in enumerate(matrices, start=len(index.image_variables)):
        table = index.files[name]
        files[name] = {part: f"{letter}{i}.npy" for part, letter in _TABLE_PARTS.items() if part != "aliases"}
        for part, file in files[name].items():
            _save(folder, file, getattr(table, part), arrays)
    return {"columns": index.columns, "variables": index.variables, "kinds": index.kinds,
            "targets": {k: list(v) if v is not None else None for k, v in index.targets.items()},
            "numbers": numbers, "row_files": row_files, "files": files, "arrays": arrays}


def _table(parts: Mapping[str, str], arrays: Mapping[str, np.ndarray]) -> FileTable:
    """A file table from its arrays (an entry written before aliases were kept has none: every spelling was a
    file of its own, which stays right)."""
    found = {p: arrays[parts[p]] for p in _TABLE_PARTS if p in parts}
    table = FileTable(**found)
    n, aliases = len(table), table.aliases
    if table.offsets.shape != (n + len(aliases) + 1,) or table.stamps.shape != (n, 2) \
            or (len(aliases) and (aliases.dtype != np.uint32 or int(aliases.max()) >= n)):
        raise ValueError("a file table of the meta's dataset index does not fit together")
    return table


def load_index(meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray], shown: str) -> DatasetIndex:
    """The index an opened entry holds (its arrays already checked against the meta by ``cache.open_entry``);
    ValueError when the meta's index part is not one a build writes."""
    part = meta.get("index")
    if not isinstance(part, dict):
        raise ValueError("the meta holds no dataset index")
    try:
        index = DatasetIndex(shown, [str(c) for c in part["columns"]], [str(v) for v in part["variables"]],
                             {str(k): str(v) for k, v in part["kinds"].items()}, int(meta["size"]))
        for name, file in part["numbers"].items():
            index.numbers[name] = arrays[file]
        for name, parts in part["files"].items():
            index.files[name] = _table(parts, arrays)
        for name, file in part["row_files"].items():
            index.row_files[name] = arrays[file]
            target = part["targets"].get(name)
            index.targets[name] = tuple(int(t) for t in target) if target is not None else None
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"the meta's dataset index is incomplete ({exc!r})") from None
    for name in index.variables:
        if name not in index.numbers and name not in index.row_files:
            raise ValueError(f"the meta's dataset index has no column for '{name}'")
    for name, rows in index.row_files.items():
        if name not in index.files or rows.dtype != np.uint32 or len(rows) != index.size \
                or (len(rows) and int(rows.max()) >= len(index.files[name])):
            raise ValueError(f"the row-to-file index of '{name}' does not fit its file table")
    return index
