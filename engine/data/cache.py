"""The shared decode cache of image datasets: one folder per dataset version holding each image variable as a
uint8 ``.npy`` file that every worker on the host memory-maps read-only (the page cache holds one copy).

An entry ``<prefix><key>/`` (``meta.json`` + ``v<i>.npy``) is keyed by the CSV bytes, the image files' mtimes
and sizes and the expected shapes. It is built in a hidden ``.partial`` folder and renamed into place, so a
reader sees a whole entry or none; one flock per CSV (``<prefix>lock``) lets one process build while the others
wait. An entry whose meta, header or size does not match is reported, removed and rebuilt, never used.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.data.csv_reader import PathLike, _Table

log = logging.getLogger(__name__)

CACHE_FOLDER = ".nnconsole-cache"
CACHE_VERSION = "nnconsole-dataset-cache-v2"  # v2: uint8 memory-mapped .npy per image variable
META_FILE = "meta.json"
PROGRESS_FILE = "progress.json"
PARTIAL_SUFFIX = ".partial"


def _cache_key(table: _Table, files: Sequence[Tuple[str, Tuple[int, int]]],
               expected: Mapping[str, Tuple[int, ...]]) -> str:
    """Content key: the CSV bytes, every image file's mtime and size (in CSV order), the expected shapes."""
    h = hashlib.sha256()
    h.update(CACHE_VERSION.encode())
    h.update(hashlib.sha256(table.raw).digest())
    for _, (mtime_ns, size) in files:  # in CSV order; the file names are part of the CSV bytes above
        h.update(f"{mtime_ns}\0{size}\n".encode())
    h.update(repr(sorted((k, tuple(v)) for k, v in expected.items())).encode())
    return h.hexdigest()


def _cache_dirs(csv_path: Path, cache_dir: Optional[PathLike]) -> List[Path]:
    if cache_dir is not None:
        return [Path(cache_dir)]
    return [csv_path.resolve().parent / CACHE_FOLDER, Path.home() / ".cache" / "nnconsole" / "datasets"]


def _cache_prefix(csv_path: Path) -> str:
    tag = hashlib.sha256(str(csv_path.resolve()).encode()).hexdigest()[:8]
    return f"{csv_path.stem}-{tag}-"


def variable_file(index: int) -> str:
    return f"v{index}.npy"


# ---- reading and checking an entry ----------------------------------------------------------------------
def _npy_data_offset(path: Path) -> Tuple[int, Tuple[int, ...], np.dtype]:
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
            np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(fh)
        if fortran:
            raise ValueError("Fortran-ordered array")
        return fh.tell(), tuple(shape), dtype


def open_entry(entry: Path, key: str, size: int, variables: Sequence[str]) -> Dict[str, np.ndarray]:
    """The read-only memory maps of a finished entry; raises ValueError saying what does not match."""
    meta = json.loads((entry / META_FILE).read_text(encoding="utf-8"))
    if meta.get("version") != CACHE_VERSION or meta.get("key") != key:
        raise ValueError("written for another version of the dataset (key mismatch)")
    if meta.get("size") != size or sorted(meta.get("variables", {})) != sorted(variables):
        raise ValueError(f"holds {meta.get('size')} samples of {sorted(meta.get('variables', {}))}, "
                         f"expected {size} of {sorted(variables)}")
    arrays = {}
    for name in variables:
        info = meta["variables"][name]
        if not isinstance(info.get("file"), str) or os.path.basename(info["file"]) != info["file"] \
                or not info["file"].endswith(".npy"):
            raise ValueError(f"meta names {info.get('file')!r}, not a .npy file of the entry")
        path = entry / info["file"]
        offset, shape, dtype = _npy_data_offset(path)
        if dtype != np.uint8 or shape != (size,) + tuple(info["shape"]):
            raise ValueError(f"{info['file']}: header says {dtype} {list(shape)}, meta says uint8 "
                             f"{[size] + list(info['shape'])}")
        expected_bytes = offset + int(np.prod(shape))
        actual = path.stat().st_size
        if actual != expected_bytes:
            raise ValueError(f"{info['file']} is {actual} bytes, expected {expected_bytes} (truncated or damaged)")
        arrays[name] = np.load(path, mmap_mode="r", allow_pickle=False)
    return arrays


