"""``nnconsole dataset create``: convert a plan's images in parallel and write the dataset, all or nothing.

Everything is made in a private staging folder (beside a new output folder, or inside an existing one)
and only moved into place once every image is converted: a failure, Ctrl-C or the GUI's Cancel leaves
the output as it was, and nothing the user had is deleted. An existing output folder with files in it,
or an existing CSV, is replaced only with ``force`` (same-named files are replaced; other files stay).
The CSVs (``x:image,y:label``, paths relative to the output folder, so the folder can be moved) and
``labels.txt`` are written atomically after the images. Shuffling uses ``seed``, so the same source
gives the same files.
"""
from __future__ import annotations

import csv
import io
import os
import random
import secrets
import shutil
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.data.create.sources import CreatePlan, DatasetCreateError, make_plan
from nnconsole.engine.data.create.convert import Progress, convert_all
from nnconsole.engine.data.labels import CLASS_NAMES_FILE

STAGING_PREFIX = ".nnconsole-create-"
STAGING_MARKER = ".nnconsole-staging"  # in every staging folder: only such a folder is ever removed


@dataclass
class CreateOptions:
    """The options of ``nnconsole dataset create`` (nnabla_cli's names in the comments)."""

    source: str  # -i: folder of class folders, or a CSV of image paths
    output: str  # -o
    width: int  # -w
    height: int  # -g
    channels: int = 3  # -c
    mode: str = "trimming"  # -m: trimming, padding or resize
    shuffle: bool = True  # -s
    seed: int = 0
    file1: str = "train.csv"  # -f1
    file2: str = ""  # -f2
    ratio2: int = 0  # -r2: percent of the samples that go to file2
    on_error: str = "skip"  # skip unreadable images (with a report), or stop at the first
    force: bool = False
    workers: int = 0  # 0: every core
    allow_outside: bool = False


@dataclass
class CreateResult:
    output: str
    files: List[Tuple[str, int]]  # (CSV path, rows)
    classes: List[str]
    converted: int
    failed: List[Tuple[str, str]] = field(default_factory=list)  # (source file, reason)
    notes: List[str] = field(default_factory=list)


def _check_options(o: CreateOptions) -> None:
    for name, value in (("width", o.width), ("height", o.height)):
        if not 1 <= value <= 16384:
            raise DatasetCreateError(f"--{name} {value}: give a size from 1 to 16384 pixels")
    if o.channels not in (1, 3):
        raise DatasetCreateError(f"--channel {o.channels}: give 1 (grey) or 3 (colour)")
    if not 0 <= o.ratio2 <= 100:
        raise DatasetCreateError(f"--ratio2 {o.ratio2}: give a percentage from 0 to 100")
    if o.ratio2 and not o.file2:
        raise DatasetCreateError(f"--ratio2 {o.ratio2} sends samples to a second file: name it with --file2")
    for flag, name in (("--file1", o.file1), ("--file2", o.file2)):
        if name and (os.path.basename(name) != name or name in (".", "..") or name.startswith(".")):
            raise DatasetCreateError(f"{flag} '{name}': give a plain file name (it is written in the output "
                                     "folder), e.g. train.csv")
    if o.file2 and o.file2 == o.file1:
        raise DatasetCreateError(f"--file1 and --file2 are both '{o.file1}'; give two names")
    source, output = os.path.realpath(o.source), os.path.realpath(o.output)
    if output == source or os.path.commonpath([source, output]) == source and os.path.isdir(source):
        raise DatasetCreateError(f"{o.output}: the output folder is (inside) the source folder {o.source}; "
                                 "choose an output folder elsewhere")


def _check_output(o: CreateOptions, plan: CreatePlan) -> None:
    """Refuse what would overwrite without --force, or write through a link or onto a folder."""
    out = os.path.abspath(o.output)
    tops = {c.output.split("/", 1)[0] for c in plan.conversions}
    written = [n for n in (o.file1, o.file2, CLASS_NAMES_FILE if plan.classes else "") if n]
    if plan.classes and CLASS_NAMES_FILE in (o.file1, o.file2):
        raise DatasetCreateError(f"'{CLASS_NAMES_FILE}' is where the class names go; choose another --file1/--file2")
    clash = sorted(tops & set(written))
    if clash:
        raise DatasetCreateError(f"'{clash[0]}' would be both an image folder and a file of the new dataset; "
                                 "rename that class folder or choose another --file1/--file2")
    if not os.path.lexists(out):
        return
    if not os.path.isdir(out):
        raise DatasetCreateError(f"{o.output}: exists and is not a folder; choose another output folder")
    if [n for n in os.listdir(out) if not n.startswith(STAGING_PREFIX)] and not o.force:
        raise DatasetCreateError(f"{o.output}: the output folder exists and is not empty; choose another, or add "
                                 "--force to write into it (same-named files are replaced, others kept)")
    folders = {"/".join(c.output.split("/")[:i]) for c in plan.conversions for i in range(1, c.output.count("/") + 1)}
    for folder in sorted(folders):  # every folder an image goes into: a link there would lead the write away
        path = os.path.join(out, *folder.split("/"))
        if os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path)):
            raise DatasetCreateError(f"{path}: exists and is not a folder (or is a link); move it away first")
    for name in written:
        if os.path.isdir(os.path.join(out, name)):
            raise DatasetCreateError(f"{os.path.join(out, name)}: is a folder; choose another file name")
    sources = {os.path.realpath(o.source)} | {os.path.realpath(c.source) for c in plan.conversions}
    targets = [os.path.join(out, *c.output.split("/")) for c in plan.conversions] + \
        [os.path.join(out, n) for n in written]
    mine = next((t for t in targets if os.path.realpath(t) in sources), None)
    if mine:
        raise DatasetCreateError(f"{mine}: is one of the source files; writing the dataset there would replace "
                                 "it: choose an output folder outside the source data")


