"""Global Config settings to and from NNC's ``[Config]`` keys and nnabla's ``training_config``.

Which setting each file field holds comes from the settings schema (``Setting.nnc`` and
``Setting.nntxt``), so a new count or flag with a file name there is imported and exported without
touching the importers. Settings whose conversion is more than a copy (precision, the batch size
nnabla keeps on the network and the datasets, the optimizer) stay with their importer.
"""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

from nnconsole.engine.project.model import TrainingConfig
from nnconsole.engine.project.schema import Setting, settings_in

_PLAIN_KINDS = ("int", "bool")
_TRAINING_CONFIG = "training_config."


def nnc_config_settings() -> Tuple[Setting, ...]:
    """The Global Config settings NNC's [Config] section holds as a plain number or flag."""
    return tuple(s for s in settings_in("config") if s.nnc and s.kind in _PLAIN_KINDS)


def training_config_settings() -> Tuple[Setting, ...]:
    """The Global Config settings nnabla's ``training_config`` message holds, with that field's name."""
    return tuple(s for s in settings_in("config") if s.nntxt.startswith(_TRAINING_CONFIG) and s.kind in _PLAIN_KINDS)


def _count(setting: Setting, value: int, current: int, shown: str, notes: List[str], zero_is_unset: bool) -> int:
    """``value`` when it is a valid count, else ``current`` (0 means "not set" in nnabla's protobuf)."""
    if setting.minimum is None or value >= setting.minimum:
        return value
    if value != 0 or not zero_is_unset:
        notes.append(f"{shown}={value}: {setting.label} must be {setting.allowed()}; {current} is used")
    return current


def read_nnc_config(cfg: TrainingConfig, read_int: Callable[[str, int], int],
                    read_bool: Callable[[str, bool], bool], notes: List[str]) -> None:
    """Fill ``cfg`` from .sdcproj [Config] keys (MaxEpoch, BatchSize, MonitorInterval, SaveBest ...).

    ``read_int(key, default)`` and ``read_bool(key, default)`` read one key the importer's way (it
    reports a non-number with its line); a missing key gives the default.
    """
    for setting in nnc_config_settings():
        current = getattr(cfg, setting.key)
        if setting.kind == "bool":
            setattr(cfg, setting.key, read_bool(setting.nnc, current))
        else:
            value = read_int(setting.nnc, current)
            setattr(cfg, setting.key, _count(setting, value, current, setting.nnc, notes, zero_is_unset=False))


def read_training_config(cfg: TrainingConfig, message: Any, present: bool, notes: List[str]) -> None:
    """Fill ``cfg`` from nnabla's ``training_config`` (``present``: the file has that message at all)."""
    for setting in training_config_settings():
        name = setting.nntxt[len(_TRAINING_CONFIG):]
        value = getattr(message, name)
        if setting.kind == "bool":
            if present:
                setattr(cfg, setting.key, bool(value))
        else:
            current = getattr(cfg, setting.key)
            setattr(cfg, setting.key, _count(setting, int(value), current, setting.nntxt, notes, zero_is_unset=True))


def write_training_config(message: Any, cfg: TrainingConfig) -> None:
    """Write the settings nnabla's ``training_config`` holds (max_epoch, monitor_interval, save_best)."""
    for setting in training_config_settings():
        convert = bool if setting.kind == "bool" else int
        setattr(message, setting.nntxt[len(_TRAINING_CONFIG):], convert(getattr(cfg, setting.key)))
