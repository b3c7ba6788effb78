"""The interop entry points: an NNC/nnabla file imported as a project (``import_file``, ``import_to_project``, which
``nnconsole import`` runs) and a project or a trained run exported (``export_nntxt``, ``export_run``)."""
from __future__ import annotations

import os
import shutil
from typing import List, Optional

from nnconsole.engine.atomic import write_via
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.interop import run_export
from nnconsole.engine.interop.common import relocate_datasets
from nnconsole.engine.interop.formats import IMPORT_EXTENSIONS, NNTXT_EXTENSIONS, SDCPROJ_EXTENSIONS
from nnconsole.engine.interop.nntxt import exporter as nntxt_exporter
from nnconsole.engine.interop.nntxt.importer import import_nntxt
from nnconsole.engine.interop.report import ExportResult, ImportResult, InteropError
from nnconsole.engine.interop.sdcproj.importer import import_sdcproj
from nnconsole.engine.project.errors import ProjectError
from nnconsole.engine.project.io import save_project


def import_file(path: str, workdir: Optional[str] = None) -> ImportResult:
    """Import an NNC / nnabla file as a project (not saved; dataset paths absolute).

    ``workdir`` is where a ``.nnp``'s parameters are written as ``<name>_initial.h5`` (default: a new
    temporary folder). Raises InteropError naming the file, the place and a fix.
    """
    ext = os.path.splitext(path)[1].lower()
    if ext in SDCPROJ_EXTENSIONS:
        return import_sdcproj(path)
    if ext in NNTXT_EXTENSIONS:
        return import_nntxt(path, workdir=workdir)
    raise InteropError(f"{path}: cannot import '{ext or 'a file without extension'}' files; nnconsole imports "
                       f"{', '.join(IMPORT_EXTENSIONS)}")


def export_nntxt(project, path: str, with_extras: bool = True) -> ExportResult:
    """Write ``project`` as an ``.nntxt`` for ``nnabla_cli train -c PATH -o OUTDIR``."""
    return nntxt_exporter.export_nntxt(project, path, with_extras=with_extras)


def export_run(run_dir: str, fmt: str, output: Optional[str] = None, which: str = "final",
               opset: Optional[int] = None, force: bool = False) -> ExportResult:
    """Export a run's trained model as 'nnp', 'nntxt' or 'onnx' (see run_export.export_run)."""
    return run_export.export_run(run_dir, fmt, output, which=which, opset=opset, force=force)


def import_to_project(path: str, out: str, backup: bool = False) -> "tuple":
    """Import ``path`` and save it as the project file ``out`` (``nnconsole import``, which the GUI runs).

    Dataset paths become relative to ``out`` where sensible, a ``.nnp``'s weights are kept beside it
    as ``<stem>_initial.h5`` and named in ``config.initial_parameters`` so training starts from them.
    The saved file is then checked as ``nnconsole info`` checks it: every problem that would refuse it goes
    into the result's ``problems`` (and so its report), so an import is either a valid project or names why not.
    Returns (ImportResult, path of the initial parameters or None).
    """
    out = os.path.abspath(out)
    folder = os.path.dirname(out)
    result = import_file(path, workdir=folder)
    project = result.project
    relocate_datasets(project, out)
    initial = None
    if result.initial_parameters_path:
        initial = os.path.join(folder, os.path.splitext(os.path.basename(out))[0] + "_initial.h5")
        if os.path.abspath(result.initial_parameters_path) != initial:
            # copied through the atomic writer, never renamed over what is there (a device, a FIFO)
            write_via(initial, lambda tmp: shutil.copyfile(result.initial_parameters_path, tmp))
            os.unlink(result.initial_parameters_path)
        project.config.initial_parameters = os.path.basename(initial)
    save_project(project, out, backup=backup)
    result.problems = saved_project_problems(out)
    return result, initial


def saved_project_problems(path: str) -> List[str]:
    """Every error the project file at ``path`` has as ``nnconsole info`` loads it (settings, names, layers,
    shapes, networks and optimizers; the dataset files are read when training starts), each with its place."""
    try:
        load_valid_project(path, check_datasets=False)
    except ProjectError as exc:
        return [str(p) for p in exc.problems if p.severity == "error"]
    return []

