"""Upgrades of older project files, one function per format step (orange-canvas/napari style).

Each migrator takes the parsed dict of version N and returns the dict of version N+1. Files are
never rewritten on load: the upgraded form is written only when the user saves.
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Dict

Migrator = Callable[[Dict[str, Any]], Dict[str, Any]]
MIGRATIONS: Dict[int, Migrator] = {}


def migrator(from_version: int) -> Callable[[Migrator], Migrator]:
    def register(fn: Migrator) -> Migrator:
        MIGRATIONS[from_version] = fn
        return fn
    return register


@migrator(1)
def _v1_to_v2(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 1 (nnconsole 0.0.x) kept the layer list directly under ``network``, inputs as a
    comma-separated string, the optimizer inside ``config`` with ``lr``/``lr_decay``/``lr_decay_interval``,
    and a top-level ``gpus`` count instead of the ``multi_gpu`` section."""
    out = copy.deepcopy(data)
    network = out.get("network")
    if isinstance(network, list):
        out["network"] = {"layers": network}
    for layer in (out.get("network") or {}).get("layers", []) or []:
        if isinstance(layer, dict) and isinstance(layer.get("inputs"), str):
            layer["inputs"] = [s.strip() for s in layer["inputs"].split(",") if s.strip()]
    config = out.get("config")
    if isinstance(config, dict) and isinstance(config.get("optimizer"), dict):
        old = config.pop("optimizer")
        renames = {"lr": "learning_rate", "lr_decay": "lr_multiplier", "lr_decay_interval": "lr_update_interval"}
        out["optimizer"] = {renames.get(k, k): v for k, v in old.items()}
    if "gpus" in out:
        out.setdefault("multi_gpu", {})["workers"] = out.pop("gpus")
    out["format_version"] = 2
    return out


def migrate(data: Dict[str, Any], version: int, target: int) -> Dict[str, Any]:
    """Apply migrators from ``version`` up to ``target``."""
    while version < target:
        data = MIGRATIONS[version](data)
        version += 1
    return data
