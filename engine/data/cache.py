"""The shared decode cache of image datasets: one folder per dataset version holding each image variable as a
uint8 ``.npy`` file that every worker on the host memory-maps read-only (the page cache holds one copy).

An entry ``<prefix><key>/`` (``meta.json`` + ``v<i>.npy``) is keyed by the CSV bytes, the image files' mtimes
and sizes and the expected shapes. It is built in a private build folder (``cache_partial``) and renamed into
place, so a reader sees a whole entry or none; one flock per CSV (``<prefix>lock``) lets one process build
while the others wait.

An entry is used only when it can be trusted and checks out, else it is reported, removed and rebuilt:

- trusted: the entry, its meta and arrays are real folders and regular files (no links, FIFOs or devices),
  none writable by everyone, owned by this user (or root), or by the group of a setgid cache folder this user
  belongs to (a team's shared cache); another user's entry in a shared folder is never trained on;
- checks out: the meta matches the key, size and shapes, every array's header and length match, and every
  array's content matches the SHA-256 the build computed while writing it (per chunk of rows, hashed on all
  cores when the entry is opened, once per process and file version).

Removing an entry or a build folder removes only the files a build writes, never through a link.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import stat
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np

from nnconsole.engine.data.csv_reader import PathLike
from nnconsole.engine.data.regular_file import NotRegularFileError, open_regular

log = logging.getLogger(__name__)

CACHE_FOLDER = ".nnconsole-cache"
# v3: SHA-256 of every array in the meta; 16-bit grey scaled (v2 entries held it clipped)
# v4: the dataset index beside the pixels, which are held once per distinct file (issue 31)
CACHE_VERSION = "nnconsole-dataset-cache-v4"
META_FILE = "meta.json"
PROGRESS_FILE = "progress.json"
PARTIAL_SUFFIX = ".partial"
MAX_META_BYTES = 1 << 20
# What a build writes in an entry or build folder (atomic_write's temp names included): all a removal touches.
_BUILD_FILE = re.compile(r"^([vwxrnosla]\d+\.npy|meta\.json|progress\.json|building\.json"
                         r"|\.(meta\.json|progress\.json|building\.json|w\d+\.npy)\.\d+\.[0-9a-f]+\.tmp)$")
_READ_BLOCK = 1 << 20
_INDEX_FILE = re.compile(r"^[xrnosla]\d+\.npy$")
_INDEX_DTYPES = ("uint8", "uint32", "int64", "float32")


class UntrustedEntryError(ValueError):
    """A cache entry (or one of its files) this user must not trust: another owner, a link, writable by all."""


class StuckEntryError(OSError):
    """A damaged or stale entry that cannot be removed; the message names it and says what to do."""


def _cache_key(csv_digest: str, csv_size: int, expected: Mapping[str, Tuple[int, ...]],
               label_classes: Optional[Mapping[str, int]] = None) -> str:
    """Content key: the CSV's SHA-256 and size, the expected shapes and the label classes (the checks the index
    passed). The image files' (mtime, size) are not in it: the entry holds them per distinct file, compared
    against one stat each when it is opened."""
    h = hashlib.sha256()
    h.update(CACHE_VERSION.encode())
    h.update(f"{csv_digest}\0{int(csv_size)}\n".encode())
    h.update(repr(sorted((k, tuple(v)) for k, v in expected.items())).encode())
    h.update(repr(sorted((k, int(v)) for k, v in (label_classes or {}).items())).encode())
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


def order_file(variable: str) -> str:
    """The file of a build folder that holds the order in which the pixels of ``variable`` (``v<i>.npy``) are
    decoded (``w<i>.npy``), so that a build resumed in another order keeps the chunks it wrote."""
    return "w" + variable[1:]


# ---- trust ------------------------------------------------------------------------------------------------
def trusted_group(folder: Path) -> Optional[int]:
    """The group whose members may share ``folder``'s entries: its group when the folder is setgid (the usual
    set-up of a team's shared folder), not writable by everyone, and this user is a member; else None."""
    try:
        st = os.stat(folder)
    except OSError:
        return None
    if not st.st_mode & stat.S_ISGID or st.st_mode & stat.S_IWOTH:
        return None
    return st.st_gid if st.st_gid in set(os.getgroups()) | {os.getegid()} else None


