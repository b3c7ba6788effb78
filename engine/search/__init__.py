"""``nnconsole search``: hyper-parameter and structure search on Optuna. The search space read from a project's
``search`` section (``space``), NNC's structure-search policy (``policy``) applied to the Main network
(``mutations``), the study and its storage, samplers, pruners and resume after a kill (``study``), one trial as
a normal ``nnconsole train`` run (``trial_run``), work a trial need not redo: a duplicate candidate or its own
interrupted run continued from its checkpoint (``reuse``), K trials at once with progress and a clean Ctrl-C
(``runner``), which K x G split of the devices finishes the budget sooner (``split_plan``) and the sbatch script
of a Slurm job array of searches on one study (``slurm``)."""
