"""``nnconsole dataset create``: NNC's "create dataset" (nnabla_cli create_image_classification_dataset).

    nnconsole dataset create -i SOURCE -o OUTPUT -w W -g H [-c 1|3] [-m trimming|padding|resize]
        [-s true|false] [--seed N] [-f1 train.csv] [-f2 test.csv -r2 PERCENT] [--force] ...

Registered by ``nnconsole.engine.cli.main._extensions``. The option names are nnabla_cli's. Progress goes to the
terminal with an ETA and, with ``--events FILE``, as JSON lines (``dataset_progress``, ``dataset_created``)
for the GUI. Exit codes: 0 created, 2 refused (bad options, existing output, unreadable source), 130
interrupted or cancelled (nothing written).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Callable, Optional

from nnconsole.engine.rundir.protocol import announce, DATASET_CREATED_EVENT, DATASET_PROGRESS_EVENT, format_duration
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.project.paths import shown_path
from nnconsole.engine.data.create.writer import create_dataset, CreateOptions, worker_count
from nnconsole.engine.data.create.sources import DatasetCreateError, make_plan
from nnconsole.engine.data.create.shaping import MODES

_TRUE, _FALSE = ("true", "yes", "1", "on"), ("false", "no", "0", "off")


def _flag(text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got '{text}'")


def _percent(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole percentage from 0 to 100, got '{text}'") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected a percentage from 0 to 100, got '{text}'")
    return value


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of processes (0: one per core), got '{text}'")
    return value


def _ratio2(args: argparse.Namespace) -> int:
    """The percentage for file2: -r2, or 100 - -r1; both given must add up to 100."""
    if args.ratio1 is not None and args.ratio2 is not None and args.ratio1 + args.ratio2 != 100:
        raise ValueError(f"--ratio1 {args.ratio1} and --ratio2 {args.ratio2} add up to "
                         f"{args.ratio1 + args.ratio2}, not 100")
    if args.ratio2 is not None:
        return args.ratio2
    return 100 - args.ratio1 if args.ratio1 is not None and args.file2 else 0


class _Reporter:
    """Progress with ETA on the terminal (a live line on a TTY, a line every few seconds otherwise) and as
    events for the GUI."""

    def __init__(self, events: Optional[str], quiet: bool) -> None:
        self.events, self.quiet = events, quiet
        self.live = sys.stderr.isatty()
        self.shown = self.sent = 0.0

    def __call__(self, done: int, total: int, elapsed: float) -> None:
        eta = elapsed / done * (total - done) if done else None
        now = time.monotonic()
        last = done == total
        if last or now - self.sent >= 0.2:
            announce(self.events, DATASET_PROGRESS_EVENT, done=done, total=total, elapsed=round(elapsed, 2),
                     eta=None if eta is None else round(eta, 2))
            self.sent = now
        if self.quiet or not (last or now - self.shown >= (0.1 if self.live else 5.0)):
            return
        self.shown = now
        text = (f"converted {done}/{total} images ({done / max(total, 1):.0%}), elapsed "
                f"{format_duration(elapsed)}, ETA {format_duration(eta)}")
        try:
            if self.live:
                sys.stderr.write("\r" + text + "\x1b[K" + ("\n" if last else ""))
            else:
                sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def _stop_on_sigterm():
    """The GUI's Cancel (SIGTERM) ends the command like Ctrl-C: the staging folder is removed, nothing written.
    Returns the handler it replaced (restored when the command ends)."""
    def interrupt(signum, frame):  # noqa: ARG001
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


def cmd_dataset_create(args: argparse.Namespace) -> int:
    try:
        ratio2 = _ratio2(args)
    except ValueError as exc:
        print(f"nnconsole dataset create: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    options = CreateOptions(source=os.path.abspath(args.sourcedir), output=os.path.abspath(args.outdir),
                            width=args.width, height=args.height, channels=args.channel, mode=args.mode,
                            shuffle=args.shuffle, seed=args.seed, file1=args.file1, file2=args.file2 or "",
                            ratio2=ratio2, on_error=args.on_error, force=args.force, workers=args.workers,
                            allow_outside=args.allow_outside)
    previous = _stop_on_sigterm()
    try:
        plan = make_plan(options.source, options.allow_outside)
        for note in plan.notes:
            print(f"note: {note}", file=sys.stderr)
        kind = _count(len(plan.classes), "class", "classes") + ", " if plan.classes else ""
        print(f"source: {shown_path(args.sourcedir)}: {kind}{_count(len(plan.conversions), 'image')}, "
              f"{_count(len(plan.rows), 'sample')}", flush=True)
        options.workers, note = worker_count(options.workers, len(plan.conversions))
        if note:
            print(f"note: {note}", file=sys.stderr)
        result = create_dataset(options, _Reporter(args.events, args.quiet), plan)
    except DatasetCreateError as exc:
        print(f"nnconsole dataset create: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    finally:
        signal.signal(signal.SIGTERM, previous)
    for note in result.notes[len(plan.notes):]:  # what the run itself had to say (the plan's are above)
        print(f"note: {note}", file=sys.stderr)
    for source, reason in result.failed:
        print(f"skipped {source}: {reason}", file=sys.stderr)
    if result.failed:
        were = "was" if len(result.failed) == 1 else "were"
        print(f"warning: {_count(len(result.failed), 'image')} could not be converted and {were} left out (listed "
              "above)", file=sys.stderr)
    files = ", ".join(f"{os.path.basename(p)} ({_count(n, 'row')})" for p, n in result.files)
    labels = f", labels.txt ({_count(len(result.classes), 'class', 'classes')})" if result.classes else ""
    print(f"created {shown_path(result.output)}: {files}{labels}", flush=True)
    announce(args.events, DATASET_CREATED_EVENT, output=result.output, files=[p for p, _ in result.files],
             failed=len(result.failed))
    return ExitCode.OK


def _dataset_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def show(args: argparse.Namespace) -> int:  # noqa: ARG001
        parser.print_help()
        return ExitCode.BAD_INPUT
    return show


def register(add: Callable) -> None:
    """Add ``dataset create`` through nnconsole.engine.cli.main's ``add(name, fn, help)``."""

    group = add("dataset", None, "Dataset tools: 'dataset create' makes an image classification dataset "
                "(NNC's create dataset).")
    group.set_defaults(func=_dataset_help(group))
    sub = group.add_subparsers(dest="dataset_command", metavar="DATASET_COMMAND")
    p = sub.add_parser("create", help="Create a dataset CSV and resized PNGs from a folder of class folders or "
                       "a CSV of image paths.", description="Create an NNC dataset (x:image,y:label CSV, PNG "
                       "images, labels.txt) from a folder holding one sub-folder of images per class, or from a "
                       "CSV whose cells name image files; the options are those of nnabla_cli "
                       "create_image_classification_dataset.")
    p.set_defaults(func=cmd_dataset_create)
    p.add_argument("-i", "--sourcedir", required=True, metavar="SOURCE",
                   help="folder with one sub-folder of images per class, or a CSV of image paths")
    p.add_argument("-o", "--outdir", required=True, metavar="OUTPUT", help="output folder (created)")
    p.add_argument("-c", "--channel", type=int, choices=(1, 3), default=3, help="output colour channels: 1 grey, "
                   "3 RGB (default 3)")
    p.add_argument("-w", "--width", type=int, required=True, help="width of the output images")
    p.add_argument("-g", "--height", type=int, required=True, help="height of the output images")
    p.add_argument("-m", "--mode", choices=MODES, default="trimming", help="fitting images of another aspect "
                   "ratio: trimming crops the centre, padding adds black borders, resize stretches "
                   "(default trimming)")
    p.add_argument("-s", "--shuffle", type=_flag, default=True, metavar="true|false",
                   help="shuffle the samples before splitting (default true)")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed: the same seed gives the same files "
                   "(default 0)")
    p.add_argument("-f1", "--file1", default="train.csv", help="first output CSV (default train.csv)")
    p.add_argument("-r1", "--ratio1", type=_percent, metavar="PERCENT", help="percent of samples in file1 "
                   "(the rest go to file2)")
    p.add_argument("-f2", "--file2", help="second output CSV, e.g. test.csv")
    p.add_argument("-r2", "--ratio2", type=_percent, metavar="PERCENT", help="percent of samples in file2")
    p.add_argument("--on-error", choices=("skip", "stop"), default="skip", help="an image that cannot be read: "
                   "leave it out and list it (skip, default) or stop with nothing written (stop)")
    p.add_argument("--force", action="store_true", help="replace the dataset in an existing, non-empty output "
                   "folder (same-named files are replaced, other files kept; the folder is swapped in whole, "
                   "never left half replaced)")
    p.add_argument("--workers", type=_workers, default=0, metavar="N", help="converting processes (default: one per "
                   "core; never more than the cores or the images)")
    p.add_argument("--allow-outside", action="store_true", help="also read images that links or CSV paths "
                   "lead to outside the source folder (skipped with a note by default)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    p.add_argument("--events", metavar="FILE", type=lambda t: os.path.abspath(t),
                   help="append progress as JSON lines to FILE (the GUI reads them)")
