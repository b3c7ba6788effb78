"""``nnconsole dataset create``: convert a plan's images in parallel and write the dataset, all or nothing.

Everything is made in a private staging folder beside the output folder and only put in place once the
whole dataset is there: a failure, Ctrl-C, the GUI's Cancel or a kill leaves the output as it was, and
nothing the user had is deleted. An existing output folder with files in it, or an existing CSV, is
replaced only with ``force`` (same-named files are replaced; the user's other files stay): the new folder
receives the other files and then takes the old one's place in one swap (``swap``), so the output is
never a mix of the old dataset and the new one.
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
import time
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.data.create.sources import CreatePlan, DatasetCreateError, make_plan
from nnconsole.engine.data.create.convert import Progress, convert_all
from nnconsole.engine.data.create.swap import carry_over, keep_modes, swap_in
from nnconsole.engine.data.labels import CLASS_NAMES_FILE

STAGING_PREFIX = ".nnconsole-create-"
STAGING_MARKER = ".nnconsole-staging"  # beside every staging folder (<folder>.nnconsole-staging): only a marked
# folder is ever removed


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
    if o.workers < 0:
        raise DatasetCreateError(f"--workers {o.workers}: give a number of converting processes, or 0 for one per "
                                 "CPU core")
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


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity, as a container or ``taskset`` limits it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worker_count(requested: int, images: int) -> Tuple[int, Optional[str]]:
    """(converting processes, a note when fewer than ``requested``): never more than the cores or the images.

    ``requested`` 0 means one per core. More processes than cores only compete for them (and each holds an
    image in memory); more than images would start processes with nothing to do.
    """
    cores = usable_cores()
    count = max(1, min(requested or cores, cores, images))
    if requested > count:
        why = f"{cores} CPU core{'s' if cores != 1 else ''}" if count == cores else \
            f"{images} image{'s' if images != 1 else ''}"
        return count, f"--workers {requested}: using {count} converting process{'es' if count != 1 else ''} " \
                      f"(one per {'core' if count == cores else 'image'}; there {'are' if count != 1 else 'is'} {why})"
    return count, None


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


ASIDE_SUFFIX = "-old"  # where two renames (no RENAME_EXCHANGE) park the old folder for a moment


def _staging_prefix(out: str) -> str:
    return "." + os.path.basename(out) + STAGING_PREFIX


def _marker(path: str) -> str:
    """The file beside a staging folder that says it is ours. Beside it, not in it: the folder's contents
    are swapped into the output folder, and the output must never carry a marker."""
    return path + STAGING_MARKER


def _ours(path: str) -> bool:
    """A staging folder this program made: marked beside (now) or inside (earlier versions)."""
    return os.path.isfile(_marker(path)) or os.path.isfile(os.path.join(path, STAGING_MARKER))


def _recover(out: str) -> None:
    """Deal with what a killed run (kill -9, power loss) left beside ``out``, for processes that are gone: a
    dataset parked aside by two renames goes back to the output path if that is empty; marked staging folders
    (a new dataset unfinished, or an old one whose removal was cut short) and lone markers are removed;
    nothing unmarked is ever deleted."""
    folder, prefix = os.path.dirname(out), _staging_prefix(out)
    for path in _abandoned(folder, prefix):
        if path.endswith(ASIDE_SUFFIX) and _ours(path[:-len(ASIDE_SUFFIX)]) and not os.path.lexists(out):
            os.rename(path, out)  # killed between the two renames: the old dataset goes back
    for path in _abandoned(folder, prefix):
        base = path[:-len(ASIDE_SUFFIX)] if path.endswith(ASIDE_SUFFIX) else path
        if os.path.isdir(path) and (_ours(path) or _ours(base)):
            shutil.rmtree(path, ignore_errors=True)
    for path in _abandoned(folder, prefix):
        base = path[:-len(STAGING_MARKER)]
        if path.endswith(STAGING_MARKER) and not os.path.lexists(base) and not os.path.lexists(base + ASIDE_SUFFIX):
            os.unlink(path)
    if os.path.isdir(out):  # staging folders an earlier version made inside the output folder
        for path in _abandoned(out, STAGING_PREFIX):
            if os.path.isdir(path) and _ours(path):
                shutil.rmtree(path, ignore_errors=True)


def _staging_folder(out: str) -> str:
    """A private, marked folder beside the output folder (so that the two can be swapped by a rename)."""
    folder, prefix = os.path.dirname(out), _staging_prefix(out)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{prefix}{os.getpid()}-{secrets.token_hex(4)}")
    try:
        with open(_marker(path), "x", encoding="utf-8") as fh:
            fh.write(f"nnconsole dataset create, process {os.getpid()}\n")
        os.mkdir(path)
    except OSError as exc:
        raise DatasetCreateError(f"{folder}: cannot make the folder the new dataset is built in beside {out} "
                                 f"({exc.strerror}); make that folder writable or choose another output") from None
    return path


def _abandoned(folder: str, prefix: str) -> List[str]:
    """Entries ``prefix<pid>-...`` in ``folder`` (folders and markers) whose process no longer runs; no links."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.startswith(prefix))
    except OSError:
        return []
    found = []
    for name in names:
        path = os.path.join(folder, name)
        pid = name[len(prefix):].split("-", 1)[0]
        if not pid.isdigit() or os.path.islink(path):
            continue
        try:
            os.kill(int(pid), 0)
            continue  # its process still runs (another create into the same place)
        except ProcessLookupError:
            found.append(path)
        except (PermissionError, OverflowError):
            continue
    return found


