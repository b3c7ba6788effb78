"""Interoperability with nnabla and Neural Network Console files (GitHub issue 6).

- ``import_file(path)``: an NNC/nnabla ``.nntxt``/``.prototxt``/``.protobuf``/``.nnp`` or an NNC desktop
  ``.sdcproj`` as an ``ImportResult`` (project, unsupported, notes, initial_parameters_path).
- ``export_nntxt(project, path)``: a project as an ``.nntxt`` that ``nnabla_cli train`` accepts.
- ``export_run(run_dir, fmt, output)``: a trained run's model as ``.nnp``, ``.nntxt`` (+ ``.h5``) or ONNX.

Importers run one pipeline (``pipeline``): a format's reader (``nntxt_read``, ``sdcproj_read``), its
graph stage (``nntxt_network``, ``sdcproj_network``: layer types converted by their registrations in
nnconsole.engine.layers), the shared steps, its settings stage (``*_settings``, solver and scheduler
names from ``solver_table``) and the report. Nothing here imports nnabla or Qt at import time; the
heavy modules load on first use. The importable extensions are in ``formats`` (constants only), the one
module of this package the GUI imports: the GUI imports files through ``nnconsole import``, a subprocess.
"""
from __future__ import annotations

import os
from typing import Optional

from nnconsole.engine.interop.formats import IMPORT_EXTENSIONS, IMPORT_FILTER, NNTXT_EXTENSIONS, SDCPROJ_EXTENSIONS
from nnconsole.engine.interop.report import ExportResult, ImportResult, InteropError
from nnconsole.engine.project.io import save_project


def import_file(path: str, workdir: Optional[str] = None) -> ImportResult:
    """Import an NNC / nnabla file as a project (not saved; dataset paths absolute).

    ``workdir`` is where a ``.nnp``'s parameters are written as ``<name>_initial.h5`` (default: a new
    temporary folder). Raises InteropError naming the file, the place and a fix.
    """
    ext = os.path.splitext(path)[1].lower()
    if ext in SDCPROJ_EXTENSIONS:
        from nnconsole.engine.interop.sdcproj.importer import import_sdcproj
        return import_sdcproj(path)
    if ext in NNTXT_EXTENSIONS:
        from nnconsole.engine.interop.nntxt.importer import import_nntxt
        return import_nntxt(path, workdir=workdir)
    raise InteropError(f"{path}: cannot import '{ext or 'a file without extension'}' files; nnconsole imports "
                       f"{', '.join(IMPORT_EXTENSIONS)}")


def export_nntxt(project, path: str, with_extras: bool = True) -> ExportResult:
    """Write ``project`` as an ``.nntxt`` for ``nnabla_cli train -c PATH -o OUTDIR``."""
    from nnconsole.engine.interop.nntxt.exporter import export_nntxt as _export
    return _export(project, path, with_extras=with_extras)


def export_run(run_dir: str, fmt: str, output: Optional[str] = None, which: str = "final",
               opset: Optional[int] = None, force: bool = False) -> ExportResult:
    """Export a run's trained model as 'nnp', 'nntxt' or 'onnx' (see run_export.export_run)."""
    from nnconsole.engine.interop.run_export import export_run as _export
    return _export(run_dir, fmt, output, which=which, opset=opset, force=force)


__all__ = ["ExportResult", "ImportResult", "InteropError", "IMPORT_EXTENSIONS", "IMPORT_FILTER", "export_nntxt",
           "export_run", "import_file"]


def import_to_project(path: str, out: str, backup: bool = False) -> "tuple":
    """Import ``path`` and save it as the project file ``out`` (``nnconsole import``, which the GUI runs).

    Dataset paths become relative to ``out`` where sensible, a ``.nnp``'s weights are kept beside it
    as ``<stem>_initial.h5`` and named in ``config.initial_parameters`` so training starts from them.
    Returns (ImportResult, path of the initial parameters or None).
    """
    import shutil


    from nnconsole.engine.interop.common import relocate_datasets

    out = os.path.abspath(out)
    folder = os.path.dirname(out)
    result = import_file(path, workdir=folder)
    project = result.project
    relocate_datasets(project, out)
    initial = None
    if result.initial_parameters_path:
        initial = os.path.join(folder, os.path.splitext(os.path.basename(out))[0] + "_initial.h5")
        if os.path.abspath(result.initial_parameters_path) != initial:
            shutil.move(result.initial_parameters_path, initial)
        project.config.initial_parameters = os.path.basename(initial)
    save_project(project, out, backup=backup)
    return result, initial

