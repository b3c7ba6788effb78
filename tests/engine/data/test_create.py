"""``nnconsole dataset create``: NNC's "create dataset", checked against ``nnabla_cli
create_image_classification_dataset`` on the same generated folder, then loaded and trained by nnconsole.

Also: never overwrite without --force, nothing written on failure or cancel, the same files for the same
seed, hostile names (spaces, unicode, commas, links and '..' paths leading outside), a CSV as source.
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from nnconsole.engine.data.create.writer import STAGING_MARKER, STAGING_PREFIX, CreateOptions, create_dataset
from nnconsole.engine.data.create.shaping import fit, set_channels
from tests.support.datasets import SIZES, make_source

NNABLA_CLI = os.path.join(os.path.dirname(sys.executable), "nnabla_cli")
def create(args: list, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "nnconsole", "dataset", "create", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=120)
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


@pytest.fixture
def here(capfd, monkeypatch):
    """``create`` in this process (the same ``main``, without an interpreter start-up) for the quick cases."""
    from nnconsole.engine.cli.main import main

    def run(args: list, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
        monkeypatch.chdir(cwd)
        code = main(["dataset", "create", *args])
        out, err = capfd.readouterr()
        if check:
            assert code == 0, out + err
        return subprocess.CompletedProcess(args, code, out, err)
    return run


def rows(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def pixels(path: Path) -> np.ndarray:
    with Image.open(path) as img:
        return np.asarray(img).astype(np.int16)


@pytest.mark.slow
@pytest.mark.parametrize("mode,channels", [("trimming", 3), ("padding", 1), ("resize", 3)])
def test_same_files_as_nnabla_cli(tmp_path, mode, channels):
    make_source(tmp_path / "src")
    common = ["-i", "src", "-c", str(channels), "-w", "12", "-g", "10", "-m", mode, "-s", "false",
              "-f1", "train.csv", "-f2", "test.csv", "-r2", "25"]
    theirs = subprocess.run([NNABLA_CLI, "create_image_classification_dataset", "-o", "nnabla", *common],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert theirs.returncode == 0, theirs.stderr
    ours = create(["-o", "ours", *common], tmp_path)
    assert "broken.png" in ours.stderr  # the damaged file is reported, as nnabla warns, and left out
    for name in ("train.csv", "test.csv"):
        assert rows(tmp_path / "ours" / name) == rows(tmp_path / "nnabla" / name)  # same order: no shuffle
    images = [r[0] for r in rows(tmp_path / "ours" / "train.csv")[1:] + rows(tmp_path / "ours" / "test.csv")[1:]]
    assert len(images) == 2 * 2 * len(SIZES)  # broken.png and notes.txt are not rows
    for rel in images:
        a, b = pixels(tmp_path / "ours" / rel), pixels(tmp_path / "nnabla" / rel)
        assert a.shape == b.shape == ((10, 12, 3) if channels == 3 else (10, 12))
        assert np.abs(a - b).max() <= 1, rel  # measured: identical
    assert (tmp_path / "ours" / "labels.txt").read_text(encoding="utf-8") == "cat\ndög house\n"


@pytest.mark.slow
def test_shuffled_split_has_nnabla_rows_and_is_repeatable(tmp_path):
    make_source(tmp_path / "src")
    common = ["-i", "src", "-c", "3", "-w", "8", "-g", "8", "-m", "padding", "-f1", "a.csv", "-f2", "b.csv",
              "-r2", "30"]
    theirs = subprocess.run([NNABLA_CLI, "create_image_classification_dataset", "-o", "nnabla", "-s", "true",
                             *common], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert theirs.returncode == 0, theirs.stderr
    create(["-o", "one", "-s", "true", "--seed", "7", *common], tmp_path)
    create(["-o", "two", "-s", "true", "--seed", "7", "--workers", "1", *common], tmp_path)
    create(["-o", "three", "-s", "true", "--seed", "8", *common], tmp_path)
    both = {d: rows(tmp_path / d / "a.csv")[1:] + rows(tmp_path / d / "b.csv")[1:]
            for d in ("nnabla", "one", "two", "three")}
    assert sorted(both["one"]) == sorted(both["nnabla"])
    assert [len(rows(tmp_path / d / "b.csv")) for d in ("one", "nnabla")] == [9, 9]  # header + 24 - floor(24 * 70 / 100)
    assert (tmp_path / "one" / "a.csv").read_bytes() == (tmp_path / "two" / "a.csv").read_bytes()
    assert both["one"] != both["three"]


@pytest.mark.slow
def test_created_dataset_loads_and_trains_one_epoch(tmp_path):
    import yaml

    from nnconsole.engine.data.loading import load_dataset

    make_source(tmp_path / "src", classes=("red", "green", "blue"))
    project_dir = tmp_path / "proj"
    made = subprocess.run([sys.executable, "-m", "nnconsole", "new", "-t", "shapes_resnet", str(project_dir)],
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    create(["-i", "../src", "-o", "shapes", "-w", "16", "-g", "16", "-f2", "test.csv", "-r2", "25"], project_dir)
    moved = project_dir / "data" / "mine"  # the paths are relative: the folder can move
    os.rename(project_dir / "shapes", moved)
    train = load_dataset(moved / "train.csv", {"x": (3, 16, 16), "y": (1,)}, cache=False)
    assert train.size == 27 and train.arrays["x"].shape == (27, 3, 16, 16)
    assert sorted(set(train.arrays["y"].ravel().tolist())) == [0.0, 1.0, 2.0]
    project_file = project_dir / "project.yaml"
    project = yaml.safe_load(project_file.read_text(encoding="utf-8"))
    project["datasets"]["training"] = "data/mine/train.csv"
    project["datasets"]["validation"] = "data/mine/test.csv"
    project["config"]["batch_size"] = 8
    project_file.write_text(yaml.safe_dump(project), encoding="utf-8")
    trained = subprocess.run([sys.executable, "-m", "nnconsole", "train", "project.yaml", "--epochs", "1", "-q"],
                             cwd=project_dir, capture_output=True, text=True, timeout=180,
                             env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert trained.returncode == 0, trained.stdout + trained.stderr
    assert "finished" in trained.stdout


def test_existing_output_is_kept_without_force_and_merged_with_it(tmp_path, here):
    make_source(tmp_path / "src")
    out = tmp_path / "out"
    out.mkdir()
    (out / "train.csv").write_text("mine\n")
    os.chmod(out / "train.csv", 0o640)
    (out / "keep.txt").write_text("user file")
    refused = here(["-i", "src", "-o", "out", "-w", "8", "-g", "8"], tmp_path, check=False)
    assert refused.returncode == 2 and "--force" in refused.stderr and "Traceback" not in refused.stderr
    assert (out / "train.csv").read_text() == "mine\n" and sorted(os.listdir(out)) == ["keep.txt", "train.csv"]
    here(["-i", "src", "-o", "out", "-w", "8", "-g", "8", "--force"], tmp_path)
    assert (out / "keep.txt").read_text() == "user file"  # nothing of the user's is deleted
    assert rows(out / "train.csv")[0] == ["x:image", "y:label"]
    assert oct(os.stat(out / "train.csv").st_mode & 0o777) == oct(0o640)  # the replaced file keeps its mode
    assert not [n for n in os.listdir(out) if n.startswith(STAGING_PREFIX)]


def test_stop_on_error_writes_nothing_and_names_the_file(tmp_path, here):
    make_source(tmp_path / "src")
    out = here(["-i", "src", "-o", "out", "-w", "8", "-g", "8", "--on-error", "stop"], tmp_path, check=False)
    assert out.returncode == 2 and "broken.png" in out.stderr and "Traceback" not in out.stderr
    assert sorted(os.listdir(tmp_path)) == ["src"]  # no output folder, no staging folder


def test_refusals_are_clear(tmp_path, here):
    make_source(tmp_path / "src")
    cases = [(["-i", "src", "-o", "src/inner", "-w", "8", "-g", "8"], "inside"),
             (["-i", "missing", "-o", "out", "-w", "8", "-g", "8"], "not found"),
             (["-i", "src", "-o", "out", "-w", "0", "-g", "8"], "--width"),
             (["-i", "src", "-o", "out", "-w", "8", "-g", "8", "-f1", "../x.csv"], "plain file name"),
             (["-i", "src", "-o", "out", "-w", "8", "-g", "8", "-r2", "20"], "--file2"),
             (["-i", "src", "-o", "out", "-w", "8", "-g", "8", "-f1", "labels.txt"], "class names"),
             (["-i", "src", "-o", "out", "-w", "8", "-g", "8", "-f2", "t.csv", "-r1", "70", "-r2", "20"], "100")]
    for args, words in cases:
        out = here(args, tmp_path, check=False)
        assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
    assert sorted(os.listdir(tmp_path)) == ["src"]
    (tmp_path / "a file").write_text("mine")
    out = here(["-i", "src", "-o", "a file", "-w", "8", "-g", "8", "--force"], tmp_path, check=False)
    assert out.returncode == 2 and "not a folder" in out.stderr and (tmp_path / "a file").read_text() == "mine"
    (tmp_path / "src" / "no images").rmdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    out = here(["-i", "empty", "-o", "out", "-w", "8", "-g", "8"], tmp_path, check=False)
    assert out.returncode == 2 and "sub-folder" in out.stderr


def test_hostile_names_links_and_collisions(tmp_path, here):
    src = tmp_path / "src"
    secret = tmp_path / "secret"
    secret.mkdir()
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(secret / "s.png")
    (src / "a, b \"c\"").mkdir(parents=True)
    (src / "日本").mkdir()
    Image.fromarray(np.full((6, 6, 3), 9, np.uint8)).save(src / "a, b \"c\"" / "x y.png")
    Image.fromarray(np.full((6, 6, 3), 50, np.uint8)).save(src / "日本" / "a.jpg")
    Image.fromarray(np.full((6, 6, 3), 90, np.uint8)).save(src / "日本" / "a.png")  # both would be a.png
    os.symlink(secret, src / "linked class")
    os.symlink(secret / "s.png", src / "日本" / "z.png")
    out = here(["-i", "src", "-o", "out", "-w", "4", "-g", "4", "-s", "false"], tmp_path)
    assert out.stderr.count("note: skipped") == 2 and "linked class" in out.stderr and "z.png" in out.stderr
    got = rows(tmp_path / "out" / "train.csv")[1:]
    assert got == [["./a, b \"c\"/x y.png", "0"], ["./日本/a.png", "1"], ["./日本/a_2.png", "1"]]
    assert pixels(tmp_path / "out" / "日本" / "a.png").max() != pixels(tmp_path / "out" / "日本" / "a_2.png").max()
    from nnconsole.engine.data.loading import load_dataset
    assert load_dataset(tmp_path / "out" / "train.csv", cache=False).size == 3
    allowed = here(["-i", "src", "-o", "out2", "-w", "4", "-g", "4", "--allow-outside"], tmp_path)
    assert "outside" not in allowed.stderr and len(rows(tmp_path / "out2" / "train.csv")) == 6
    os.mkdir(os.path.join(os.fsencode(src), b"bad \xff"))  # names that are not UTF-8: skipped with a note
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(os.path.join(os.fsencode(src / "日本"), b"\xfe.png").decode(
        "utf-8", "surrogateescape"))
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(os.path.join(os.fsencode(src), b"bad \xff", b"i.png").decode(
        "utf-8", "surrogateescape"))
    (src / "two\nlines").mkdir()  # a line break in a class name: quoted in the CSV, a space in labels.txt
    Image.fromarray(np.full((6, 6, 3), 9, np.uint8)).save(src / "two\nlines" / "p.png")
    made = here(["-i", "src", "-o", "out3", "-w", "4", "-g", "4", "-s", "false"], tmp_path)
    assert made.stderr.count("not UTF-8") == 2, made.stderr
    from nnconsole.engine.data.labels import read_class_names
    assert read_class_names(str(tmp_path / "out3" / "labels.txt")) == ["a, b \"c\"", "two lines", "日本"]
    assert rows(tmp_path / "out3" / "train.csv")[2] == ["./two\nlines/p.png", "1"]
    assert load_dataset(tmp_path / "out3" / "train.csv", cache=False).size == 4


def test_csv_source_keeps_other_columns_and_contains_dotdot_paths(tmp_path, here):
    data = tmp_path / "data"
    (data / "img").mkdir(parents=True)
    for i in range(3):
        Image.fromarray(np.full((10, 20, 3), 40 * i, np.uint8)).save(data / "img" / f"{i}.bmp")
    Image.fromarray(np.zeros((5, 5), np.uint8)).save(tmp_path / "outside.png")
    (data / "list.csv").write_text("x:image,y:label,w\nimg/0.bmp,2,0.5\nimg\\1.bmp,0,1.5\n../outside.png,1,2\n"
                                   "img/2.bmp,1,3\n", encoding="utf-8")
    out = here(["-i", "data/list.csv", "-o", "made", "-w", "10", "-g", "10", "-c", "1", "-s", "false"], tmp_path)
    assert "line 4" in out.stderr and "outside" in out.stderr
    got = rows(tmp_path / "made" / "train.csv")
    assert got == [["x:image", "y:label", "w"], ["./img/0.png", "2", "0.5"], ["./img/1.png", "0", "1.5"],
                   ["./img/2.png", "1", "3"]]
    assert pixels(tmp_path / "made" / "img" / "2.png").shape == (10, 10)
    assert not (tmp_path / "made" / "labels.txt").exists()  # labels come from the CSV's own column
    allowed = here(["-i", "data/list.csv", "-o", "all", "-w", "10", "-g", "10", "--allow-outside", "-s",
                      "false"], tmp_path)
    assert rows(tmp_path / "all" / "train.csv")[3][0] == "./outside/2_outside.png", allowed.stderr


@pytest.mark.slow
def test_cancel_mid_way_leaves_nothing(tmp_path):
    """SIGTERM (the GUI's Cancel) while the pool converts: exit 130, no output, no staging folder."""
    _many_copies(tmp_path / "src" / "only", 400)
    events = tmp_path / "events.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "nnconsole", "dataset", "create", "-i", "src", "-o", "out",
                                "-w", "512", "-g", "512", "--workers", "2", "--events", str(events)],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_progress(events)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert sorted(os.listdir(tmp_path)) == ["events.jsonl", "src"]


