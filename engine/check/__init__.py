"""Whole-project validation: every problem of a loaded project (values, names, the networks' shapes, datasets,
hosts, initial parameters), each with its file, YAML path and fix. The only place that judges a project; loading
never does.
"""
