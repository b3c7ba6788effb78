"""The open project: the engine's Project dataclasses with an undo stack and change signals
(``project_document``), the undo commands for network edits (``commands``), autosave copies recovered after
a crash (``autosave``), the project file's state on disk and the side copies that keep versions changed
outside nnconsole (``file_versions``), and the File menu's operations: new, open, import, save, save as,
recovery (``project_files``). Files are read and written with the engine's pure-Python project modules;
an NNC / nnabla file is imported through ``bridge``, never in this process.
"""
