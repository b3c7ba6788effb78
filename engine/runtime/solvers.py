"""nnabla solvers from the CONFIG tab's optimizer, one per learning-rate-multiplier group."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from nnconsole.engine.project.model import Optimizer
# Parameters each solver accepts besides the learning rate (nnabla's names and defaults): the schema's
# solver table, the one place a solver is declared.
from nnconsole.engine.project.schema import SOLVER_PARAMS, SOLVER_SPECS


def make_solver(opt: Optimizer, lr: float) -> Any:
    """One nnabla solver configured from ``opt`` with learning rate (Alpha, eta) ``lr``."""
    import nnabla.solvers as S  # deferred: nnabla stays out of the launcher

    return getattr(S, opt.solver)(lr, **solver_kwargs(opt))


def solver_kwargs(opt: Optimizer) -> Dict[str, Any]:
    """nnabla's keyword arguments for ``opt``'s solver besides the learning rate: its parameters (flags as
    bools) and, for solvers that decay inside (see ``applies_weight_decay_itself``), ``wd`` = weight_decay."""
    spec = SOLVER_SPECS[opt.solver]
    known = SOLVER_PARAMS[opt.solver]
    unknown = set(opt.solver_params) - set(known)
    if unknown:
        raise ValueError(f"optimizer.solver_params: {', '.join(sorted(unknown))} not accepted by {opt.solver} "
                         f"(accepted: {', '.join(known) or 'none'})")
    kwargs: Dict[str, Any] = dict(known, **opt.solver_params)
    for flag in spec.flags:
        if float(kwargs[flag]) not in (0.0, 1.0):
            raise ValueError(f"optimizer.solver_params.{flag}: {opt.solver}'s {flag} is 0 or 1, got {kwargs[flag]!r}")
        kwargs[flag] = bool(float(kwargs[flag]))
    if applies_weight_decay_itself(opt):
        kwargs["wd"] = float(opt.weight_decay)
    return kwargs


def applies_weight_decay_itself(opt: Optimizer) -> bool:
    """AdamW, SgdW and AdaBelief with weight_decouple 1 decay decoupled, inside the solver (its ``wd``); the
    others get the engine's ``solver.weight_decay`` (L2 on the gradient, NNC's WeightDecay)."""
    spec = SOLVER_SPECS.get(opt.solver)
    return bool(spec and spec.decays_inside(opt.solver_params))


def group_parameters(params: Dict[str, Any], multipliers: Dict[str, float]) -> List[Tuple[float, Dict[str, Any]]]:
    """Parameters grouped by learning-rate multiplier (multiplier 0 = frozen, left out), stable order."""
    groups: Dict[float, Dict[str, Any]] = {}
    for name in sorted(params):
        mult = float(multipliers.get(name, 1.0))
        if mult == 0.0:
            continue
        groups.setdefault(mult, {})[name] = params[name]
    return sorted(groups.items(), key=lambda item: item[0])