def test_in_process_interrupt_removes_staging(tmp_path):
    make_source(tmp_path / "src")

    def interrupt(done, total, elapsed):
        if done >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        create_dataset(CreateOptions(str(tmp_path / "src"), str(tmp_path / "out"), 8, 8, workers=2), interrupt)
    assert sorted(os.listdir(tmp_path)) == ["src"]


def test_shaping_arithmetic_matches_nnabla_formulas():
    """Trimming a 40x30 image to 12x10 crops the centre 36x30;
    padding a 30x40 to 12x10 adds 9 + 9 black columns; grey from colour truncates 0.299R+0.587G+0.114B."""
    im = np.arange(30 * 40 * 3, dtype=np.uint64).reshape(30, 40, 3).astype(np.uint8)
    from nnconsole.engine.data.create import shaping as image_shaping

    seen = []
    original, original_padded = image_shaping._resize, image_shaping.padded_resize
    image_shaping._resize = lambda a, w, h: seen.append(a.shape) or original(a, w, h)
    image_shaping.padded_resize = lambda a, w, h, pad: seen.append(pad) or original_padded(a, w, h, pad)
    try:
        fit(im, 12, 10, "trimming")
        fit(np.ones((40, 30), np.uint8), 12, 10, "padding")
    finally:
        image_shaping._resize, image_shaping.padded_resize = original, original_padded
    assert seen == [(30, 36, 3), ((0, 0), (9, 9))]  # the padding is computed, never made (issue 25 item 13)
    rgb = np.array([[[255, 0, 0], [10, 20, 30]]], np.uint8)
    assert set_channels(rgb, 1).tolist() == [[76, 18]]  # 76.245 and 18.15, cut


