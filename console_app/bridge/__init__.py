"""The only code that starts the engine's ``nnconsole`` CLI: every nnabla or MPI job of the GUI (training,
evaluation, inference, export, dataset creation, importing an NNC / nnabla file) runs there as a subprocess,
so the GUI process never loads nnabla or mpi4py. ``engine_process`` builds the command line and runs short
commands in a QProcess; ``run_controller`` starts a training detached and tails its run directory;
``import_runner`` runs ``nnconsole import`` behind a busy dialog and reads its report from the events file;
``detached_cli`` runs a long command detached (start, its lines, Stop as Ctrl-C), which ``search_process``
(``nnconsole search``) and ``study_process`` (``nnconsole study batch``) build on.
"""
