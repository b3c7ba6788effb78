"""Checkpoints written atomically with checksums, and loaded with a fall-back to the previous one.

A checkpoint is three files in ``<run>/checkpoints``: ``ckpt-<it>.h5`` (parameters),
``ckpt-<it>.solver<k>.h5`` (solver states) and ``ckpt-<it>.json`` (position in training and
SHA-256 of the others). Each file is written to a temp name, fsynced and renamed; the JSON is
written last, so a checkpoint interrupted half-way (crash, full disk) never counts. Parameters
that are NaN or Inf are never saved: the last good checkpoint stays the newest.

On a full disk: the space a checkpoint needs (its arrays plus HDF5's overhead) is reserved with
``posix_fallocate`` before h5py writes anything, so a full disk is an error ("disk full", naming the folder)
before the write starts instead of a crash inside h5py; a checkpoint that fails half-way removes the files it
wrote, and every piece not belonging to a complete checkpoint (temp files of a crashed write included) is
removed after the next checkpoint succeeds, e.g. the first one of a resumed run.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np
from nnconsole.engine.errors import RunFailedError
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.atomic import write_via
from nnconsole.engine.project.io import atomic_write
from nnconsole.engine.rundir.typed_json import RunFileError, read_run_json
from nnconsole.engine.rundir.store import checkpoint_dir, list_checkpoints
from nnconsole.engine.network.parameter_files import ParameterFileError, parameter_differences, read_parameter_file

KEEP_CHECKPOINTS = 3


class CheckpointError(RunFailedError, RuntimeError):
    """A checkpoint that cannot be used (missing file or checksum mismatch)."""


class ResumeRefusedError(CheckpointError):
    """A resume refused before anything ran (not a run directory, still running, no usable checkpoint)."""

    exit_code = ExitCode.BAD_INPUT


class CheckpointDiskFullError(OSError):
    """No room for a checkpoint; the message names the folder and the size (errno ENOSPC: the launcher's
    diagnosis reports a full disk)."""


class NonFiniteParametersError(CheckpointError):
    """Training diverged: some parameters are NaN or Inf, so they are not saved as a checkpoint."""

    diverged = True


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


def non_finite_parameters(params: Optional[Dict[str, Any]] = None) -> List[str]:
    """Names of parameters (nnabla Variables, default: all registered) holding NaN or Inf."""
    import nnabla as nn  # deferred: nnabla stays out of the launcher

    params = nn.get_parameters(grad_only=False) if params is None else params
    return [name for name, var in params.items() if not np.isfinite(var.d).all()]


def save_checkpoint(run_dir: str, state: CheckpointState, solvers: List[Any]) -> str:
    """Write parameters, solver states and metadata; prune old checkpoints; return the JSON path.

    Raises NonFiniteParametersError (writing nothing) when the parameters hold NaN or Inf.
    """
    import nnabla as nn  # deferred: nnabla stays out of the launcher

    bad = non_finite_parameters()
    if bad:
        last = list_checkpoints(run_dir)
        kept = f"the last good one, {os.path.basename(last[-1])[:-5]}, is kept" if last else "there is none yet"
        raise NonFiniteParametersError(
            f"training diverged: parameter(s) {', '.join(bad[:3])}{' ...' if len(bad) > 3 else ''} became NaN or "
            f"Inf by iteration {state.iteration}; no checkpoint was written for this point ({kept}). Lower "
            "optimizer.learning_rate (or the schedule's lr_multiplier), or check the data for extreme values")
    folder = checkpoint_dir(run_dir)
    os.makedirs(folder, exist_ok=True)
    stem = f"ckpt-{state.iteration:08d}"
    files: Dict[str, str] = {}
    params = nn.get_parameters(grad_only=False)
    targets = [(f"{stem}.h5", lambda p: nn.save_parameters(p, params, extension=".h5"))]
    for k, solver in enumerate(solvers):
        targets.append((f"{stem}.solver{k}.h5", solver.save_states))
    _reserve(folder, stem, checkpoint_bytes(params, solvers))
    try:
        for name, writer in targets:  # each file complete and checksummed before the next one starts
            write_via(os.path.join(folder, name),
                      lambda tmp, name=name, writer=writer: (writer(tmp), files.__setitem__(name, sha256(tmp))))
        state.files = files
        meta = os.path.join(folder, f"{stem}.json")
        atomic_write(meta, state.to_json())
    except BaseException as exc:
        for name in files:  # this checkpoint's finished pieces: without its JSON they never count
            _unlink_quietly(os.path.join(folder, name))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise _disk_full(folder, stem, exc) from None
        raise
    _prune(run_dir)
    return meta


HDF5_OVERHEAD = 16 << 10  # bytes per dataset beyond its data (headers, B-tree), generous
RESERVE_MARGIN = 1 << 20


def checkpoint_bytes(params: Dict[str, Any], solvers: List[Any]) -> int:
    """About the bytes a checkpoint's files take: every parameter and solver state array, plus HDF5's overhead."""
    total, count = 0, 0
    for var in params.values():
        total += int(np.prod(var.shape)) * 4
        count += 1
    for solver in solvers:
        try:
            states = solver.get_states()
        except Exception:  # noqa: BLE001 - a solver without get_states: assume two arrays per parameter
            states = None
        if states is None:
            total, count = total * 3, count * 3
            continue
        for state in states.values():
            for var in getattr(state, "pstate", {}).values():
                total += int(np.prod(var.shape)) * 4
                count += 1
            count += 1
    return total + count * HDF5_OVERHEAD + RESERVE_MARGIN


def _reserve(folder: str, stem: str, size: int) -> None:
    """Make sure ``size`` bytes can be written in ``folder`` (allocated, then given back just before the
    write), or raise CheckpointDiskFullError writing nothing."""
    path = os.path.join(folder, f".{stem}.{secrets.token_hex(4)}.reserve")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise _disk_full(folder, stem, exc, size) from None
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):  # no fallocate there: write and see
            raise
    finally:
        os.close(fd)
        _unlink_quietly(path)


def _disk_full(folder: str, stem: str, exc: OSError, size: int = 0) -> CheckpointDiskFullError:
    need = f" (it needs about {size / 1e6:,.1f} MB)" if size else ""
    return CheckpointDiskFullError(exc.errno, f"disk full: checkpoint {stem} cannot be written in {folder}{need}; "
                                   "nothing of it was kept. Free some space, then continue from the last "
                                   "checkpoint with 'nnconsole train --resume RUN'", folder)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _prune(run_dir: str) -> None:
    """Keep the newest KEEP_CHECKPOINTS checkpoints; drop every other piece: older checkpoints, and what
    interrupted writes left (a crash, a full disk, a kill), whatever its iteration."""
    for meta in list_checkpoints(run_dir)[:-KEEP_CHECKPOINTS]:
        os.unlink(meta)
    kept = list_checkpoints(run_dir)
    if not kept:
        return
    folder = checkpoint_dir(run_dir)
    keep = set()
    for meta in kept:
        keep.add(os.path.basename(meta))
        try:
            keep.update(read_checkpoint(meta, verify=False).files)
        except CheckpointError:
            pass
    for name in os.listdir(folder):
        if _PIECE.match(name) and name not in keep:
            _unlink_quietly(os.path.join(folder, name))  # only this writer (rank 0) writes here


_PIECE = re.compile(r"^\.?ckpt-(\d+)\.")


def read_checkpoint(meta_path: str, verify: bool = True) -> CheckpointState:
    """Read a checkpoint's metadata and (``verify``) its files' checksums; raise CheckpointError if unusable."""
    try:
        state = read_run_json(meta_path, CheckpointState, fix="this checkpoint cannot be used")
    except RunFileError as exc:
        raise CheckpointError(f"unreadable checkpoint metadata: {exc}") from None
    negative = [k for k in ("iteration", "epoch", "samples_into_epoch", "samples_seen", "workers")
                if getattr(state, k) < 0]
    if negative:
        raise CheckpointError(f"{meta_path}: field '{negative[0]}' is negative; this checkpoint cannot be used")
    folder = os.path.dirname(meta_path)
    params = os.path.basename(meta_path)[:-5] + ".h5"
    files = state.files
    if not isinstance(files, dict) or params not in files or not all(
            isinstance(n, str) and isinstance(d, str) and n == os.path.basename(n) and n not in ("", ".", "..")
            for n, d in files.items()):
        raise CheckpointError(f"{meta_path}: checkpoint metadata does not list its files properly (damaged?)")
    for name, digest in (files.items() if verify else ()):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise CheckpointError(f"{path}: checkpoint file missing")
        try:
            actual = sha256(path)
        except OSError as exc:
            raise CheckpointError(f"{path}: cannot read checkpoint file ({exc.strerror})") from None
        if actual != digest:
            raise CheckpointError(f"{path}: checksum mismatch (file corrupt or truncated)")
    return state


def find_usable_checkpoint(run_dir: str, warn=print) -> Optional[str]:
    """The newest checkpoint whose files verify; corrupt ones are reported and skipped."""
    for meta in reversed(list_checkpoints(run_dir)):
        try:
            read_checkpoint(meta)
            return meta
        except CheckpointError as exc:
            warn(f"{exc}; trying the previous checkpoint")
    return None


def load_parameters_checked(path: str, params: Dict[str, Any], allow_missing: bool = False,
                            allow_extra: bool = False) -> None:
    """Copy the arrays of ``path`` into the nnabla Variables ``params`` (name -> Variable) after checking
    that names and shapes match; CheckpointError names the file and what differs.

    Unlike ``nn.load_parameters`` nothing is registered or replaced: a file for another network
    cannot slip parameters of other shapes under the graph that was built.
    """
    arrays = read_parameter_file(path)
    differences = parameter_differences({k: v.shape for k, v in arrays.items()},
                                        {k: tuple(v.shape) for k, v in params.items()}, allow_missing, allow_extra)
    if differences:
        raise ParameterFileError(f"{path}: the parameters do not fit this network: " + "; ".join(differences[:6])
                              + ("; ..." if len(differences) > 6 else "") + " (was the network changed after "
                              "these parameters were saved?)")
    for name, array in arrays.items():
        if name in params:
            params[name].d = array


def load_checkpoint(meta_path: str, solvers: List[Any]) -> CheckpointState:
    """Load parameters and solver states of a checkpoint that ``find_usable_checkpoint`` verified."""
    import nnabla as nn  # deferred: nnabla stays out of the launcher

    state = read_checkpoint(meta_path, verify=False)  # its files were just hashed; not again
    folder = os.path.dirname(meta_path)
    stem = os.path.basename(meta_path)[:-5]
    load_parameters_checked(os.path.join(folder, f"{stem}.h5"), nn.get_parameters(grad_only=False))
    try:
        for k, solver in enumerate(solvers):
            path = os.path.join(folder, f"{stem}.solver{k}.h5")
            if os.path.isfile(path):
                solver.load_states(path)
    except Exception as exc:  # noqa: BLE001 - solver states that verify but do not load (other network?)
        raise CheckpointError(f"{meta_path}: the checkpoint's solver states do not fit this network "
                              f"({str(exc).splitlines()[0]})") from None
    return state
