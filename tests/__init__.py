"""nnconsole's test suite; its folders mirror the code.

- ``engine/<package>/``: tests of one engine package (``engine/data/`` tests ``nnconsole.engine.data``);
  ``engine/`` itself for the modules at the engine's top (atomic writes, test seams). A package's tests may
  run its code under a real mpiexec (marked ``mpi``).
- ``gui/``: the desktop app (``nnconsole.app``), offscreen.
- ``templates/``: the bundled project templates (``nnconsole.templates``).
- ``system/``: the whole program as a user runs it: CLI trainings end to end, N workers under mpiexec
  against one, interruptions and signals, simulated hosts (network namespaces), soak, packaging.
- ``repo/``: the repository itself: docs, import boundaries, markers, this tree's rules, scripts/.
- ``support/``: builders and helpers the tests share (a test module never imports another test module);
  ``data/``: files tests read; ``mpi_scripts/``: programs started under mpiexec.

Every test folder is a package (this file and one ``__init__.py`` per folder), so two folders may hold test
files of the same name. Markers and the quick run: pyproject.toml and conftest.py.
"""
