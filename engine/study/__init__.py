"""The large-batch study (issue 30): the project trained at several worker counts, learning-rate policies and
warm-ups, each point a normal run through the search's trial machinery, recorded in ``study.json``
(``rundir.batch_study``) with predicted and measured time per epoch and the recommendation
(``plan.batch_recommendation``). ``nnconsole study batch`` and ``nnconsole study show`` drive it."""
