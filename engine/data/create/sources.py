"""What ``nnconsole dataset create`` converts: the images of a folder of class folders, or of a CSV's image
cells, each with the relative path its PNG gets in the new dataset and the CSV row it goes in.

Listing follows ``nnabla_cli create_image_classification_dataset``: class folders and their files in
sorted order, a class number for each folder that holds at least one image (by its extension), rows
``./<class>/<name>.png,<class number>``. Beyond nnabla: two files that would give the same PNG name
(``a.jpg`` and ``a.png``) get distinct names, and a link (or, in a CSV, a path) that leads outside the
source folder is skipped with a note unless the user allows it.
"""
from __future__ import annotations

import csv
import io
import os
import posixpath
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set

from nnconsole.engine.errors import NnconsoleError

SOURCE_EXTENSIONS = (".bmp", ".jpg", ".jpeg", ".png", ".gif", ".tif", ".tiff")
OUTSIDE_FOLDER = "outside"  # where images from outside the source folder go (only with allow_outside)


class DatasetCreateError(NnconsoleError):
    """The dataset cannot be created as asked; the message names the file or option and the fix."""


@dataclass
class Conversion:
    """One source image and the path (relative to the output folder, '/'-separated) of its PNG."""

    source: str
    output: str


@dataclass
class CreatePlan:
    """Everything to convert and write: conversions, the CSV header and rows, class names, notes.

    Each row's cells are strings; ``row_images[i]`` lists the indices into ``conversions`` that row ``i``
    needs (a row whose image fails to convert is left out).
    """

    header: List[str]
    rows: List[List[str]]
    row_images: List[List[int]]
    conversions: List[Conversion]
    classes: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def is_source_image(name: str) -> bool:
    return os.path.splitext(name)[1].lower() in SOURCE_EXTENSIONS


def _utf8(name: str) -> bool:
    """Whether a file name can be written to the UTF-8 CSV (Linux names are bytes: some are not UTF-8)."""
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _inside(path: str, root: str) -> bool:
    real = os.path.realpath(path)
    return os.path.commonpath([root, real]) == root


class _Names:
    """Unique PNG paths in the output folder: ``a.jpg`` and ``a.png`` must not both become ``a.png``."""

    def __init__(self) -> None:
        self.used: Set[str] = set()

    def claim(self, wanted: str) -> str:
        stem, number, name = wanted[:-len(".png")], 2, wanted
        while name.lower() in self.used:
            name, number = f"{stem}_{number}.png", number + 1
        self.used.add(name.lower())
        return name


def plan_from_folder(source: str, allow_outside: bool = False) -> CreatePlan:
    """The conversions for a folder holding one sub-folder of images per class (nnabla's layout)."""
    root = os.path.realpath(source)
    if not os.path.isdir(root):
        raise DatasetCreateError(f"{source}: not a folder; give a folder holding one sub-folder of images per "
                                 "class, or a CSV file of image paths")
    notes: List[str] = []
    try:
        entries = sorted(os.listdir(root))
    except OSError as exc:
        raise DatasetCreateError(f"{source}: cannot list the folder ({exc.strerror}); check its permissions") from None
    plan = CreatePlan(["x:image", "y:label"], [], [], [])
    names = _Names()
    for entry in entries:
        folder = os.path.join(root, entry)
        if not os.path.isdir(folder):
            continue
        if not _utf8(entry):
            notes.append(f"skipped class folder {entry.encode('utf-8', 'surrogateescape')!r}: its name is not UTF-8 "
                         "text; rename it")
            continue
        if not allow_outside and not _inside(folder, root):
            notes.append(f"skipped class folder '{entry}': it is a link to {os.path.realpath(folder)}, outside "
                         f"{source} (copy the images in, or allow it with --allow-outside)")
            continue
        try:
            files = sorted(f for f in os.listdir(folder) if os.path.isfile(os.path.join(folder, f)))
        except OSError as exc:
            notes.append(f"skipped class folder '{entry}': cannot list it ({exc.strerror})")
            continue
        label: Optional[int] = None
        for name in files:
            path = os.path.join(folder, name)
            if not is_source_image(name):
                continue
            if not _utf8(name):
                notes.append(f"skipped '{entry}/{name.encode('utf-8', 'surrogateescape')!r}': its name is not UTF-8 "
                             "text; rename it")
                continue
            if not allow_outside and not _inside(path, root):
                notes.append(f"skipped '{entry}/{name}': it is a link to {os.path.realpath(path)}, outside "
                             f"{source} (copy the file in, or allow it with --allow-outside)")
                continue
            if label is None:
                label = len(plan.classes)
                plan.classes.append(entry)
            output = names.claim(posixpath.join(entry, os.path.splitext(name)[0] + ".png"))
            plan.conversions.append(Conversion(path, output))
            plan.rows.append(["./" + output, str(label)])
            plan.row_images.append([len(plan.conversions) - 1])
    plan.notes = notes
    if not plan.classes and not any(os.path.isdir(os.path.join(root, e)) for e in entries):
        raise DatasetCreateError(f"{source}: no class sub-folders; put each class's images in a sub-folder "
                                 "named after the class (e.g. cat/001.png, dog/001.png)")
    if not plan.conversions:
        raise DatasetCreateError(f"{source}: no image files in its sub-folders (looked for "
                                 f"{', '.join(e[1:] for e in SOURCE_EXTENSIONS)})")
    return plan


