"""Checkpoints written atomically with checksums, and loaded with a fall-back to the previous one.

A checkpoint is three files in ``<run>/checkpoints``: ``ckpt-<it>.h5`` (parameters),
``ckpt-<it>.solver<k>.h5`` (solver states) and ``ckpt-<it>.json`` (position in training and
SHA-256 of the others). Each file is written to a temp name, fsynced and renamed; the JSON is
written last, so a checkpoint interrupted half-way (crash, full disk) never counts. Parameters
that are NaN or Inf are never saved: the last good checkpoint stays the newest.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
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
    targets = [(f"{stem}.h5", lambda p: nn.save_parameters(p, extension=".h5"))]
    for k, solver in enumerate(solvers):
        targets.append((f"{stem}.solver{k}.h5", solver.save_states))
    for name, writer in targets:  # each file complete and checksummed before the next one starts
        write_via(os.path.join(folder, name),
                  lambda tmp, name=name, writer=writer: (writer(tmp), files.__setitem__(name, sha256(tmp))))
    state.files = files
    meta = os.path.join(folder, f"{stem}.json")
    atomic_write(meta, state.to_json())
    _prune(run_dir)
    return meta


def _prune(run_dir: str) -> None:
    """Keep the newest KEEP_CHECKPOINTS checkpoints; drop the leftovers of interrupted writes."""
    for meta in list_checkpoints(run_dir)[:-KEEP_CHECKPOINTS]:
        stem = meta[:-5]
        folder = os.path.dirname(meta)
        base = os.path.basename(stem)
        os.unlink(meta)
        for name in os.listdir(folder):
            if name.startswith(base + "."):
                os.unlink(os.path.join(folder, name))
    kept = list_checkpoints(run_dir)
    if not kept:
        return
    folder = checkpoint_dir(run_dir)
    complete = {int(os.path.basename(m)[5:-5]) for m in kept}
    newest = max(complete)
    for name in os.listdir(folder):
        found = _PIECE.match(name)
        if found and int(found.group(1)) < newest and int(found.group(1)) not in complete:
            try:  # files of a checkpoint whose write was cut short (crash, full disk): never usable
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass


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
