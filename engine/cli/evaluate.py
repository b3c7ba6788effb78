"""``nnconsole evaluate RUN_DIR [--model best|final] [--dataset CSV] [--output DIR]``: the EVALUATION tab from the terminal.

Registered by ``nnconsole.engine.cli.main._extensions``. With ``--events FILE`` it announces ``evaluate_progress``
(samples evaluated) and ``evaluate_finished`` (the evaluation folder) events (``nnconsole.engine.rundir.protocol``),
which the GUI reads. Exit codes: 0 written, 2 bad input (not a run, missing
parameters, labels out of range, dataset problems), 1 anything unexpected.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from nnconsole.engine.atomic import folder_problem
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.data.loading import DatasetError
from nnconsole.engine.evaluate.evaluation import evaluate_run, EvaluationError
from nnconsole.engine.metrics.results import summary_text, write_evaluation
from nnconsole.engine.rundir.protocol import (EVALUATE_FINISHED_EVENT, EVALUATE_PROGRESS_EVENT, announce,
                                              progress_announcer)


def cmd_evaluate(args: argparse.Namespace) -> int:
    problem = folder_problem(args.output) if args.output else None
    if problem:  # said before the evaluation runs, not after
        print(f"nnconsole evaluate: {problem}; give --output a folder (made when missing)", file=sys.stderr)
        return ExitCode.BAD_INPUT
    try:
        result = evaluate_run(args.run_dir, model=args.model, batch_size=args.batch_size,
                              dataset=os.path.abspath(args.dataset) if args.dataset else None,
                              progress=progress_announcer(args.events, EVALUATE_PROGRESS_EVENT))
    except (EvaluationError, DatasetError) as exc:
        print(f"nnconsole evaluate: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    folder = write_evaluation(result, args.output)
    print(summary_text(result.metrics))
    print(f"evaluation: {os.path.abspath(folder)}", flush=True)
    announce(args.events, EVALUATE_FINISHED_EVENT, output=os.path.abspath(folder))
    return ExitCode.OK


def register(add: Callable) -> None:
    """Add the ``evaluate`` subcommand through nnconsole.engine.cli.main's ``add(name, fn, help)``."""
    p = add("evaluate", cmd_evaluate, "Evaluate a run's best or final model on its validation set or any dataset CSV: "
            "per-sample outputs, confusion matrix, precision/recall/F-measure, top-N accuracy, ROC/PR AUC (or "
            "MAE/RMSE/R^2 for regression).")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (<project folder>/results/<project file name>/<date>)")
    p.add_argument("--model", choices=("best", "final"), default="best",
                   help="parameters_best.h5 (lowest validation error, default) or parameters_final.h5")
    p.add_argument("--dataset", metavar="CSV", help="evaluate on this dataset CSV (the network's inputs and its "
                   "target variable) instead of the project's validation set")
    p.add_argument("--output", "-o", metavar="DIR", help="where to write samples.csv and metrics.json "
                   "(default: RUN_DIR/evaluation/<model>, or <model>-<CSV name>-<hash> with --dataset)")
    p.add_argument("--batch-size", type=int, default=None, metavar="B", help="samples per forward pass")
    p.add_argument("--events", metavar="FILE", type=os.path.abspath, help="append progress and the evaluation folder "
                   f'as JSON lines to FILE ({{"event": "{EVALUATE_PROGRESS_EVENT}", "done": ..., "total": ...}}, '
                   f'then "{EVALUATE_FINISHED_EVENT}" with "output"); the GUI reads them')
