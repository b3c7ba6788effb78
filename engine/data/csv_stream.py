"""Reading a dataset CSV as a stream: the header, then the rows in chunks, with the same located errors as
``csv_reader`` and the file's SHA-256 and size computed on the way (issue 31).

No reader keeps every row: a chunk of ``CHUNK_ROWS`` rows (lists of strings and their CSV lines) exists at a
time, so reading a CSV of millions of rows holds a few MB of Python objects whatever its length. The bytes are
hashed as they are read (the dataset cache's key), so a load that checks and hashes reads the file once.
"""
from __future__ import annotations

import csv
import hashlib
import io
import os
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from nnconsole.engine.data.csv_reader import (CsvPreview, DatasetError, PathLike, _decode_text, _err, _parse_header,
                                              _read_bytes, _Table)
from nnconsole.engine.data.regular_file import NotRegularFileError, open_regular

CHUNK_ROWS = 1 << 14  # rows per chunk: about 2 MB of Python objects for a two-column CSV
_READ_BYTES = 1 << 20


class _HashingReader(io.RawIOBase):
    """A binary file read through, its SHA-256 and length updated with every block."""

    def __init__(self, fh) -> None:
        super().__init__()
        self._fh = fh
        self.sha = hashlib.sha256()
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._fh.readinto(buffer)
        if n:
            self.sha.update(memoryview(buffer)[:n])
            self.size += n
        return n or 0


def _open(path: Path, shown: str):
    """The CSV opened for reading, or the DatasetError ``csv_reader`` gives for a missing or unreadable file."""
    try:
        return open_regular(path)
    except (NotRegularFileError, OSError):
        _read_bytes(path, shown)  # raises the located message for this kind of failure
        raise  # pragma: no cover - _read_bytes raised


def file_digest(csv_path: PathLike) -> Tuple[str, int]:
    """(SHA-256 hex, size in bytes) of the CSV, read in blocks (the dataset cache's key on a warm start)."""
    shown = os.fspath(csv_path)
    sha = hashlib.sha256()
    size = 0
    with _open(Path(csv_path), shown) as fh:
        while True:
            block = fh.read(_READ_BYTES)
            if not block:
                break
            sha.update(block)
            size += len(block)
    return sha.hexdigest(), size


