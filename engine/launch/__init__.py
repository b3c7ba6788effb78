"""Starting and watching a run: the launcher (``launcher``: run directory, ``mpiexec``/``srun`` command),
watching the job and explaining how it ended (``watch``, ``host_watch``), terminal progress (``progress``),
settings the command line overrides for one run (``overrides``) and replaying a run (``replay``).
"""
