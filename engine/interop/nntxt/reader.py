"""Import stage 1 for nnabla files: read an .nntxt/.prototxt/.protobuf/.nnp into nnabla's protobuf.

Gives the ``NNablaProtoBuf``, the parameters the file carries and its raw text (for the nnconsole
settings comment an nnconsole-written file starts with). Every failure names the file and line.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Tuple

from google.protobuf import text_format
import io
import h5py
import numpy as np
from nnconsole.engine.interop.archive import MAX_MEMBER_BYTES, read_bounded, read_zip_members
from nnconsole.engine.interop.report import InteropError
from nnconsole.engine.project.schema import EXTRAS_COMMENT, Setting, settings_in
from nnconsole.engine.rundir import safe_json

EXTRAS_PREFIX = "# nnconsole-project:"


def comment_settings(section: str) -> Tuple[Setting, ...]:
    """The settings of ``section`` the schema says the comment carries (``Setting.nntxt`` is ``EXTRAS_COMMENT``):
    the exporter writes each under its key, the importer reads each back checked."""
    return tuple(s for s in settings_in(section) if s.nntxt == EXTRAS_COMMENT)


def read_proto(path: str) -> Tuple[Any, Dict[str, Tuple[Any, bool]], str]:
    """The NNablaProtoBuf of an .nntxt/.prototxt/.protobuf/.nnp, its parameters and its raw text.

    Parameters are ``name -> (numpy array, need_grad)`` from ``parameter`` entries and, in an .nnp,
    its ``.h5``/``.protobuf`` parameter file. Raises InteropError naming the file and the line.
    """
    from nnabla.utils import nnabla_pb2  # deferred: nnabla stays out of the GUI

    proto = nnabla_pb2.NNablaProtoBuf()
    params: Dict[str, Tuple[Any, bool]] = {}
    text_all = ""
    ext = os.path.splitext(path)[1].lower()
    if not os.path.isfile(path):
        raise InteropError(f"{path}: file not found; check the path")

    def merge_text(text: str, where: str) -> None:
        try:
            text_format.Merge(text, proto, allow_unknown_field=True)
        except text_format.ParseError as exc:
            line, col = exc.GetLine(), exc.GetColumn()
            place = f"{where}:{line}:{col}" if line else where
            message = str(exc).split(" : ", 1)[-1]
            raise InteropError(f"{place}: not a valid nnabla protobuf text file ({message}); fix the syntax at "
                               f"line {line} or export the file again") from None

    def merge_binary(data: bytes, where: str) -> None:
        try:
            proto.MergeFromString(data)
        except Exception as exc:
            raise InteropError(f"{where}: not a valid nnabla protobuf file ({exc})") from None

    if ext == ".nnp":
        members = read_zip_members(path, (".nntxt", ".prototxt", ".protobuf", ".h5"),
                                   text_suffixes=(".nntxt", ".prototxt"))
        for name, data in members.items():
            e = os.path.splitext(name)[1].lower()
            where = f"{path}:{name}"
            if e in (".nntxt", ".prototxt"):
                text = data.decode("utf-8", errors="replace")
                text_all += text + "\n"
                merge_text(text, where)
            elif e == ".protobuf":
                merge_binary(data, where)
            elif e == ".h5":
                params.update(_read_h5(data, where))
    elif ext in (".nntxt", ".prototxt", ".txt"):
        raw = read_bounded(path)
        try:
            text_all = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise InteropError(f"{path}:{line}: the file is not UTF-8 text; save it as UTF-8") from None
        merge_text(text_all, path)
    elif ext in (".protobuf", ".pb"):
        merge_binary(read_bounded(path, MAX_MEMBER_BYTES), path)
    else:
        raise InteropError(f"{path}: unknown file type '{ext}'; nnconsole imports .nntxt, .prototxt, .protobuf, "
                           ".nnp and .sdcproj files")
    for p in proto.parameter:
        params[p.variable_name] = (np.array(p.data, dtype=np.float32).reshape(tuple(p.shape.dim)), bool(p.need_grad))
    return proto, params, text_all


def _read_h5(data: bytes, where: str) -> Dict[str, Tuple[Any, bool]]:
    out: Dict[str, Tuple[Any, bool]] = {}
    try:
        with h5py.File(io.BytesIO(data), "r") as hd:
            def visit(name: str, obj: Any) -> None:
                if isinstance(obj, h5py.Dataset):
                    out[name] = (np.array(obj[...], dtype=np.float32), bool(obj.attrs.get("need_grad", True)))
            hd.visititems(visit)
    except OSError as exc:
        raise InteropError(f"{where}: the parameter file cannot be read ({exc})") from None
    return out


EXTRAS_LINES = 5  # the comment is looked for in the file's first lines


def extras_line(text: str) -> int:
    """The 1-based line of the nnconsole settings comment in ``text`` (0 when it has none): for messages."""
    for number, line in enumerate(text.splitlines()[:EXTRAS_LINES], start=1):
        if line.startswith(EXTRAS_PREFIX):
            return number
    return 0


def read_extras(text: str) -> Dict[str, Any]:
    """The nnconsole settings an exported .nntxt keeps in its first comment line (empty when absent)."""
    for line in text.splitlines()[:EXTRAS_LINES]:
        if line.startswith(EXTRAS_PREFIX):
            try:
                data = safe_json.loads(line[len(EXTRAS_PREFIX):])  # someone else's file: nesting bounded
                return data if isinstance(data, dict) else {}
            except ValueError:
                return {}
    return {}
