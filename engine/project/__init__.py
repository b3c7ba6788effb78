"""The project document, the bottom of the engine: dataclasses (``model``), the settings schema (``schema``),
dict <-> dataclass conversion (``codec``), YAML reading and atomic saving with line numbers and migrations (``io``,
``yamlpos``, ``migrations``), saves that keep the file's comments, order and style (``roundtrip``), the several networks/optimizers look-ups (``structure``) and new projects from a
bundled template (``templates``). It imports nothing of the engine above it: loading a project never validates it
(that is ``nnconsole.engine.check``).
"""
