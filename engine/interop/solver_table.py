"""The one table of solver and learning-rate scheduler names for import and export.

Neural Network Console (.sdcproj), nnabla (.nntxt ``Solver.type``, its ``*_param`` messages) and
nnconsole's own optimizer settings each spell solvers and schedulers their way; the importers and
the exporter translate through these tables only. The settings schema (what a solver's parameters
are, their defaults and checks) is nnconsole.engine.project / engine.solvers; this module is the
name mapping between file formats.
"""
from __future__ import annotations

from typing import Dict

from nnconsole.engine.project.model import ALPHA_SOLVERS, SOLVERS

# nnabla's Solver.type -> (nnconsole solver, name of the learning-rate field in its *_param message).
SOLVER_TYPES: Dict[str, str] = {s: s for s in SOLVERS}
SOLVER_TYPES["SGD"] = "Sgd"
SOLVER_PARAM_FIELDS: Dict[str, str] = {
    "Sgd": "sgd_param", "Momentum": "momentum_param", "Nesterov": "nesterov_param", "Adam": "adam_param",
    "AdamW": "adamw_param", "Adagrad": "adagrad_param", "RMSprop": "rmsprop_param",
    "AdaBound": "adabound_param", "Lars": "lars_param",
}
LR_FIELD: Dict[str, str] = {s: ("alpha" if s in ALPHA_SOLVERS else "lr") for s in SOLVERS}

# NNC's solver parameter names (SolverParameterName_k in .sdcproj), lower-cased -> nnconsole's.
# 'learning_rate' and 'weight_decay' go to the optimizer itself, the rest to solver_params.
SOLVER_PARAMETER_ALIASES: Dict[str, str] = {
    "alpha": "learning_rate", "learningrate": "learning_rate", "lr": "learning_rate", "eta": "learning_rate",
    "beta1": "beta1", "beta2": "beta2", "epsilon": "eps", "eps": "eps", "momentum": "momentum",
    "decay": "decay", "rho": "decay", "coefficient": "coefficient", "gamma": "gamma",
    "finallearningrate": "final_lr", "finallr": "final_lr", "final_lr": "final_lr",
    "weightdecay": "weight_decay", "wd": "weight_decay",
}

# ------------------------------------------------------------------------------------- schedulers
SCHEDULER_TYPES = {"Exponential": "exponential", "Step": "step", "Cosine": "cosine", "Polynomial": "polynomial"}


def unsupported_solver_message(name: str) -> str:
    return (f"solver {name}: nnconsole has no such solver (it has {', '.join(SOLVERS)}); Adam with the file's "
            "learning rate is used instead")
