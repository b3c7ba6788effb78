"""The one table of solver and learning-rate scheduler names for import and export.

Neural Network Console (.sdcproj), nnabla (.nntxt ``Solver.type``, its ``*_param`` messages) and
nnconsole's own optimizer settings each spell solvers and schedulers their way; the importers and
the exporter translate through these tables only. The settings schema's solver table
(nnconsole.engine.project.schema: parameters, defaults, nnabla's field names) declares each solver;
this module adds the other formats' spellings of it.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Tuple

from nnconsole.engine.project.schema import SOLVERS
from nnconsole.engine.project.schema import SOLVER_SPECS, SOLVER_TABLE

# nnabla's Solver.type -> nnconsole solver; each solver's *_param message and its learning-rate field.
# Derived from the settings schema's solver table, where a solver is declared once.
SOLVER_TYPES: Dict[str, str] = {name: s.name for s in SOLVER_TABLE for name in (s.name,) + s.file_names}
SOLVER_PARAM_FIELDS: Dict[str, str] = {s.name: s.proto_field for s in SOLVER_TABLE}
LR_FIELD: Dict[str, str] = {s.name: s.learning_rate_name for s in SOLVER_TABLE}
# Solvers with their own ``wd`` field (AdamW, SgdW, AdaBelief); ``decays_inside`` says when it is used.
WD_INSIDE: Tuple[str, ...] = tuple(s.name for s in SOLVER_TABLE if s.has_wd_argument)


def decays_inside(solver: str, solver_params: Mapping[str, float]) -> bool:
    """True when ``optimizer.weight_decay`` is the solver's ``wd`` field, not ``Solver.weight_decay``."""
    return SOLVER_SPECS[solver].decays_inside(solver_params)
# Solvers nnabla has but NNC does not (Lamb, Lion): nnabla 1.39's utils/load.py cannot build them either.
NOT_IN_NNC: Tuple[str, ...] = tuple(s.name for s in SOLVER_TABLE if not s.nnc)


def _nnc_key(name: str) -> str:
    return name.lower().replace(" ", "").replace("_", "")


# Each NNC solver's own parameter names (solver_component.txt), normalised -> nnconsole's key.
NNC_SOLVER_PARAMETERS: Dict[str, Dict[str, str]] = {
    s.name: {_nnc_key(nnc_name): key for nnc_name, key, _ in s.nnc} for s in SOLVER_TABLE}

# NNC's solver parameter names (SolverParameterName_k in .sdcproj), lower-cased -> nnconsole's.
# 'learning_rate' and 'weight_decay' go to the optimizer itself, the rest to solver_params.
SOLVER_PARAMETER_ALIASES: Dict[str, str] = {
    "alpha": "learning_rate", "learningrate": "learning_rate", "lr": "learning_rate", "eta": "learning_rate",
    "beta1": "beta1", "beta2": "beta2", "epsilon": "eps", "eps": "eps", "momentum": "momentum",
    "decay": "decay", "rho": "decay", "coefficient": "coefficient", "gamma": "gamma",
    "finallearningrate": "final_lr", "finallr": "final_lr", "final_lr": "final_lr",
    "weightdecay": "weight_decay", "wd": "weight_decay",
}


def nnc_parameter_key(solver: str, nnc_name: str) -> Any:
    """nnconsole's key for an NNC solver parameter name (the solver's own names first, then the aliases)."""
    norm = _nnc_key(nnc_name)
    return NNC_SOLVER_PARAMETERS.get(solver, {}).get(norm) or SOLVER_PARAMETER_ALIASES.get(norm)


def proto_value(solver: str, key: str, value: float) -> Any:
    """``value`` as the nnabla protobuf field wants it: flags (AdaBelief's amsgrad, bias_correction) as bools."""
    return bool(float(value)) if key in SOLVER_SPECS[solver].flags else float(value)

# ------------------------------------------------------------------------------------- schedulers
SCHEDULER_TYPES = {"Exponential": "exponential", "Step": "step", "Cosine": "cosine", "Polynomial": "polynomial"}


def unsupported_solver_message(name: str) -> str:
    return (f"solver {name}: nnconsole has no such solver (it has {', '.join(SOLVERS)}); Adam with the file's "
            "learning rate is used instead")