def check_trusted(st: os.stat_result, what: str, group: Optional[int]) -> None:
    """Raise UntrustedEntryError unless ``st`` (of ``what``) is owned by this user or root, or by ``group``,
    and is not writable by everyone."""
    if st.st_mode & stat.S_IWOTH:
        raise UntrustedEntryError(f"{what} is writable by every user")
    if st.st_uid not in (os.geteuid(), 0) and (group is None or st.st_gid != group):
        raise UntrustedEntryError(f"{what} belongs to another user (uid {st.st_uid}), not to you or to the "
                                  "trusted group of a setgid cache folder")


def _open_trusted(path: Path, group: Optional[int]):
    """``path`` opened for reading when it is a regular file (not a link) this user may trust."""
    try:
        fh = open_regular(path, follow_links=False)
    except NotRegularFileError as exc:
        raise ValueError(f"{path.name} is {exc.strerror}") from None
    try:
        check_trusted(os.fstat(fh.fileno()), path.name, group)
    except BaseException:
        fh.close()
        raise
    return fh


# ---- checksums ----------------------------------------------------------------------------------------------
def chunk_digest(data: memoryview) -> bytes:
    """The SHA-256 of one chunk of rows as the build writes it."""
    return hashlib.sha256(data).digest()


def combine_digests(digests: Sequence[bytes]) -> str:
    """An array's checksum: the SHA-256 of its chunks' digests, in row order (hex)."""
    return hashlib.sha256(b"".join(digests)).hexdigest()


def _hash_rows(fd: int, start: int, length: int) -> bytes:
    digest = hashlib.sha256()
    done = 0
    while done < length:
        block = os.pread(fd, min(_READ_BLOCK, length - done), start + done)
        if not block:
            raise ValueError("the file ended early (truncated while being read)")
        digest.update(block)
        done += len(block)
    return digest.digest()


def array_checksum(fd: int, offset: int, rows: int, row_bytes: int, chunk_rows: int) -> str:
    """The checksum ``combine_digests`` gives for the rows at ``offset`` of ``fd``, hashed on every core
    (hashlib releases the GIL) with plain reads: nothing is mapped into this process."""
    spans = [(offset + s * row_bytes, (min(s + chunk_rows, rows) - s) * row_bytes) for s in range(0, rows, chunk_rows)]
    workers = max(1, min(len(spans), os.cpu_count() or 1, 16))
    if workers == 1:
        return combine_digests([_hash_rows(fd, a, n) for a, n in spans])
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return combine_digests(list(pool.map(lambda span: _hash_rows(fd, *span), spans)))


_verified: Set[Tuple[int, int, int, int, int, str]] = set()  # file versions whose checksum this process saw match


# ---- reading and checking an entry ----------------------------------------------------------------------
def _npy_data_offset(fh) -> Tuple[int, Tuple[int, ...], np.dtype]:
    version = np.lib.format.read_magic(fh)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
        np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read_header(fh)
    if fortran:
        raise ValueError("Fortran-ordered array")
    return fh.tell(), tuple(shape), dtype


def npy_layout(path: Path) -> Tuple[int, Tuple[int, ...], np.dtype]:
    """(data offset, shape, dtype) of the regular ``.npy`` file ``path`` (no link followed)."""
    with open_regular(path, follow_links=False) as fh:
        return _npy_data_offset(fh)


def _read_meta(entry: Path, group: Optional[int]) -> dict:
    with _open_trusted(entry / META_FILE, group) as fh:
        raw = fh.read(MAX_META_BYTES + 1)
    if len(raw) > MAX_META_BYTES:
        raise ValueError(f"{META_FILE} is larger than any meta a build writes")
    meta = json.loads(raw.decode("utf-8"))
    if not isinstance(meta, dict) or not isinstance(meta.get("variables"), dict) \
            or not isinstance(meta.get("checksums"), dict):
        raise ValueError(f"{META_FILE} is not the meta of a cache entry")
    return meta


