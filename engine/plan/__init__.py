"""What N workers will run, before anything runs: the N-worker plan (``worker_plan``, its record in ``record``)
and its words (``explain``), learning-rate schedules (``schedule``), hosts and hostfiles (``hosts``) and the predicted time per
epoch of each worker/host layout (``timing``, with its inputs from a project and its runs in ``timing_inputs``),
and the values a large-batch study is given, checked (``study_values``).
Pure Python: the CONFIG tab computes it live.
"""
