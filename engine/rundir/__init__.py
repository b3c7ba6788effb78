"""The run directory, where the processes of a run meet: the protocol (``protocol``: files, owners, records,
``RunStatus``, events and progress records), reading and writing them (``store``, ``typed_json``; every JSON text parsed with its nesting bounded by ``safe_json``), the writer lock
(``lock``), the user's title and note (``notes``) and what the launcher asks of every worker
(``launch_options``). Pure Python, read by the CLI, the launcher, the workers and the GUI alike.
"""
