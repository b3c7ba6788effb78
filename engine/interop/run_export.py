"""Export a training run's model: ``.nnp`` (as training wrote it), ``.nntxt`` (+ parameters) or ONNX."""
from __future__ import annotations

import os
import shutil
from typing import List, Optional

from nnconsole.engine.interop.report import ExportResult, InteropError
from nnconsole.engine.rundir.protocol import RESOLVED_FILE
from nnconsole.engine.atomic import target_problem, write_via
from nnconsole.engine.runtime.nnp import export_nnp
from nnconsole.engine.project.io import load_project
from nnconsole.engine.interop.nntxt.exporter import export_nntxt
from nnconsole.engine.interop.onnx_export import DEFAULT_OPSET, export_onnx

FORMATS = ("nnp", "nntxt", "onnx")


def refuse_existing(paths: List[str], force: bool) -> None:
    """Refuse to write over a file that exists (an earlier export, the .nntxt a project was imported
    from) unless the user said ``--force``; the check happens before anything is written. What is not a
    file (a folder, a socket, a path through a file) is refused even with ``--force``: it is never replaced."""
    for p in paths:
        problem = target_problem(p)
        if problem:
            raise InteropError(f"{problem}; choose another -o")
    taken = [p for p in paths if os.path.lexists(p)]
    if taken and not force:
        raise InteropError(f"{', '.join(taken)} exists; choose another -o, move it away, or add --force to "
                           "replace it")


def _copy(source: str, target: str) -> None:
    """Copy atomically, so a replaced file is never left half written."""

    write_via(target, lambda tmp: shutil.copyfile(source, tmp))


def _run_files(run_dir: str, which: str):
    if not os.path.isdir(run_dir):
        raise InteropError(f"{run_dir}: not a directory; give a run directory (results/<project>/<date>)")
    project_file = os.path.join(run_dir, RESOLVED_FILE)
    if not os.path.isfile(project_file):
        raise InteropError(f"{run_dir}: not a run directory (no {RESOLVED_FILE}); give the folder "
                           "'nnconsole train' printed as 'run directory'")
    params = os.path.join(run_dir, f"parameters_{which}.h5")
    nnp = os.path.join(run_dir, f"model_{which}.nnp")
    if not os.path.isfile(params) and not os.path.isfile(nnp):
        hint = " (the run kept no best model; use the final one)" if which == "best" else \
            " (the run has not finished; wait for it or resume it)"
        raise InteropError(f"{run_dir}: no trained model '{which}'{hint}")
    return project_file, params, nnp


def _ensure_nnp(project_file: str, params: str, nnp: str) -> str:
    if os.path.isfile(nnp):
        return nnp

    project = load_project(project_file)
    return export_nnp(project, params, nnp)


def export_run(run_dir: str, fmt: str, output: Optional[str] = None, which: str = "final",
               opset: Optional[int] = None, force: bool = False) -> ExportResult:
    """Export run ``run_dir``'s ``which`` ('final' or 'best') model as ``fmt`` to ``output``.

    Default output: ``<run_dir>/model_<which>.<fmt>``. ``nntxt`` writes the whole training setup (for
    ``nnabla_cli train``) and copies the trained parameters next to it as ``<output stem>.h5``
    (``nnabla_cli forward -c X.nntxt -p X.h5 ...``).
    """
    if fmt not in FORMATS:
        raise InteropError(f"unknown format '{fmt}'; choose one of {', '.join(FORMATS)}")
    if which not in ("final", "best"):
        raise InteropError(f"unknown model '{which}'; choose final or best")
    project_file, params, nnp = _run_files(run_dir, which)
    output = output or os.path.join(run_dir, f"model_{which}.{fmt}")
    if fmt == "nnp" and os.path.isfile(nnp) and os.path.abspath(output) == os.path.abspath(nnp):
        pass  # the run's own model, exported where it already is: nothing is written
    elif fmt == "nntxt" and os.path.isfile(params):
        refuse_existing([output, os.path.splitext(output)[0] + ".h5"], force)
    else:
        refuse_existing([output], force)
    os.makedirs(os.path.dirname(os.path.abspath(output)) or ".", exist_ok=True)
    if fmt == "nnp":
        source = _ensure_nnp(project_file, params, nnp)
        if os.path.abspath(source) != os.path.abspath(output):
            _copy(source, output)
        return ExportResult(path=os.path.abspath(output), unsupported=[
            "training network, losses, optimizer, datasets and CONFIG: the .nnp holds the runtime network and its "
            "parameters (use --format nntxt for the training setup)"])
    if fmt == "onnx":

        source = _ensure_nnp(project_file, params, nnp)
        return export_onnx(source, output, opset=opset or DEFAULT_OPSET)


    project = load_project(project_file)
    result = export_nntxt(project, output)
    if os.path.isfile(params):
        target = os.path.splitext(output)[0] + ".h5"
        _copy(params, target)
        result.extra_files.append(os.path.abspath(target))
        result.notes.append(f"trained parameters: nnabla_cli forward -c {output} -p {target} -d DATA.csv -o OUTDIR")
    return result