def _csv_bytes(header: List[str], rows: List[List[str]]) -> bytes:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return text.getvalue().encode("utf-8")


def _class_names_text(names: List[str]) -> str:
    """labels.txt: class i on line i; a line break in a folder name becomes a space."""
    return "".join(" ".join(str(name).splitlines()) + "\n" for name in names)


def _split(rows: List[List[str]], o: CreateOptions) -> List[Tuple[str, List[List[str]]]]:
    """(file name, rows) per output CSV, as nnabla splits: file1 gets floor(n * (100 - ratio2) / 100)."""
    rows = list(rows)
    if o.shuffle:
        random.Random(o.seed).shuffle(rows)
    first = len(rows) * (100 - o.ratio2) // 100
    parts = [(o.file1, rows[:first])]
    if o.file2:
        parts.append((o.file2, rows[first:]))
    return [(name, part) for name, part in parts if part]


def _staging_folder(out: str) -> str:
    """A private folder on the output's file system: inside an existing output folder, else beside it.

    A staging folder that a killed run (kill -9, power loss) left there is removed first: only one with
    our marker file whose process is gone, so nothing else is ever deleted.
    """
    tag = f"{STAGING_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    if os.path.isdir(out):
        folder, prefix = out, STAGING_PREFIX
    else:
        folder, prefix = os.path.dirname(out), "." + os.path.basename(out) + STAGING_PREFIX
        os.makedirs(folder, exist_ok=True)
    _remove_abandoned(folder, prefix)
    path = os.path.join(folder, prefix + tag[len(STAGING_PREFIX):])
    os.mkdir(path)
    with open(os.path.join(path, STAGING_MARKER), "w", encoding="utf-8") as fh:
        fh.write(f"nnconsole dataset create, process {os.getpid()}\n")
    return path


def _remove_abandoned(folder: str, prefix: str) -> None:
    """Remove staging folders ``prefix<pid>-<hex>`` of processes that no longer run (and only those)."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        pid = name[len(prefix):].split("-", 1)[0]
        if not pid.isdigit() or os.path.islink(path) or not os.path.isfile(os.path.join(path, STAGING_MARKER)):
            continue
        try:
            os.kill(int(pid), 0)
            continue  # its process still runs (another create into the same place)
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError):
            continue
        shutil.rmtree(path, ignore_errors=True)


def _move_into(staging: str, out: str, outputs: Sequence[str]) -> None:
    """Move each converted image from the staging folder into the existing output folder."""
    for rel in outputs:
        target = os.path.join(out, *rel.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.replace(os.path.join(staging, *rel.split("/")), target)


def create_dataset(o: CreateOptions, progress: Optional[Progress] = None,
                   plan: Optional[CreatePlan] = None) -> CreateResult:
    """Create the dataset ``o`` describes (see the module's docstring). Raises DatasetCreateError."""
    _check_options(o)
    plan = plan or make_plan(o.source, o.allow_outside)
    _check_output(o, plan)
    out = os.path.abspath(o.output)
    existed = os.path.isdir(out)
    staging = _staging_folder(out)
    try:
        tasks = [(c.source, os.path.join(staging, *c.output.split("/")), o.width, o.height, o.mode, o.channels)
                 for c in plan.conversions]
        for sub in sorted({os.path.dirname(t[1]) for t in tasks}):  # here: a worker never makes folders
            os.makedirs(sub, exist_ok=True)
        def stop(index: int, reason: str) -> None:
            if o.on_error == "stop":
                raise DatasetCreateError(f"{tasks[index][0]}: {reason}; fix or remove the file, or run with "
                                         "--on-error skip to leave it out")

        reasons = convert_all(tasks, o.workers or os.cpu_count() or 1, progress, stop)
        failed = [(plan.conversions[i].source, r) for i, r in enumerate(reasons) if r]
        rows = [row for row, needs in zip(plan.rows, plan.row_images) if not any(reasons[i] for i in needs)]
        if not rows:
            raise DatasetCreateError(f"{o.source}: no image could be converted (first: {failed[0][0]}: "
                                     f"{failed[0][1]})" if failed else f"{o.source}: nothing to convert")
        parts = _split(rows, o)
        converted = [c.output for c, r in zip(plan.conversions, reasons) if not r]
        if existed:
            _move_into(staging, out, converted)
            shutil.rmtree(staging)
            folder = out
        else:
            folder = staging
        if plan.classes:
            atomic_write(os.path.join(folder, CLASS_NAMES_FILE), _class_names_text(plan.classes).encode("utf-8"))
        for name, part in parts:
            atomic_write(os.path.join(folder, name), _csv_bytes(plan.header, part))
        if not existed:
            os.unlink(os.path.join(staging, STAGING_MARKER))
            os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return CreateResult(out, [(os.path.join(out, n), len(p)) for n, p in parts], plan.classes,
                        len(converted), failed, plan.notes)
