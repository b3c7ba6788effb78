"""The decode cache of image datasets: decoded arrays kept in ``.nnconsole-cache/`` (or the user's cache),
keyed by the CSV bytes, the image files' mtimes and sizes, ``normalize`` and the expected shapes."""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from nnconsole.engine.atomic import write_via
from nnconsole.engine.dataset_csv import PathLike, _Table

log = logging.getLogger(__name__)

CACHE_FOLDER = ".nnconsole-cache"
CACHE_VERSION = "nnconsole-dataset-cache-v1"


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


