"""Upgrades of older project files, one function per format step (orange-canvas/napari style).

Each migrator takes the parsed dict of version N and returns the dict of version N+1. Files are
never rewritten on load: the upgraded form is written only when the user saves.

A key added with a default that means what files without it meant needs no step: format 3's ``networks``,
``optimizers`` and ``executors`` (issue 17; absent = Main alone, the CONFIG tab's optimizer, Main's runtime
network evaluated once) are written only when a project has them, so every other file stays byte-for-byte as
it was, and an older nnconsole refuses a file that has them, naming the key, instead of dropping it.
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


@migrator(2)
def _v2_to_v3(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 2 had one ``config.monitor_interval``, iterations between training records, while NNC
    and nnabla use the same name for epochs between validations. Version 3 names both: the old value
    becomes ``log_interval`` and ``validation_interval`` is 1, the every-epoch validation of version 2."""
    out = copy.deepcopy(data)
    config = out.get("config")
    if isinstance(config, dict) and "monitor_interval" in config:
        renamed = {}
        for key, value in config.items():  # keep the key's place in the file
            if key == "monitor_interval":
                renamed["log_interval"] = value
                renamed["validation_interval"] = 1
            else:
                renamed[key] = value
        out["config"] = renamed
    out["format_version"] = 3
    return out


def migrate(data: Dict[str, Any], version: int, target: int) -> Dict[str, Any]:
    """Apply migrators from ``version`` up to ``target``."""
    while version < target:
        data = MIGRATIONS[version](data)
        version += 1
    return data
