"""The ``nnconsole`` command line: the parser and the core commands (``main``) and one module per further
subcommand (``evaluate``, ``infer``, ``interop``: import/export, ``dataset_create``), each imported explicitly.
"""
