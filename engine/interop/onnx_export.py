"""A trained ``.nnp`` to ONNX through nnabla's own converter (``nnabla-converter``'s OnnxExporter).

Needs two optional packages that nnabla 1.39 does not install: ``onnx`` (1.13.1, the last line that
accepts protobuf 3.20, which nnabla pins) and ``nnabla-converter`` installed with ``--no-deps`` (its
declared dependencies pull TensorFlow, which only its TensorFlow converters need). Layers the
converter cannot translate are listed by name in the error.
"""
from __future__ import annotations

import contextlib
import io
import os
import shlex
import sys
from typing import List, Optional

from nnconsole.engine.atomic import write_via

from nnconsole.engine.interop.report import ExportResult, InteropError
from nnconsole.engine.helper_processes import is_frozen

ONNX_VERSION = "1.13.1"
CONVERTER_VERSION = "1.39.0"
DEFAULT_OPSET = 13


def install_commands(missing: List[str]) -> str:
    """The exact commands, for this interpreter, that install what ONNX export lacks. nnabla-converter goes in
    with --no-deps: its declared dependencies pull TensorFlow, which only its TensorFlow converters need, so no
    extra of ours can carry it for plain pip (``pip install "nnconsole[onnx]"`` brings onnx only)."""
    python = shlex.quote(sys.executable)
    commands = []
    if "onnx" in missing:
        commands.append(f"{python} -m pip install onnx=={ONNX_VERSION}")
    if "nnabla-converter" in missing:
        commands.append(f"{python} -m pip install --no-deps nnabla-converter=={CONVERTER_VERSION}")
    return " && ".join(commands)


def onnx_missing() -> Optional[str]:
    """None when ONNX export can run, else a message naming what is missing and the install command."""
    missing: List[str] = []
    try:
        import onnx  # noqa: F401
    except ImportError:
        missing.append("onnx")
    try:
        import nnabla.utils.converter.onnx  # noqa: F401
    except ImportError:
        missing.append("nnabla-converter")
    if not missing:
        return None

    if is_frozen():
        return ("ONNX export is not included in the nnconsole app; export the run to .nnp here and convert it "
                f"from a pip installation of nnconsole (pip install onnx=={ONNX_VERSION} && pip install --no-deps "
                f"nnabla-converter=={CONVERTER_VERSION})")
    return (f"ONNX export needs the Python package(s) {', '.join(missing)}; install them with: "
            f"{install_commands(missing)}"
            + (" (--no-deps: nnabla-converter declares TensorFlow, which ONNX export does not use)"
               if "nnabla-converter" in missing else ""))


def export_onnx(nnp_path: str, onnx_path: str, opset: int = DEFAULT_OPSET, batch_size: int = 1) -> ExportResult:
    """Convert the runtime network of ``nnp_path`` to ``onnx_path`` (fixed batch size ``batch_size``)."""
    problem = onnx_missing()
    if problem:
        raise InteropError(problem)
    from nnabla.utils.converter.nnabla import NnpImporter  # deferred: nnabla stays out of the GUI
    from nnabla.utils.converter.onnx import OnnxExporter  # deferred: nnabla stays out of the GUI
    from nnabla.utils.converter.utils import func_set_import_nnp, func_set_onnx_support  # deferred: nnabla stays out of the GUI

    if not os.path.isfile(nnp_path):
        raise InteropError(f"{nnp_path}: no such .nnp file; train the project first or give a run directory")
    with contextlib.redirect_stdout(io.StringIO()):  # the converter prints progress lines
        nnp = NnpImporter(nnp_path, expand_network=True, executor_index=None).execute()
    if not len(nnp.protobuf.executor):
        raise InteropError(f"{nnp_path}: the .nnp has no executor (runtime network) to convert")
    network_name = nnp.protobuf.executor[0].network_name
    network = next((n for n in nnp.protobuf.network if n.name == network_name), None)
    missing = func_set_import_nnp(nnp) - func_set_onnx_support()
    if missing:
        names = [f"{f.name} ({f.type})" for f in (network.function if network is not None else []) if f.type in missing]
        raise InteropError(f"{nnp_path}: ONNX cannot hold these layers (no ONNX translation in nnabla's converter): "
                           f"{', '.join(names or sorted(missing))}")
    def convert(tmp: str) -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            OnnxExporter(nnp, int(batch_size), -1, opset=str(int(opset))).execute(tmp)

    try:
        write_via(onnx_path, convert)
    except InteropError:
        raise
    except Exception as exc:
        raise InteropError(f"{nnp_path}: nnabla's ONNX converter failed: {exc}") from exc
    notes = [f"the ONNX model has a fixed batch size of {batch_size} and opset {opset}"]
    lost = ["training network, losses, optimizer, datasets and CONFIG: ONNX holds the inference network only"]
    return ExportResult(path=os.path.abspath(onnx_path), unsupported=lost, notes=notes)
