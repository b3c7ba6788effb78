"""``nnconsole infer RUN_DIR DATA...``: apply a trained run to a dataset CSV, image files or a folder of images.

Registered by ``nnconsole.engine.cli.main._extensions``. Prints ``inferred N/M samples`` lines while it works
and the results file at the end, for people; with ``--events FILE`` it announces the same as ``infer_progress``
and ``infer_finished`` events (``nnconsole.engine.rundir.protocol``), which the GUI reads. SIGTERM (the GUI's
Stop) ends it like Ctrl-C, without a results file. Exit codes: 0 written, 2 bad input
(not a run, no parameters, wrong image size, existing output without --force), 1 anything unexpected.
"""
from __future__ import annotations

import argparse
import os
import signal
from typing import Callable

from nnconsole.engine.data.create.shaping import MODES
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.project.paths import shown_path
from nnconsole.engine.evaluate.inference import ImageSizeError, infer
from nnconsole.engine.rundir.protocol import INFER_FINISHED_EVENT, INFER_PROGRESS_EVENT, announce, progress_announcer


# How a person at a terminal takes the two ways out of an image of another size (the engine's message says
# them in words, the GUI names its own boxes).
FLAGS_FIX = "--resize, with --resize-mode trimming or padding to keep the aspect ratio, fits them; --skip-other-sizes " \
    "skips them"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # unwinds like Ctrl-C: the temp results file is removed, exit code 130


def cmd_infer(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, _interrupt)  # the GUI's Stop: leave no half-written file behind

    def show(done: int, total: int) -> None:
        if not args.quiet:
            print(f"inferred {done}/{total} samples", flush=True)

    progress = progress_announcer(args.events, INFER_PROGRESS_EVENT, show)
    try:
        summary = infer(args.run_dir, args.data, output=args.output, model=args.model, batch_size=args.batch_size,
                        top_k=args.top, resize=args.resize_mode if args.resize else None, force=args.force,
                        progress=progress, skip_other_sizes=args.skip_other_sizes)
    except ImageSizeError as exc:
        if args.events:  # a program (the GUI) is the caller: it names its own controls for the two ways out
            raise
        raise ImageSizeError(f"{exc} ({FLAGS_FIX})") from None
    what = f"{summary.classes} classes" if summary.task == "classification" else summary.task
    print(f"{summary.count} samples ({what}) in {summary.seconds:.1f} s", flush=True)
    if summary.skipped:
        print(f"skipped {len(summary.skipped)} image(s) of another size: "
              + ", ".join(shown_path(p) for p in summary.skipped), flush=True)
    print(f"results: {shown_path(summary.output)}", flush=True)
    announce(args.events, INFER_FINISHED_EVENT, output=summary.output, count=summary.count,
             **({"skipped": list(summary.skipped)} if summary.skipped else {}))
    return ExitCode.OK


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got '{text}'")
    return value


def register(add: Callable) -> None:
    """Add the ``infer`` subcommand through nnconsole.engine.cli.main's ``add(name, fn, help)``."""
    p = add("infer", cmd_infer, "Apply a trained run to a dataset CSV (labels optional), image files or a folder "
            "of images; writes a results CSV (outputs, top classes; class names from labels.txt beside the training CSV, "
            "one a line).")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (<project folder>/results/<project file "
                   "name>/<date>)")
    p.add_argument("data", metavar="DATA", nargs="+", help="a dataset CSV, or image files and folders of images "
                   "(png, jpg, bmp; folders are searched recursively)")
    p.add_argument("--output", "-o", metavar="FILE", help="results CSV (default: RUN_DIR/inference/<data "
                   "name>_<model>.csv)")
    p.add_argument("--model", choices=("best", "final"), default="best",
                   help="parameters_best.h5 (lowest validation error, default) or parameters_final.h5")
    p.add_argument("--top", type=_positive, default=5, metavar="K", help="top classes per sample (default 5)")
    p.add_argument("--resize", action="store_true", help="fit images of another size to the network's input "
                   "(refused by default)")
    p.add_argument("--skip-other-sizes", action="store_true", help="leave out image files of another size than "
                   "the network's input and name them (without --resize; by default one such image stops the run)")
    p.add_argument("--resize-mode", choices=MODES, default="resize", help="how --resize fits them, as 'nnconsole "
                   "dataset create' does: resize stretches (default), trimming crops the centre to the input's aspect "
                   "ratio, padding adds black bands")
    p.add_argument("--batch-size", type=_positive, default=64, metavar="B", help="samples per forward pass "
                   "(memory holds one batch; default 64)")
    p.add_argument("--force", action="store_true", help="replace the results file if it exists (a device or "
                   "FIFO such as /dev/stdout is written into, never replaced; a folder never)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    p.add_argument("--events", metavar="FILE", type=os.path.abspath, help="append progress and the results file "
                   f'as JSON lines to FILE ({{"event": "{INFER_PROGRESS_EVENT}", "done": ..., "total": ...}}, then '
                   f'"{INFER_FINISHED_EVENT}" with "output", "count" and "skipped"); the GUI reads them')