def _many_copies(folder: Path, count: int) -> None:
    """``count`` copies of one noisy 64x64 PNG: quick to write, slow to blow up to 512x512."""
    folder.mkdir(parents=True)
    first = folder / "0000.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(first)
    data = first.read_bytes()
    for i in range(1, count):
        (folder / f"{i:04d}.png").write_bytes(data)


def _wait_for_progress(events: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = events.read_text().splitlines() if events.exists() else []
        if any(json.loads(line).get("done", 0) > 0 for line in lines):
            return
        time.sleep(0.05)
    raise AssertionError("no progress event")


@pytest.mark.slow
def test_killed_run_leaves_only_its_staging_folder_and_the_next_run_removes_it(tmp_path):
    _many_copies(tmp_path / "src" / "only", 400)
    events = tmp_path / "events.jsonl"
    errors = tmp_path.parent / f"{tmp_path.name}.stderr"
    with open(errors, "wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "nnconsole", "dataset", "create", "-i", "src", "-o",
                                    "out", "-w", "512", "-g", "512", "--workers", "2", "--events", str(events), "-q"],
                                   cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr)
    _wait_for_progress(events)
    process.kill()
    process.wait(30)
    left = sorted(n for n in os.listdir(tmp_path) if STAGING_PREFIX in n)  # the staging folder, its marker beside
    assert len(left) == 2 and left[1] == left[0] + STAGING_MARKER and not (tmp_path / "out").exists()
    deadline = time.monotonic() + 30  # the pool's workers are killed with their parent
    while subprocess.run(["pgrep", "-f", str(events)], capture_output=True).stdout.strip():
        assert time.monotonic() < deadline, "a converting process outlived its killed parent"
        time.sleep(0.1)
    assert "Traceback" not in errors.read_text()  # not left to convert on and die of a broken pipe
    create(["-i", "src", "-o", "out", "-w", "8", "-g", "8", "-q"], tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["events.jsonl", "out", "src"]
    assert sorted(os.listdir(tmp_path / "out")) == ["labels.txt", "only", "train.csv"]


def test_only_abandoned_staging_folders_are_removed(tmp_path, here):
    make_source(tmp_path / "src")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead, alive = int(gone.stdout), os.getpid()
    names = {"abandoned": f".out{STAGING_PREFIX}{dead}-00000000", "running": f".out{STAGING_PREFIX}{alive}-11111111",
             "unmarked": f".out{STAGING_PREFIX}{dead}-22222222"}  # the user's own folder of that name
    for key, name in names.items():
        (tmp_path / name).mkdir()
        if key != "unmarked":
            (tmp_path / name / STAGING_MARKER).write_text("")
    here(["-i", "src", "-o", "out", "-w", "8", "-g", "8", "-q"], tmp_path)
    assert sorted(os.listdir(tmp_path)) == sorted(["out", "src", names["running"], names["unmarked"]])


def test_pixel_formats_nnabla_refuses_are_read(tmp_path):
    """RGBA and transparent-palette images (nnabla: 'The image must be RGB or monochrome') lose their alpha;
    16-bit grey is scaled to 8 bits (nnabla's uint8 cast wraps it around)."""
    from nnconsole.engine.data.create.shaping import read_image

    rgba = np.zeros((4, 5, 4), np.uint8)
    rgba[..., 0], rgba[..., 3] = 200, 7
    Image.fromarray(rgba, "RGBA").save(tmp_path / "rgba.png")
    assert read_image(str(tmp_path / "rgba.png")).shape == (4, 5, 3)
    assert read_image(str(tmp_path / "rgba.png"))[..., 0].min() == 200
    palette = Image.new("P", (3, 3))
    palette.putpalette([10, 20, 30] * 256)
    palette.info["transparency"] = 0
    palette.save(tmp_path / "p.png", transparency=0)
    assert read_image(str(tmp_path / "p.png"))[0, 0].tolist() == [10, 20, 30]
    Image.fromarray(np.full((2, 2), 25600, np.uint16)).save(tmp_path / "deep.png")  # nnabla reads 0 (25600 % 256)
    assert read_image(str(tmp_path / "deep.png")).tolist() == [[100, 100], [100, 100]]


def test_force_never_writes_through_a_link_in_the_output_folder(tmp_path, here):
    data = tmp_path / "data"
    (data / "img" / "sub").mkdir(parents=True)
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(data / "img" / "sub" / "a.jpg")
    (data / "list.csv").write_text("x:image,y:label\nimg/sub/a.jpg,0\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out" / "img").mkdir(parents=True)
    os.symlink(elsewhere, tmp_path / "out" / "img" / "sub")  # out/img/sub/a.png would land in elsewhere/
    out = here(["-i", "data/list.csv", "-o", "out", "-w", "4", "-g", "4", "--force"], tmp_path, check=False)
    assert out.returncode == 2 and "is a link" in out.stderr and os.listdir(elsewhere) == []


STOP_REPEATEDLY = """
import sys, tempfile
from nnconsole.engine.data.create.writer import CreateOptions, create_dataset
from nnconsole.engine.data.create.sources import DatasetCreateError
for k in range(25):
    try:
        create_dataset(CreateOptions(sys.argv[1], tempfile.mkdtemp() + "/out", 16, 16, workers=2, on_error="stop"))
    except DatasetCreateError:
        continue
    raise SystemExit("the broken first image did not stop the run")
"""


@pytest.mark.slow
def test_stopping_at_a_bad_image_never_hangs(tmp_path):
    """Stopping while the workers still have images used to deadlock multiprocessing.Pool.terminate (about one
    stop in ten hung for good, measured); each worker now has its own pipe and is simply ended."""
    folder = tmp_path / "src" / "a"
    folder.mkdir(parents=True)
    (folder / "0000_broken.png").write_bytes(b"bad")
    for i in range(1, 200):
        Image.fromarray(np.random.default_rng(i).integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(
            folder / f"{i:04d}.png")
    out = subprocess.run([sys.executable, "-c", STOP_REPEATEDLY, str(tmp_path / "src")], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_a_worker_that_dies_fails_only_the_images_it_had_left(monkeypatch):
    """A converting process killed mid-way (out of memory, say): its remaining images fail with a reason, the
    other worker's all convert, and the call returns."""
    from nnconsole.engine.data.create import convert as image_convert

    def fake(task):
        if task[0] == "4":  # worker 0 takes 0, 2, 4, 6, 8: it dies at 4
            os._exit(9)
        return None

    monkeypatch.setattr(image_convert, "convert_one", fake)
    tasks = [(str(i), "", 1, 1, "resize", 1) for i in range(10)]
    reasons = image_convert.convert_all(tasks, 2)
    assert [i for i, r in enumerate(reasons) if r] == [4, 6, 8]
    assert "exit code 9" in reasons[4]
