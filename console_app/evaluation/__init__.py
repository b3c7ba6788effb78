"""EVALUATION tab: a run evaluated through `nnconsole evaluate`: per-sample table, confusion matrix, metrics."""
