"""nnabla solvers from the CONFIG tab's optimizer, one per learning-rate-multiplier group."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from nnconsole.engine.project.model import Optimizer
# Parameters each solver accepts besides the learning rate (nnabla's names and defaults): the schema's
# solver table, the one place a solver is declared.
from nnconsole.engine.project.schema import SOLVER_PARAMS, SOLVER_SPECS


def make_solver(opt: Optimizer, lr: float) -> Any:
    """One nnabla solver configured from ``opt`` with learning rate (or Alpha) ``lr``."""
    import nnabla.solvers as S

    known = SOLVER_PARAMS[opt.solver]
    unknown = set(opt.solver_params) - set(known)
    if unknown:
        raise ValueError(f"optimizer.solver_params: {', '.join(sorted(unknown))} not accepted by {opt.solver} "
                         f"(accepted: {', '.join(known) or 'none'})")
    kwargs = dict(known, **opt.solver_params)
    if applies_weight_decay_itself(opt):
        kwargs["wd"] = opt.weight_decay
    factory = getattr(S, opt.solver)
    return factory(lr, **kwargs)


def applies_weight_decay_itself(opt: Optimizer) -> bool:
    """AdamW decouples weight decay inside the solver; the others get ``solver.weight_decay``."""
    spec = SOLVER_SPECS.get(opt.solver)
    return bool(spec and spec.decoupled_weight_decay)


def group_parameters(params: Dict[str, Any], multipliers: Dict[str, float]) -> List[Tuple[float, Dict[str, Any]]]:
    """Parameters grouped by learning-rate multiplier (multiplier 0 = frozen, left out), stable order."""
    groups: Dict[float, Dict[str, Any]] = {}
    for name in sorted(params):
        mult = float(multipliers.get(name, 1.0))
        if mult == 0.0:
            continue
        groups.setdefault(mult, {})[name] = params[name]
    return sorted(groups.items(), key=lambda item: item[0])
