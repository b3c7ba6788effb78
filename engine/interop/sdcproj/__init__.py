"""Neural Network Console desktop projects (``.sdcproj``, INI): read (``reader``), each network's layers and
links (``network``), the settings (``settings``), the whole import (``importer``), and the export (``exporter``,
with ``settings_writer`` and the other optimizers in ``optimizers``).
"""