def _finish(staging: str) -> None:
    """The staging folder is gone (moved into place, or removed): its marker goes too."""
    try:
        os.unlink(_marker(staging))
    except FileNotFoundError:
        pass


def _replace(staging: str, out: str, written: List[str]) -> Tuple[str, List[str]]:
    """Swap the finished ``staging`` folder in for the existing ``out`` (see ``swap``).

    Returns (where the old folder is now, what of it could not be carried over).
    """
    keep_modes(out, staging, set(written))
    left = carry_over(out, staging, lambda rel: rel.split(os.sep)[0].startswith(STAGING_PREFIX))
    shutil.copymode(out, staging)
    return swap_in(staging, out, staging + ASIDE_SUFFIX), left


def create_dataset(o: CreateOptions, progress: Optional[Progress] = None,
                   plan: Optional[CreatePlan] = None) -> CreateResult:
    """Create the dataset ``o`` describes (see the module's docstring). Raises DatasetCreateError."""
    _check_options(o)
    plan = plan or make_plan(o.source, o.allow_outside)
    shown = os.path.abspath(o.output)
    out = os.path.realpath(shown) if os.path.islink(shown) else shown  # a link to a folder: that folder is replaced
    _recover(out)
    _check_output(o, plan)
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

        workers, workers_note = worker_count(o.workers, len(tasks))
        reasons = convert_all(tasks, workers, progress, stop)
        failed = [(plan.conversions[i].source, r) for i, r in enumerate(reasons) if r]
        rows = [row for row, needs in zip(plan.rows, plan.row_images) if not any(reasons[i] for i in needs)]
        if not rows:
            raise DatasetCreateError(f"{o.source}: no image could be converted (first: {failed[0][0]}: "
                                     f"{failed[0][1]})" if failed else f"{o.source}: nothing to convert")
        parts = _split(rows, o)
        converted = [c.output for c, r in zip(plan.conversions, reasons) if not r]
        if plan.classes:
            atomic_write(os.path.join(staging, CLASS_NAMES_FILE), _class_names_text(plan.classes).encode("utf-8"))
        for name, part in parts:
            atomic_write(os.path.join(staging, name), _csv_bytes(plan.header, part))
        if existed:
            old, left = _replace(staging, out, [n for n in (CLASS_NAMES_FILE, o.file1, o.file2) if n])
        else:
            os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        _finish(staging)
        raise
    notes = list(plan.notes) + ([workers_note] if workers_note else [])
    if existed and left:  # something of the user's that cannot be moved: the old folder stays, in sight
        kept = f"{out}.replaced-{time.strftime('%Y%m%d_%H%M%S')}"
        os.rename(old, kept)
        _finish(staging)
        notes.append(f"the previous {os.path.basename(out)} is kept as {kept}: it holds {left[0]}"
                     f"{f' and {len(left) - 1} more' if len(left) > 1 else ''}, which could not be carried over")
    elif existed:  # the old folder lies where the staging folder was (or beside it), still marked as ours
        try:
            shutil.rmtree(old)
            _finish(staging)
        except OSError as exc:
            notes.append(f"the previous {os.path.basename(out)} could not be removed from {old} ({exc.strerror}); "
                         "remove it by hand")
    else:
        _finish(staging)
    return CreateResult(shown, [(os.path.join(shown, n), len(p)) for n, p in parts], plan.classes,
                        len(converted), failed, notes)
