"""A trial's project: the ``search`` section's values and structure changes, drawn by the trial's sampler.

Each ``search.params`` entry, and each layer property marked searched (``Layer.search``, NNC's Search flag; see
``project.searched_properties``), is one Optuna parameter named by its target (``optimizer.learning_rate``); a choice
of lists (kernels) is drawn by its index's text, since Optuna's choices are scalars. With ``structure: true``,
up to ``max_mutations`` changes are drawn as ``structure.<k>.rule`` (a policy rule or ``none``),
``structure.<k>.site`` and ``structure.<k>.variant``; a change whose network fails the shape checks is skipped
and recorded. The trial's project is a copy: the user's project is never changed.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, List

import optuna

from nnconsole.engine.project.model import Project, Search
from nnconsole.engine.project.search_targets import resolve_target, set_target
from nnconsole.engine.project.searched_properties import searched_params
from nnconsole.engine.search.mutations import (candidate_problems, describe, multiply_adds, mutate, rule_table, sites,
                                               variants)
from nnconsole.engine.search.policy import Rule

SITE_SLOTS = 64  # the range of the site and variant draws; taken modulo the sites and variants there are


@dataclass
class TrialDesign:
    """What a trial trains: its project, its changes in words, its multiply-adds per sample."""

    project: Project
    values: dict = field(default_factory=dict)
    changes: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    multiply_adds: int = 0


def _choice_value(choice: Any) -> Any:
    return json.dumps(choice) if isinstance(choice, (list, dict)) else choice


def suggest(trial: optuna.Trial, name: str, kind: str, low: float, high: float, step: int, choices: List[Any]) -> Any:
    """One value of a search parameter from ``trial``."""
    if kind == "log_float":
        return trial.suggest_float(name, low, high, log=True)
    if kind == "float":
        return trial.suggest_float(name, low, high)
    if kind == "int":
        return trial.suggest_int(name, int(low), int(high), step=max(1, step))
    drawn = trial.suggest_categorical(name, [_choice_value(c) for c in choices])
    return json.loads(drawn) if isinstance(drawn, str) and drawn[:1] in "[{" else drawn


def design_trial(project: Project, search: Search, trial: optuna.Trial, rules: List[Rule]) -> TrialDesign:
    """The project ``trial`` trains, drawn from ``search``'s space (and ``rules`` with structure search)."""
    out = project.copy()
    out.search = None  # a trial is an ordinary run
    design = TrialDesign(out)
    for param in searched_params(project, search):
        value = suggest(trial, param.target, param.kind, param.low, param.high, param.step, param.choices)
        set_target(out, resolve_target(out, param.target), value)
        design.values[param.target] = value
    if search.structure:
        table = rule_table(rules, project.network)  # fixed for the project: the sampler's choices never change
        names = ["none"] + [name for name, _ in table]
        for k in range(search.max_mutations):
            name = trial.suggest_categorical(f"structure.{k}.rule", names)
            site_draw = trial.suggest_int(f"structure.{k}.site", 0, SITE_SLOTS - 1)
            variant_draw = trial.suggest_int(f"structure.{k}.variant", 0, SITE_SLOTS - 1)
            if name == "none":
                continue
            rule = dict(table)[name]
            where = sites(out.network, rule)
            if not where:
                design.skipped.append(f"{name}: no layer it applies to")
                continue
            site, variant = where[site_draw % len(where)], variant_draw % variants(rule)
            network = mutate(out.network, rule, site, variant)
            problems = candidate_problems(out, network)
            if problems:
                design.skipped.append(f"{describe(rule, site, variant)}: {problems[0]}")
                continue
            out.network = network
            design.changes.append(describe(rule, site, variant))
    design.multiply_adds = multiply_adds(out)
    return design
