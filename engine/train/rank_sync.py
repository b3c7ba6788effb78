"""Keeping every rank's model identical, and saying precisely where it is not.

Gradients are averaged every update, so learned parameters stay identical by construction. State that
is not learned (nnabla parameters with ``need_grad=False``: BatchNormalization's running mean and
variance) is updated by each rank from its own batches and drifts apart; the trainer averages it over
the ranks before every validation, checkpoint and export (ChainerMN's ``allreduce_persistent``).
At the end of a run the ranks compare checksums; when they differ, ``divergence_report`` names the
parameters and by how much, and the run fails instead of finishing.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np
import zlib
from nnconsole.engine.test_seams import seam_int

SHOWN_PARAMETERS = 5


def persistent_state(params: Dict[str, Any]) -> List[Any]:
    """The parameters that gradients do not update (need_grad=False), in name order on every rank."""
    return [params[name] for name in sorted(params) if not params[name].need_grad]


def parameter_spread(comm: Any, params: Dict[str, Any]) -> List[Tuple[str, float]]:
    """(name, largest absolute difference between ranks) of every parameter that is not identical.

    Collective: every rank must call it with the same parameter names (one reduction per parameter;
    only used once a checksum comparison has failed).
    """
    differing = []
    for name in sorted(params):
        values = np.asarray(params[name].d, dtype=np.float64).ravel()
        if not values.size:
            continue
        both = comm.max(np.concatenate([values, -values]))
        spread = float(np.max(both[:values.size] + both[values.size:]))  # max - min, element by element
        if spread != 0.0:  # NaN (a rank diverged) counts as a difference
            differing.append((name, spread))
    return differing


def divergence_report(differing: List[Tuple[str, float]], total: int) -> str:
    """The message of a run whose ranks ended with different parameters."""
    if not differing:
        return ("parameters differ between ranks at the end of training in their bits only (signed zeros or NaN "
                "payloads); no final model was written. Report this as a bug with the run's logs folder.")
    shown = ", ".join(f"{name} (max abs difference {spread:.3g})" for name, spread in differing[:SHOWN_PARAMETERS])
    more = f" and {len(differing) - SHOWN_PARAMETERS} more" if len(differing) > SHOWN_PARAMETERS else ""
    return (f"parameters differ between ranks at the end of training: {len(differing)} of {total} parameters "
            f"differ: {shown}{more}. The workers did not train one model, so no final model was written; "
            "the checkpoints hold rank 0's parameters. Report this as a bug with the run's logs folder.")


def perturb_for_test(rank: int, params: Dict[str, Any]) -> bool:
    """Tests: on the rank named by the ``diverge_rank`` test seam, change the first learned parameter (to prove
    that differing ranks fail the run)."""

    if seam_int("diverge_rank") != rank:
        return False
    learned = [name for name in sorted(params) if params[name].need_grad]
    if not learned:
        return False
    values = np.array(params[learned[0]].d, dtype=np.float32, copy=True)
    values.flat[0] += np.float32(1e-3)
    params[learned[0]].d = values
    return True


def parameters_crc(params: Dict[str, Any]) -> int:
    """CRC-32 of every parameter's bytes in name order: equal on all ranks when they agree."""

    crc = 0
    for name in sorted(params):
        crc = zlib.crc32(np.ascontiguousarray(params[name].d, dtype=np.float32).tobytes(), crc)
    return crc


def crc_range(comm: Any, params: Dict[str, Any]) -> Tuple[int, int]:
    """(smallest, largest) parameters CRC over the ranks, in one collective; equal when all ranks agree."""
    crc = float(parameters_crc(params))
    high, neg_low = comm.max([crc, -crc])
    return int(-neg_low), int(high)
