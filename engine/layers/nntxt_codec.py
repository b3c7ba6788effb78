"""Conversion between a layer's parameters and nnabla's protobuf ``Function`` message (.nntxt/.nnp).

Layer modules use these helpers in their ``to_nntxt``/``from_nntxt`` hooks; a type whose parameters
map one to one onto protobuf fields only lists them in ``LayerSpec.nntxt_fields`` and the generic
``write_fields``/``read_fields`` here do the rest. Pure Python on the message objects: nothing here
imports nnabla (the importer and exporter hand in messages they created).

Axes: nnabla's protobuf counts the batch axis, nnconsole and NNC's property sheet do not.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

AXIS_PARAMS = ("axis", "axes")


class Unsupported(Exception):
    """A function whose settings nnconsole's layer cannot express; the message says which."""


def axis_to_nnabla(a: int) -> int:
    """An axis without the batch axis (nnconsole) -> with it (nnabla); negative axes count from the end."""
    return int(a) + 1 if a >= 0 else int(a)


def axis_from_nnabla(a: int) -> int:
    """An axis counted with the batch axis (nnabla) -> without it (nnconsole); negative axes are kept."""
    return int(a) - 1 if a >= 0 else int(a)


def set_shape(msg: Any, dims: Sequence[int]) -> None:
    """Replace a Shape message's dims."""
    msg.ClearField("dim")
    msg.dim.extend(int(d) for d in dims)


def dims(shape_msg: Any) -> List[int]:
    return [int(d) for d in shape_msg.dim]


def f7(value: Any) -> float:
    """A float read from the protobuf (stored as float32) rounded to the 7 digits it really has."""
    return float(f"{float(value):.7g}")


def per_dim_or(values: List[int], n: int, fill: int) -> List[int]:
    """``values`` or, when the file left them out, ``n`` copies of ``fill``."""
    return values if values else [fill] * n


def _split(path: str) -> tuple:
    message, _, name = path.partition(".")
    return message, name


def write_fields(f: Any, fields: Mapping[str, str], params: Mapping[str, Any]) -> None:
    """Set each ``param -> 'message.field'`` of ``fields`` on function ``f`` from ``params``."""
    for pname, path in fields.items():
        message, name = _split(path)
        msg = getattr(f, message)
        value = params[pname]
        if pname in AXIS_PARAMS:
            if isinstance(value, (list, tuple)):
                getattr(msg, name).extend(axis_to_nnabla(a) for a in value)
            else:
                setattr(msg, name, axis_to_nnabla(value))
        elif isinstance(value, (list, tuple)):
            getattr(msg, name).extend(int(v) for v in value)
        elif isinstance(value, bool):
            setattr(msg, name, value)
        elif isinstance(value, int):
            setattr(msg, name, int(value))
        elif isinstance(value, float):
            setattr(msg, name, float(value))
        else:
            setattr(msg, name, value)


def read_fields(f: Any, fields: Mapping[str, str]) -> Dict[str, Any]:
    """The parameters ``fields`` names, read from function ``f``; none when its message is absent
    (nnabla then uses the defaults, as the registry does)."""
    out: Dict[str, Any] = {}
    for pname, path in fields.items():
        message, name = _split(path)
        if not f.HasField(message):
            continue
        value = getattr(getattr(f, message), name)
        if pname in AXIS_PARAMS:
            # (protobuf's repeated containers have no __iter__ attribute: test for a scalar instead)
            out[pname] = axis_from_nnabla(value) if isinstance(value, int) else \
                [axis_from_nnabla(a) for a in value]
        elif isinstance(value, float):
            out[pname] = f7(value)
        elif not isinstance(value, (str, bool, int)):
            out[pname] = [int(v) for v in value]
        else:
            out[pname] = value
    return out