def _checked_array(entry: Path, file: str, dtype: np.dtype, shape: Tuple[int, ...], checksum: object,
                   chunk_rows: int, group: Optional[int]) -> np.ndarray:
    """The read-only memory map of ``entry/file`` once its header, length and checksum match the meta's."""
    with _open_trusted(entry / file, group) as fh:
        offset, found, found_dtype = _npy_data_offset(fh)
        if found_dtype != dtype or found != shape:
            raise ValueError(f"{file}: header says {found_dtype} {list(found)}, meta says {dtype} {list(shape)}")
        fst = os.fstat(fh.fileno())
        expected_bytes = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if fst.st_size != expected_bytes:
            raise ValueError(f"{file} is {fst.st_size} bytes, expected {expected_bytes} (truncated or damaged)")
        version = (fst.st_dev, fst.st_ino, fst.st_size, fst.st_mtime_ns, fst.st_ctime_ns, str(checksum))
        if version not in _verified:
            row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
            if checksum != array_checksum(fh.fileno(), offset, shape[0], row_bytes, chunk_rows):
                raise ValueError(f"{file}: the content does not match the checksum the build recorded "
                                 "(replaced or damaged)")
            _verified.add(version)
        return np.memmap(fh, dtype=dtype, mode="r", offset=offset, shape=shape)  # the checked file


def _valid_file(file: object, pattern: "re.Pattern[str]") -> str:
    if not isinstance(file, str) or os.path.basename(file) != file or not pattern.match(file):
        raise ValueError(f"meta names {file!r}, not a .npy file of the entry")
    return file


def open_entry(entry: Path, key: str) -> Tuple[dict, Dict[str, np.ndarray]]:
    """(meta, read-only memory maps by file name) of a finished entry: the pixels of each image variable (one
    sample per distinct file) and the index's arrays; raises ValueError saying what does not match or cannot be
    trusted, NotRegularFileError/OSError when it cannot be read."""
    group = trusted_group(entry.parent)
    st = os.lstat(entry)
    if not stat.S_ISDIR(st.st_mode):
        raise ValueError("not a folder (a link or a file stands where the entry should be)")
    check_trusted(st, "the entry", group)
    meta = _read_meta(entry, group)
    if meta.get("version") != CACHE_VERSION or meta.get("key") != key:
        raise ValueError("written for another version of the dataset (key mismatch)")
    size, chunk_rows = meta.get("size"), meta.get("chunk_rows")
    if not isinstance(size, int) or size < 1:
        raise ValueError("meta gives no sample count")
    if not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise ValueError("meta gives no chunk size for its checksums")
    arrays: Dict[str, np.ndarray] = {}
    for name, info in meta["variables"].items():  # decoded pixels: uint8, one sample per distinct file
        file = _valid_file(info.get("file") if isinstance(info, dict) else None, re.compile(r"^v\d+\.npy$"))
        count, shape = info.get("count"), info.get("shape")
        if not isinstance(count, int) or count < 1 or not isinstance(shape, list) \
                or not all(isinstance(d, int) for d in shape):
            raise ValueError(f"meta gives no shape for {file}")
        arrays[file] = _checked_array(entry, file, np.dtype(np.uint8), (count,) + tuple(shape),
                                      meta["checksums"].get(name), chunk_rows, group)
    index_arrays = meta.get("index", {}).get("arrays") if isinstance(meta.get("index"), dict) else None
    if not isinstance(index_arrays, dict):
        raise ValueError("meta holds no dataset index")
    for file, info in index_arrays.items():
        _valid_file(file, _INDEX_FILE)
        if not isinstance(info, dict) or info.get("dtype") not in _INDEX_DTYPES \
                or not isinstance(info.get("shape"), list) or not info["shape"] \
                or not all(isinstance(d, int) and d >= 0 for d in info["shape"]) \
                or not isinstance(info.get("chunk_rows"), int) or info["chunk_rows"] < 1:
            raise ValueError(f"meta gives no dtype, shape or chunk size for {file}")
        arrays[file] = _checked_array(entry, file, np.dtype(info["dtype"]), tuple(info["shape"]),
                                      info.get("checksum"), info["chunk_rows"], group)
    return meta, arrays


