"""Bounded reading of the files a user imports: ``.nnp`` zip archives and plain files.

A zip's directory can declare any sizes and a small archive can inflate to gigabytes (a "zip
bomb"), so an archive is checked before anything is inflated (member count, declared sizes,
compression ratio) and each member is read in small chunks up to its limit, since declared sizes
can lie. Every import of a zip or a file from user input goes through ``read_zip_members`` or
``read_bounded``; the limits below are far above any real NNC/nnabla file.
"""
from __future__ import annotations

import os
import zipfile
from typing import Dict, Iterable

import stat
from nnconsole.engine.interop.report import InteropError

MAX_MEMBERS = 256  # an .nnp holds a handful (nntxt, h5, version.txt)
MAX_MEMBER_BYTES = 1 << 30  # 1 GiB: the parameters of a very large network
MAX_TOTAL_BYTES = 1 << 30  # all members together, inflated
MAX_TEXT_BYTES = 64 << 20  # 64 MiB: an .nntxt describing a network is a few MiB at most
MAX_RATIO = 200  # inflated / compressed; float parameters and text compress far less
RATIO_FLOOR = 16 << 20  # members below this size are never refused for their ratio
_CHUNK = 1 << 20


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB"


def read_zip_members(path: str, wanted: Iterable[str], text_suffixes: Iterable[str] = ()) -> Dict[str, bytes]:
    """The contents of the members of zip ``path`` whose extension is in ``wanted``, read with bounds.

    Members ending in ``text_suffixes`` are limited to MAX_TEXT_BYTES, others to MAX_MEMBER_BYTES.
    Raises InteropError naming the file, the member and the limit it broke.
    """
    wanted = tuple(s.lower() for s in wanted)
    texts = tuple(s.lower() for s in text_suffixes)
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_MEMBERS:
                raise InteropError(f"{path}: the archive holds {len(infos):,} files, more than the {MAX_MEMBERS} an "
                                   ".nnp can have; this is not an .nnp exported by NNC or nnabla")
            chosen = [i for i in infos if os.path.splitext(i.filename)[1].lower() in wanted and not i.is_dir()]
            total = 0
            for info in chosen:
                limit = MAX_TEXT_BYTES if info.filename.lower().endswith(texts) else MAX_MEMBER_BYTES
                _check_declared(path, info, limit)
                total += info.file_size
            if total > MAX_TOTAL_BYTES:
                raise InteropError(f"{path}: the archive's files inflate to {_mib(total)}, more than the "
                                   f"{_mib(MAX_TOTAL_BYTES)} nnconsole reads from one .nnp")
            out: Dict[str, bytes] = {}
            for info in chosen:
                limit = MAX_TEXT_BYTES if info.filename.lower().endswith(texts) else MAX_MEMBER_BYTES
                out[info.filename] = _read_member(path, zf, info, limit)
            return out
    except zipfile.BadZipFile as exc:
        raise InteropError(f"{path}: not a valid .nnp (zip) file ({exc}); export it again from NNC or nnabla") \
            from None
    except (OSError, EOFError, NotImplementedError, RuntimeError) as exc:  # truncated, encrypted, odd method
        raise InteropError(f"{path}: the .nnp (zip) file cannot be read ({exc}); export it again") from None


def _check_declared(path: str, info: zipfile.ZipInfo, limit: int) -> None:
    where = f"{path}:{info.filename}"
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        # Python inflates bzip2 and lzma members without a bound on the output of one read.
        raise InteropError(f"{where}: compressed with method {info.compress_type}; an .nnp uses deflate "
                           "(or none); export it again from NNC or nnabla")
    if info.file_size > limit:
        raise InteropError(f"{where}: declares {_mib(info.file_size)} inflated, more than the {_mib(limit)} limit "
                           "for this kind of file; refused without inflating it (a zip bomb, or not an .nnp)")
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise InteropError(f"{where}: inflates {info.file_size // max(info.compress_size, 1):,} times "
                           f"({_mib(info.file_size)} from {info.compress_size:,} bytes), more than the "
                           f"{MAX_RATIO} times any real parameter or network file does; refused as a zip bomb")


def _read_member(path: str, zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """Inflate one member in chunks, stopping at its declared size or ``limit``, whichever is smaller."""
    bound = min(info.file_size, limit)
    parts = []
    size = 0
    with zf.open(info) as fh:
        while True:
            chunk = fh.read(_CHUNK)  # zipfile inflates at most this much per call
            if not chunk:
                break
            size += len(chunk)
            if size > bound:
                raise InteropError(f"{path}:{info.filename}: inflates beyond its declared size "
                                   f"({info.file_size:,} bytes) or the {_mib(limit)} limit; the archive is "
                                   "damaged or hostile")
            parts.append(chunk)
    return b"".join(parts)


def read_bounded(path: str, limit: int = MAX_TEXT_BYTES) -> bytes:
    """A plain file's bytes, refusing files over ``limit`` (and folders, FIFOs, devices) with a clear error."""

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise InteropError(f"{path}: not a regular file; give the path of the file to import")
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise InteropError(f"{path}: cannot read the file ({exc.strerror})") from None
    if len(data) > limit:
        raise InteropError(f"{path}: larger than the {_mib(limit)} nnconsole reads from one network file; is "
                           "this the right file?")
    return data