def read_entry(entry: Path, key: str, size: int, variables: Sequence[str], locked: bool = False
               ) -> Optional[Dict[str, np.ndarray]]:
    """``open_entry``, or None when it is absent or damaged; a damaged entry is reported and, by a caller
    holding the CSV's lock (``locked``), removed (without the lock it might be a builder's fresh entry)."""
    if not entry.is_dir():
        return None
    try:
        return open_entry(entry, key, size, variables)
    except Exception as exc:  # noqa: BLE001 - a damaged entry is rebuilt, never used and never fatal
        if locked:
            log.warning("dataset cache %s is damaged or stale (%s); rebuilding it", entry, exc)
            shutil.rmtree(entry, ignore_errors=True)
        return None


# ---- building an entry ----------------------------------------------------------------------------------
@contextlib.contextmanager
def csv_lock(folder: Path, prefix: str, poll: Optional[Callable[[], None]] = None) -> Iterator[bool]:
    """Hold the CSV's build lock (flock, released by the kernel if the holder dies); ``poll`` runs while waiting.

    Yields False where the file system has no flock: the caller then builds its own copy, which is safe
    because the rename into place refuses to replace another finished entry.
    """
    fd = os.open(folder / f"{prefix}lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        locked = True
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if poll is not None:
                    poll()
                time.sleep(0.2)
            except OSError:  # e.g. ENOLCK on some network file systems
                locked = False
                break
        yield locked
    finally:
        os.close(fd)


def partial_path(folder: Path, name: str, locked: bool) -> Path:
    """The folder a build writes into: with the lock, one fixed name (an interrupted build is resumed from it);
    without, a name of its own."""
    if locked:
        return folder / f".{name}{PARTIAL_SUFFIX}"
    return folder / f".{name}.{os.getpid()}.{os.urandom(4).hex()}{PARTIAL_SUFFIX}"


def read_progress(partial: Path) -> Dict:
    try:
        return json.loads((partial / PROGRESS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def write_progress(partial: Path, progress: Dict) -> None:
    atomic_write(str(partial / PROGRESS_FILE), json.dumps(progress).encode())


def finish_entry(partial: Path, entry: Path, key: str, size: int, shapes: Dict[str, Tuple[int, ...]],
                 files: Dict[str, str]) -> None:
    """Write the meta last, fsync the arrays and rename the partial folder to ``entry`` (atomic).

    When another process put a finished entry there first, ours is discarded and theirs is used.
    """
    for file in files.values():
        fd = os.open(partial / file, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    (partial / PROGRESS_FILE).unlink(missing_ok=True)
    meta = {"version": CACHE_VERSION, "key": key, "size": size,
            "variables": {n: {"file": files[n], "shape": list(shapes[n]), "dtype": "uint8"} for n in shapes}}
    atomic_write(str(partial / META_FILE), json.dumps(meta, indent=1).encode())
    try:
        os.rename(partial, entry)
    except OSError:
        if not entry.is_dir():
            raise
        shutil.rmtree(partial, ignore_errors=True)


def remove_stale(folder: Path, prefix: str, keep: str) -> None:
    """Remove the entries of the same CSV but another key (older versions, and the v1 cache's .npz files);
    call with the CSV's lock held."""
    for old in folder.glob(prefix + "*"):
        if old.is_dir() and old.name != keep:
            shutil.rmtree(old, ignore_errors=True)
        elif old.suffix == ".npz" and old.is_file():  # the float32 .npz of nnconsole-dataset-cache-v1
            old.unlink(missing_ok=True)
    for partial in folder.glob(f".{prefix}*{PARTIAL_SUFFIX}"):
        if not partial.name.startswith(f".{keep}."):
            shutil.rmtree(partial, ignore_errors=True)
