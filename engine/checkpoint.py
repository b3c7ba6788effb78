"""Checkpoints written atomically with checksums, and loaded with a fall-back to the previous one.

A checkpoint is three files in ``<run>/checkpoints``: ``ckpt-<it>.h5`` (parameters),
``ckpt-<it>.solver<k>.h5`` (solver states) and ``ckpt-<it>.json`` (position in training and
SHA-256 of the others). The JSON is written last, so a checkpoint without it never counts.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from engine.project.io import atomic_write
from engine.runs import checkpoint_dir, list_checkpoints

KEEP_CHECKPOINTS = 3


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used (missing file or checksum mismatch)."""


@dataclass
class CheckpointState:
    """Where training stood when the checkpoint was taken."""

    iteration: int  # N-worker iterations done in total
    epoch: int  # epoch in progress (0-based)
    samples_into_epoch: int  # samples of this epoch's order already consumed
    samples_seen: int
    workers: int
    elapsed: float
    best_validation_error: Optional[float] = None
    best_epoch: Optional[int] = None
    files: Dict[str, str] = field(default_factory=dict)  # file name -> sha256

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=2).encode()


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(run_dir: str, state: CheckpointState, solvers: List[Any]) -> str:
    """Write parameters, solver states and metadata; prune old checkpoints; return the JSON path."""
    import nnabla as nn

    folder = checkpoint_dir(run_dir)
    os.makedirs(folder, exist_ok=True)
    stem = f"ckpt-{state.iteration:08d}"
    files: Dict[str, str] = {}
    targets = [(f"{stem}.h5", lambda p: nn.save_parameters(p, extension=".h5"))]
    for k, solver in enumerate(solvers):
        targets.append((f"{stem}.solver{k}.h5", solver.save_states))
    try:
        for name, writer in targets:
            final = os.path.join(folder, name)
            tmp = os.path.join(folder, f".{name}.tmp.h5")
            writer(tmp)
            _fsync(tmp)
            files[name] = sha256(tmp)
            os.replace(tmp, final)
        state.files = files
        meta = os.path.join(folder, f"{stem}.json")
        atomic_write(meta, state.to_json())
    except BaseException:
        for name in [n for n, _ in targets]:
            tmp = os.path.join(folder, f".{name}.tmp.h5")
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise
    _prune(run_dir)
    return meta


def _prune(run_dir: str) -> None:
    for meta in list_checkpoints(run_dir)[:-KEEP_CHECKPOINTS]:
        stem = meta[:-5]
        folder = os.path.dirname(meta)
        base = os.path.basename(stem)
        os.unlink(meta)
        for name in os.listdir(folder):
            if name.startswith(base + "."):
                os.unlink(os.path.join(folder, name))


def read_checkpoint(meta_path: str) -> CheckpointState:
    """Read and verify a checkpoint's metadata and checksums; raise CheckpointError if unusable."""
    try:
        with open(meta_path) as fh:
            data = json.load(fh)
        state = CheckpointState(**data)
    except (OSError, ValueError, TypeError) as exc:
        raise CheckpointError(f"{meta_path}: unreadable checkpoint metadata ({exc})") from None
    folder = os.path.dirname(meta_path)
    for name, digest in state.files.items():
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise CheckpointError(f"{path}: checkpoint file missing")
        if sha256(path) != digest:
            raise CheckpointError(f"{path}: checksum mismatch (file corrupt or truncated)")
    return state


def find_usable_checkpoint(run_dir: str, warn=print) -> Optional[str]:
    """The newest checkpoint whose files verify; corrupt ones are reported and skipped."""
    for meta in reversed(list_checkpoints(run_dir)):
        try:
            read_checkpoint(meta)
            return meta
        except CheckpointError as exc:
            warn(f"warning: {exc}; trying the previous checkpoint")
    return None


def load_checkpoint(meta_path: str, solvers: List[Any]) -> CheckpointState:
    """Load parameters and solver states of a verified checkpoint into the current graph."""
    import nnabla as nn

    state = read_checkpoint(meta_path)
    folder = os.path.dirname(meta_path)
    stem = os.path.basename(meta_path)[:-5]
    nn.load_parameters(os.path.join(folder, f"{stem}.h5"))
    for k, solver in enumerate(solvers):
        path = os.path.join(folder, f"{stem}.solver{k}.h5")
        if os.path.isfile(path):
            solver.load_states(path)
    return state