def _read_csv(path: str) -> List[List[str]]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise DatasetCreateError(f"{path}: cannot read the CSV ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetCreateError(f"{path}: not UTF-8 text (byte {exc.start}); save the CSV as UTF-8") from None
    rows = [r for r in csv.reader(io.StringIO(text, newline="")) if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise DatasetCreateError(f"{path}: needs a header line (e.g. x:image,y:label) and at least one row")
    return rows


def _output_for(cell: str, base: str, root: str, index: int, names: _Names) -> Optional[str]:
    """The PNG path for the image a CSV cell names: its own relative path inside the source folder, or
    ``outside/<n>_<name>.png`` for one outside it. None when the cell names no image file."""
    relative = os.path.normpath(cell.replace("\\", "/"))
    stem = os.path.splitext(relative)[0]
    if os.path.isabs(relative) or relative.split(os.sep)[0] == "..":
        stem = f"{OUTSIDE_FOLDER}/{index}_{os.path.splitext(os.path.basename(relative))[0]}"
    elif not _inside(os.path.join(base, relative), root):
        stem = f"{OUTSIDE_FOLDER}/{index}_{os.path.basename(stem)}"
    return names.claim(stem.replace(os.sep, "/") + ".png")


def plan_from_csv(csv_path: str, allow_outside: bool = False) -> CreatePlan:
    """The conversions for a CSV whose image cells name files relative to it; other cells are kept."""
    rows = _read_csv(csv_path)
    header, body = rows[0], rows[1:]
    base = os.path.dirname(os.path.abspath(csv_path))
    root = os.path.realpath(base)
    columns = [c for c in range(len(header))
               if is_source_image(next((r[c].strip() for r in body if c < len(r) and r[c].strip()), ""))]
    if not columns:
        raise DatasetCreateError(f"{csv_path}: no column of image paths (the first cell of a column must name "
                                 f"a {'/'.join(e[1:] for e in SOURCE_EXTENSIONS)} file)")
    plan = CreatePlan(header, [], [], [])
    names = _Names()
    done: Dict[str, int] = {}
    for line, row in enumerate(body, start=2):
        row = row + [""] * (len(header) - len(row))
        if len(row) > len(header):
            raise DatasetCreateError(f"{csv_path} line {line}: {len(row)} cells but the header has {len(header)}")
        cells, needs, skip = list(row), [], ""
        for c in columns:
            cell = row[c].strip()
            path = os.path.join(base, cell.replace("\\", "/"))
            if not cell or not is_source_image(cell):
                skip = f"column {header[c]}: '{cell}' is not an image path"
            elif not allow_outside and not _inside(path, root):
                skip = (f"column {header[c]}: '{cell}' leads outside {base} (copy the image in, or allow it with "
                        "--allow-outside)")
            elif not os.path.isfile(path):
                skip = f"column {header[c]}: image file '{cell}' not found"
            if skip:
                break
            key = os.path.realpath(path)
            if key not in done:
                done[key] = len(plan.conversions)
                plan.conversions.append(Conversion(path, _output_for(cell, base, root, len(plan.conversions),
                                                                     names)))
            cells[c] = "./" + plan.conversions[done[key]].output
            needs.append(done[key])
        if skip:
            plan.notes.append(f"skipped {csv_path} line {line}: {skip}")
            continue
        plan.rows.append(cells)
        plan.row_images.append(needs)
    if not plan.rows:
        raise DatasetCreateError(f"{csv_path}: no row names an image that can be read")
    return plan


def make_plan(source: str, allow_outside: bool = False) -> CreatePlan:
    """``plan_from_csv`` for a .csv file, else ``plan_from_folder``."""
    if os.path.isfile(source) and source.lower().endswith(".csv"):
        return plan_from_csv(source, allow_outside)
    if not os.path.exists(source):
        raise DatasetCreateError(f"{source}: not found; give a folder of class sub-folders or a CSV of image paths")
    return plan_from_folder(source, allow_outside)
