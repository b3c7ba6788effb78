"""Work a trial need not redo: an identical candidate already trained (a duplicate) or its own interrupted run.

A trial's identity is the digest of its designed project (``design_digest``): the Main network as a graph
(layer types, properties, initializers and how layers connect, not their names or places on the canvas) and
the searched values. The sampler may propose a candidate identical to one already trained (two mutations
that give the same network, a choice drawn again); such a trial is not trained: the study is told the earlier
trial's result (``find_original``), and the earlier run's ``trial.json`` lists it under ``duplicates``.

A trial stopped or killed mid-run is enqueued again with its run directory (``RESUME_RUN``); the re-run
continues that run from its checkpoint (``nnconsole train --resume``) when the run has a usable checkpoint and
was made for the same digest (``resumable_run``; ``study.RESUME_RUN``), else it trains from scratch.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Dict, List, Optional

import optuna
from optuna.trial import FrozenTrial, TrialState

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.launch.launcher import check_resumable
from nnconsole.engine.launch.watch import worker_processes
from nnconsole.engine.project.model import Layer, Network
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RunStatus
from nnconsole.engine.rundir.trials import read_trial, write_trial
from nnconsole.engine.search.study import RUN_DIR

DIGEST = "digest"
DUPLICATE_OF = "duplicate_of"
ENDING_WAIT_S = 30.0  # how long a killed run's workers may take to end before its resume is given up


def network_graph(network: Network) -> List[list]:
    """The network as a graph without names: each layer (type, properties, initializers, learning-rate
    multipliers, the indices of its inputs) in a fixed order, the depth-first order from the network's last
    layers back through each layer's inputs, so two lists of the same graph read the same."""
    by_name: Dict[str, Layer] = {layer.name: layer for layer in network.layers}
    used = {name for layer in network.layers for name in layer.inputs}
    order: List[Layer] = []
    seen: set = set()

    def visit(layer: Layer) -> None:
        if layer.name in seen:
            return
        seen.add(layer.name)
        for name in layer.inputs:
            if name in by_name:
                visit(by_name[name])
        order.append(layer)

    for layer in [lay for lay in network.layers if lay.name not in used] + list(network.layers):
        visit(layer)
    index = {layer.name: i for i, layer in enumerate(order)}
    return [[layer.type, layer.params, {k: vars(v) for k, v in sorted(layer.initializers.items())},
             layer.lr_multipliers, [index.get(name, name) for name in layer.inputs],
             index.get(layer.parameter_scope, layer.parameter_scope)] for layer in order]


def design_digest(network: Network, values: dict) -> str:
    """The digest of a trial's candidate: its Main network's graph and its searched values."""
    text = json.dumps([network_graph(network), sorted(values.items())], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def find_original(study: optuna.Study, digest: str, number: int) -> Optional[FrozenTrial]:
    """The first finished (complete or pruned) trial of ``study`` with ``digest``, other than trial ``number``
    and not itself a duplicate; None when the candidate is new."""
    for t in sorted(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)),
                    key=lambda t: t.number):
        if t.number != number and t.user_attrs.get(DIGEST) == digest and DUPLICATE_OF not in t.user_attrs:
            return t
    return None


def note_duplicate(original: FrozenTrial, number: int) -> None:
    """List trial ``number`` in the earlier run's ``trial.json`` as a duplicate of it (no run of its own)."""
    run_dir = original.user_attrs.get(RUN_DIR, "")
    tags = read_trial(run_dir) if run_dir and os.path.isdir(run_dir) else None
    if tags is not None:
        write_trial(run_dir, dict(tags, duplicates=sorted(set(tags.get("duplicates", [])) | {number})))


def resumable_run(run_dir: str, digest: str, why: List[str]) -> str:
    """``run_dir`` when the re-run of an interrupted trial can continue it: a run directory made for the same
    digest, with a usable checkpoint and no process of it left; else "" with the reason appended to ``why``."""
    if not run_dir:
        return ""
    tags = read_trial(run_dir) if os.path.isdir(run_dir) else None
    if tags is None:
        why.append(f"{run_dir} is no trial's run directory any more")
        return ""
    if tags.get(DIGEST) != digest:
        why.append("its candidate differs from the interrupted trial's (it was interrupted before all its values "
                   "were drawn)")
        return ""
    deadline = time.time() + ENDING_WAIT_S
    while worker_processes(run_dir) or _launcher_alive(run_dir):  # a killed search's run may still be ending
        if time.time() >= deadline:
            why.append(f"{run_dir} is still ending")
            return ""
        time.sleep(0.5)
    try:
        check_resumable(run_dir)
    except NnconsoleError as exc:
        why.append(str(exc))
        return ""
    return run_dir


def _launcher_alive(run_dir: str) -> bool:
    status = runs.read_status(run_dir)
    return bool(status and status.status == RunStatus.RUNNING and status.pid != os.getpid() and runs.pid_alive(status.pid))
