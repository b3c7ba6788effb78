"""Interoperability with nnabla and Neural Network Console files: import as a project, export projects and runs.

The entry points are in ``files`` (``import_file``, ``import_to_project``, ``export_nntxt``, ``export_run``).
Importers run one pipeline (``pipeline``): a format's reader (``nntxt.reader``, ``sdcproj.reader``), its graph
stage (``nntxt.network``, ``sdcproj.network``: layer types converted by their registrations in the layer
registry), the shared steps (``common``, ``mapping``, ``netgraph``), its settings stage (``*.settings``, solver
and scheduler names from ``solver_table``, Global Config from ``settings_map``) and the report (``report``).
``run_export`` and ``onnx_export`` write a trained run's model. Nothing here imports nnabla or Qt at import
time. The importable extensions are in ``formats`` (constants only), the one module of this package the GUI
imports: the GUI imports files through ``nnconsole import``, a subprocess.
"""
