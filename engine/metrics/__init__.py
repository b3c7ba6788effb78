"""Evaluation results without nnabla: NNC's metrics, confusion matrix and per-sample table and their files
(``results``), and the classifier curves of the EVALUATION tab (``curves``). numpy only, so the GUI reads them in
process.
"""