class CsvStream:
    """One pass over a dataset CSV: ``columns``, ``names``, ``variables`` once opened, then ``chunks()`` yields
    (rows, lines) lists of at most ``chunk_rows`` rows each; ``digest``, ``size`` and ``rows`` are final after
    the last chunk. Use as a context manager (it closes the file)."""

    def __init__(self, csv_path: PathLike, chunk_rows: int = CHUNK_ROWS) -> None:
        self.path = Path(csv_path)
        self.shown = os.fspath(csv_path)
        self.chunk_rows = max(1, int(chunk_rows))
        self._fh = _open(self.path, self.shown)
        self._raw = _HashingReader(self._fh)
        self._text = io.TextIOWrapper(io.BufferedReader(self._raw, _READ_BYTES), encoding="utf-8-sig", newline="")
        self._reader = csv.reader(self._text, strict=True)
        self._previous = 0
        self.rows = 0
        header = self._next()
        if header is None:
            raise _err(self.shown, 1, None, "the CSV is empty; it needs a header line naming the variables (e.g. "
                       "'x:image,y:label') followed by one line per sample")
        self.columns, self.names, self.variables = _parse_header(header[0], self.shown)

    def __enter__(self) -> "CsvStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._fh.close()

    @property
    def digest(self) -> str:
        return self._raw.sha.hexdigest()

    @property
    def size(self) -> int:
        return self._raw.size

    def _next(self) -> Optional[Tuple[List[str], int]]:
        """The next non-blank record and its first line, or None at the end (errors as ``csv_reader``)."""
        while True:
            start = self._previous + 1
            try:
                row = next(self._reader)
            except StopIteration:
                return None
            except UnicodeDecodeError:
                self._fh.seek(0)
                _decode_text(self._fh.read(), self.shown)  # raises the located message (line, byte, offset)
                raise  # pragma: no cover
            except csv.Error as exc:
                if "NUL" in str(exc):
                    raise _err(self.shown, start, None, "the line contains a NUL byte; a dataset CSV is text (was "
                               "it saved as UTF-16, or is it not a CSV file?); save it as UTF-8 CSV") from None
                raise _err(self.shown, start, None, f"malformed CSV ({exc}); check the quotes on this line") from None
            self._previous = self._reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            return row, start

    def chunks(self) -> Iterator[Tuple[List[List[str]], List[int]]]:
        """The data rows in chunks, each row checked to have one value per column (blank lines skipped).

        The per-row work is inlined here (one loop over the csv reader): at millions of rows a function call per
        row costs as much as parsing it."""
        width, size, reader = len(self.columns), self.chunk_rows, self._reader
        rows: List[List[str]] = []
        lines: List[int] = []
        previous = self._previous
        try:
            for row in reader:
                start, previous = previous + 1, reader.line_num
                n = len(row)
                if n <= 1 and (n == 0 or not row[0].strip()):
                    continue
                if n != width:
                    raise _err(self.shown, start, None, f"the row has {n} values but the header names {width} "
                               f"columns ({', '.join(self.names)}); every line needs exactly one value per column "
                               "(quote values that contain commas)")
                rows.append(row)
                lines.append(start)
                if len(rows) == size:
                    self.rows += size
                    self._previous = previous
                    yield rows, lines
                    rows, lines = [], []
        except UnicodeDecodeError:
            self._fh.seek(0)
            _decode_text(self._fh.read(), self.shown)  # raises the located message (line, byte, offset)
            raise  # pragma: no cover
        except csv.Error as exc:
            start = previous + 1
            if "NUL" in str(exc):
                raise _err(self.shown, start, None, "the line contains a NUL byte; a dataset CSV is text (was it "
                           "saved as UTF-16, or is it not a CSV file?); save it as UTF-8 CSV") from None
            raise _err(self.shown, start, None, f"malformed CSV ({exc}); check the quotes on this line") from None
        self._previous = previous
        if rows:
            self.rows += len(rows)
            yield rows, lines

    def table(self, rows: List[List[str]], lines: List[int]) -> _Table:
        """A chunk as the ``_Table`` the per-variable checks read (no raw bytes: the stream hashes them)."""
        return _Table(self.shown, b"", self.columns, self.names, rows, lines, self.variables)


_COUNTS: Dict[Tuple[int, int, int, int], CsvPreview] = {}  # file version -> header and row count (no rows)
_COUNTS_KEPT = 16


def _version(path: PathLike) -> Optional[Tuple[int, int, int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def remember_count(path: PathLike, preview: CsvPreview, version: Optional[Tuple[int, int, int, int]]) -> None:
    """Keep a streamed pass's header and row count for ``peek_csv(path, 0)`` while the file stays this version
    (``version``: ``_version`` taken before the pass), so the launcher's checks and its plan read the CSV once."""
    if version is None or version != _version(path):
        return
    if len(_COUNTS) >= _COUNTS_KEPT:
        _COUNTS.pop(next(iter(_COUNTS)))
    _COUNTS[version] = CsvPreview(preview.path, list(preview.columns), list(preview.variables), preview.row_count,
                                  [])


def header_csv(path: PathLike) -> CsvPreview:
    """The header and variable names only (row count -1): reads the first line, for checks that need no rows."""
    with CsvStream(path, 1) as stream:
        return CsvPreview(stream.shown, stream.columns, [v.name for v in stream.variables], -1, [])


def peek_csv(path: PathLike, max_rows: int = 20) -> CsvPreview:
    """Header, variable names, row count and the first ``max_rows`` rows as strings; decodes no image and keeps
    no other row (one streamed pass; none when a check of this version of the file counted its rows)."""
    wanted = max(0, int(max_rows))
    version = _version(path)
    known = _COUNTS.get(version) if version is not None and wanted == 0 else None
    if known is not None:
        return CsvPreview(os.fspath(path), list(known.columns), list(known.variables), known.row_count, [])
    first: List[List[str]] = []
    with CsvStream(path) as stream:
        for rows, _ in stream.chunks():
            if len(first) < wanted:
                first.extend(list(r) for r in rows[: wanted - len(first)])
        preview = CsvPreview(stream.shown, stream.columns, [v.name for v in stream.variables], stream.rows, first)
    remember_count(path, preview, version)
    return preview


__all__ = ["CHUNK_ROWS", "CsvStream", "DatasetError", "file_digest", "header_csv", "peek_csv", "remember_count"]