def read_entry(entry: Path, key: str, check: Callable[[dict, Dict[str, np.ndarray]], None], locked: bool = False
               ) -> Optional[Tuple[dict, Dict[str, np.ndarray]]]:
    """``open_entry`` then ``check(meta, arrays)`` (ValueError when the entry is stale, e.g. an image file changed),
    or None when it is absent, damaged or stale; a damaged entry is reported and, by a caller holding the CSV's
    lock (``locked``), removed (without the lock it might be a builder's fresh entry).
    Raises StuckEntryError when it must be removed and cannot be."""
    try:
        os.lstat(entry)
    except (FileNotFoundError, NotADirectoryError):  # none, or no cache folder (a file stands there)
        return None
    try:
        opened = open_entry(entry, key)
        check(*opened)
        return opened
    except (OSError, ValueError) as exc:  # a damaged entry is rebuilt, never used and never fatal
        if locked:
            log.warning("dataset cache %s is damaged or stale (%s); rebuilding it", entry, exc)
            remove_build_folder(entry, must=True)
        return None


# ---- removing what a build wrote ----------------------------------------------------------------------------
def remove_build_folder(path: Path, must: bool = False) -> bool:
    """Remove the entry or build folder ``path``: the files a build writes in it, then the folder. Nothing is
    followed through a link and nothing else is removed: a link, or a folder holding other files, stays.

    True when it is gone. With ``must``, what cannot be removed raises StuckEntryError saying what to do.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return True
    except OSError as exc:
        return _stuck(path, "it is not a folder (a link?)" if exc.errno in (errno.ELOOP, errno.ENOTDIR)
                      else exc.strerror or str(exc), must)
    try:
        for name in os.listdir(fd):
            if _BUILD_FILE.match(name):
                try:
                    os.unlink(name, dir_fd=fd)  # never follows: a link itself is removed, not its target
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    return _stuck(path, f"cannot remove {name}: {exc.strerror}", must)
    except OSError as exc:
        return _stuck(path, exc.strerror or str(exc), must)
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        reason = "it holds files a build did not write" if exc.errno == errno.ENOTEMPTY else exc.strerror
        return _stuck(path, reason, must)
    return True


def _stuck(path: Path, reason: str, must: bool) -> bool:
    if must:
        raise StuckEntryError(errno.EEXIST, f"dataset cache entry {path} is damaged, stale or not trusted, and "
                              f"cannot be removed ({reason}); remove it by hand (or ask its owner to), or set "
                              "'datasets: cache: false' in the project")
    log.info("left %s in place (%s)", path, reason)
    return False


def remove_stale(folder: Path, prefix: str, keep: str, keep_partial: Optional[Path] = None) -> None:
    """Remove this user's entries of the same CSV but another key (older versions), its build folders but
    ``keep_partial``, and the v1 cache's .npz files; call with the CSV's lock held."""
    me = os.geteuid()
    for old in folder.glob(prefix + "*"):
        try:
            st = os.lstat(old)
        except OSError:
            continue
        if st.st_uid != me:
            continue
        if stat.S_ISDIR(st.st_mode) and old.name != keep:
            remove_build_folder(old)
        elif old.suffix == ".npz" and stat.S_ISREG(st.st_mode):  # the float32 .npz of nnconsole-dataset-cache-v1
            old.unlink(missing_ok=True)
    for partial in folder.glob(f".{prefix}*{PARTIAL_SUFFIX}"):
        try:
            st = os.lstat(partial)
        except OSError:
            continue
        if partial != keep_partial and stat.S_ISDIR(st.st_mode) and st.st_uid == me:
            remove_build_folder(partial)


# ---- the build lock -----------------------------------------------------------------------------------------
def lock_path(folder: Path, prefix: str) -> Path:
    """The build lock file of the CSV whose entries are named ``prefix...`` in ``folder``."""
    return folder / f"{prefix}lock"


@contextlib.contextmanager
def csv_lock(folder: Path, prefix: str, poll: Optional[Callable[[], None]] = None) -> Iterator[bool]:
    """Hold the CSV's build lock (flock, released by the kernel if the holder dies); ``poll`` runs while waiting
    (and may raise to stop waiting).

    Yields False where the file system has no flock: the caller then builds its own copy, which is safe
    because the rename into place refuses to replace another finished entry.
    """
    fd = os.open(lock_path(folder, prefix), os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_NONBLOCK", 0), 0o666)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(errno.EINVAL, "the cache's lock is not a regular file", str(folder))
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
