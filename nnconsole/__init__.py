"""nnconsole: a Linux-first training console in the style of Neural Network Console, built on nnabla.

The distribution installs this one package. Its sub-packages live in the repository's top-level folders
(mapped by ``package-dir`` in pyproject.toml):

- ``nnconsole.engine``    <- ``engine/``: project model, layers, planning, training, launching (no Qt)
- ``nnconsole.app``       <- ``console_app/``: the PySide6 desktop console
- ``nnconsole.templates`` <- ``project_templates/``: ready-made projects on bundled data

``__version__`` is the one version number: pyproject.toml, ``nnconsole --version`` and the GUI read it.
"""
__version__ = "0.1.0"
