"""nnabla's parameter ``.h5`` files read without nnabla (h5py): the arrays, or only their shapes, by parameter name,
and how they differ from what a network expects. Checks (initial parameters) and the runtime (checkpoints,
evaluation) share it."""
from __future__ import annotations

from typing import Any, Dict, List

import h5py
import numpy as np
from nnconsole.engine.errors import ExitCode, RunFailedError


class ParameterFileError(RunFailedError, RuntimeError):
    """A parameter .h5 file that is damaged or does not fit the network: bad input, not a crash."""

    exit_code = ExitCode.BAD_INPUT



def read_parameter_file(path: str, shapes_only: bool = False) -> Dict[str, Any]:
    """The arrays (or, with ``shapes_only``, just their shapes) of an nnabla parameter ``.h5`` file by
    parameter name; CheckpointError naming the file when it is missing, truncated or not such a file."""

    arrays: Dict[str, Any] = {}
    try:
        with h5py.File(path, "r") as hd:
            def visit(name: str, obj: Any) -> None:
                if isinstance(obj, h5py.Dataset):
                    arrays[name] = tuple(obj.shape) if shapes_only else np.asarray(obj[...])
            hd.visititems(visit)
    except FileNotFoundError:
        raise ParameterFileError(f"{path}: parameter file not found") from None
    except (OSError, KeyError, ValueError, RuntimeError) as exc:
        reason = str(exc).split("(", 1)[-1].rstrip(")") if "(" in str(exc) else str(exc)
        raise ParameterFileError(f"{path}: not a readable nnabla parameter file ({reason}); it is damaged or "
                              "truncated, use another one (parameters_final.h5, an earlier checkpoint)") from None
    return arrays


def parameter_differences(found: Dict[str, tuple], expected: Dict[str, tuple], allow_missing: bool = False,
                          allow_extra: bool = False) -> List[str]:
    """What differs between the parameter shapes of a file and of the network, in words (empty: they match).

    ``allow_missing``: the file may lack some of the network's parameters (they keep their initial
    values); ``allow_extra``: the file may hold parameters the network does not use.
    """
    def listed(names: List[str]) -> str:
        return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")

    problems = []
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    if missing and not allow_missing:
        problems.append(f"the network's {listed(missing)} {'is' if len(missing) == 1 else 'are'} not in the file")
    if extra and not allow_extra:
        problems.append(f"the file's {listed(extra)} {'is' if len(extra) == 1 else 'are'} not in the network")
    for name in sorted(set(found) & set(expected)):
        if tuple(found[name]) != tuple(expected[name]):
            problems.append(f"{name} is {tuple(found[name])} in the file but {tuple(expected[name])} in the network")
    return problems
