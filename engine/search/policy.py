"""NNC's structure-search policy (``structure_search_policy.ini``) read into rules.

Each section is a rule: ``Cond`` lists the layer types it applies to (``-1:`` and ``*`` marks are NNC's and
kept as written; the type is what follows them) and ``Action`` the change: ``RemoveLayer``, ``RemoveLayers``,
``InsertLayer(T1,T2,...)`` (one of the types is inserted after the matching layer; several InsertLayer
make a chain), ``RemoveUntilJoin`` and ``Branch``. nnconsole ships NNC's file as the default
(``resources/structure_search_policy.ini``); a project may name its own copy (``search.policy``).
"""
from __future__ import annotations

import configparser
import os
import re
from dataclasses import dataclass
from typing import List, Tuple

from nnconsole.engine.errors import NnconsoleError

DEFAULT_POLICY = os.path.join(os.path.dirname(__file__), "resources", "structure_search_policy.ini")
ACTIONS = ("RemoveLayer", "RemoveLayers", "InsertLayer", "RemoveUntilJoin", "Branch")
_CALL = re.compile(r"(\w+)(?:\(([^)]*)\))?")


class PolicyError(NnconsoleError, ValueError):
    """A policy file that cannot be read; the message names the file, the section and the fix."""


@dataclass(frozen=True)
class Rule:
    """One section: the layer types it matches and its actions as (name, argument types)."""

    name: str
    conditions: Tuple[str, ...]
    actions: Tuple[Tuple[str, Tuple[str, ...]], ...]


def bare_type(text: str) -> str:
    """'-1:Convolution' -> 'Convolution'; '*SmallerAffine' -> 'SmallerAffine'."""
    return text.split(":")[-1].lstrip("*").strip()


def read_policy(path: str = "") -> List[Rule]:
    """The rules of the policy at ``path`` (empty: NNC's, as shipped)."""
    path = path or DEFAULT_POLICY
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keep NNC's capitalisation
    try:
        with open(path, encoding="utf-8") as fh:
            parser.read_file(fh)
    except (OSError, configparser.Error) as exc:
        raise PolicyError(f"{path}: cannot read the structure-search policy ({exc}); fix the file or set "
                          "search.policy to '' for NNC's") from None
    rules = []
    for section in parser.sections():
        cond, action = parser[section].get("Cond", ""), parser[section].get("Action", "")
        if not cond or not action:
            raise PolicyError(f"{path}: [{section}] needs Cond= and Action= lines, as NNC's policy has")
        actions = []
        for name, args in _CALL.findall(action):
            if name not in ACTIONS:
                raise PolicyError(f"{path}: [{section}] Action '{name}' is not one of {', '.join(ACTIONS)}")
            actions.append((name, tuple(a.strip() for a in args.split(",") if a.strip())))
        rules.append(Rule(section, tuple(c.strip() for c in cond.split(",") if c.strip()), tuple(actions)))
    return rules
