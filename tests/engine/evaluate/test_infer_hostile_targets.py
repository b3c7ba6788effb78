"""``nnconsole infer``/``export``/``evaluate`` against hostile outputs and names (issue 25 items 4, 13, 18, 19):
``--force`` never replaces what is not a regular file, a path through a file is refused in words with exit 2,
file names that are not UTF-8 are written, and the batch never outgrows the data."""
from __future__ import annotations

import csv
import os
import socket
import stat
import threading
from pathlib import Path
from typing import List, Tuple

import numpy as np
import pytest
from PIL import Image

from nnconsole.engine.cli.main import main as cli_main
from nnconsole.engine.evaluate import inference
from nnconsole.engine.evaluate.inference import InferenceError, infer
from nnconsole.engine.interop.files import export_run
from nnconsole.engine.interop.report import InteropError
from tests.support.cli import nnconsole
from tests.support.runs import make_image_run

GREY = (1, 4, 5)  # grey, 4 high, 5 wide


def make_run(root) -> str:
    """A finished run of a grey-image classifier with random weights."""
    return make_image_run(root, shape=GREY)[0]


def write_images(folder: Path, names: List[str], size: Tuple[int, int] = GREY[1:]) -> List[str]:
    """Random grey images of (H, W) ``size`` named ``names`` (str or bytes) in ``folder``; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for name in names:
        path = folder / (name if isinstance(name, str) else name.decode("utf-8", "surrogateescape"))
        Image.fromarray(rng.integers(0, 256, size, dtype=np.uint8), "L").save(path, format="PNG")
        paths.append(str(path))
    return paths




def _read_fifo_in_background(path):
    got: list = []

    def read():
        with open(path, "rb") as fh:
            got.append(fh.read())
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, got


def test_infer_force_writes_into_a_fifo_and_never_replaces_it(tmp_path):
    run_dir = make_run(tmp_path)
    images = write_images(tmp_path / "imgs", ["a.png", "b.png"])
    fifo = tmp_path / "results.csv"
    os.mkfifo(fifo)
    thread, got = _read_fifo_in_background(fifo)
    infer(run_dir, images, output=str(fifo), force=True)
    thread.join(20)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced by a plain file"
    assert got and got[0].decode().startswith("index,source,prediction")
    assert sorted(os.listdir(tmp_path)) == ["data", "imgs", "results", "results.csv", "tiny.yaml"]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_infer_and_export_force_onto_a_device_leave_the_device(tmp_path):
    run_dir = make_run(tmp_path)
    images = write_images(tmp_path / "imgs", ["a.png"])
    null = tmp_path / "null"  # /dev/null's device numbers: the system's own is never put at risk
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    infer(run_dir, images, output=str(null), force=True)
    export_run(run_dir, "nnp", str(null), force=True)
    assert stat.S_ISCHR(os.lstat(null).st_mode)


def test_export_force_writes_into_a_fifo_and_refuses_a_folder(tmp_path):
    run_dir = make_run(tmp_path)
    fifo = tmp_path / "model.nnp"
    os.mkfifo(fifo)
    thread, got = _read_fifo_in_background(fifo)
    export_run(run_dir, "nnp", str(fifo), force=True)
    thread.join(20)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and got[0][:2] == b"PK"  # the .nnp (a zip) went through the pipe
    folder = tmp_path / "out.nnp"
    folder.mkdir()
    (folder / "mine").write_text("kept")
    with pytest.raises(InteropError, match="out.nnp is a folder, not a file; choose another -o"):
        export_run(run_dir, "nnp", str(folder), force=True)
    assert (folder / "mine").read_text() == "kept"


def test_infer_force_refuses_a_folder_or_a_socket(tmp_path):
    run_dir = make_run(tmp_path)
    images = write_images(tmp_path / "imgs", ["a.png"])
    folder = tmp_path / "out.csv"
    folder.mkdir()
    with pytest.raises(InferenceError, match="out.csv is a folder, not a file"):
        infer(run_dir, images, output=str(folder), force=True)
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s.csv"))
        with pytest.raises(InferenceError, match="s.csv is a socket, not a file"):
            infer(run_dir, images, output=str(tmp_path / "s.csv"), force=True)
        assert stat.S_ISSOCK(os.lstat(tmp_path / "s.csv").st_mode)
    finally:
        sock.close()


def test_an_output_through_a_file_is_refused_in_words_with_exit_2(tmp_path, capsys):
    run_dir = make_run(tmp_path)
    images = write_images(tmp_path / "imgs", ["a.png"])
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    assert cli_main(["infer", run_dir, *images, "-o", str(notes / "x.csv"), "-q"]) == 2
    assert f"{notes} is a file, not a folder" in capsys.readouterr().err
    assert cli_main(["evaluate", run_dir, "-o", str(notes)]) == 2
    err = capsys.readouterr().err
    assert f"{notes} is a file, not a folder; give --output a folder" in err and "File exists" not in err
    assert cli_main(["export", run_dir, "-f", "nnp", "-o", str(notes / "m.nnp")]) == 2
    assert f"{notes} is a file, not a folder" in capsys.readouterr().err
    assert notes.read_text() == "my notes"


def test_images_whose_names_are_not_utf8_are_inferred_and_named(tmp_path):
    run_dir = make_run(tmp_path)
    folder = tmp_path / "imgs"
    write_images(folder, ["plain.png", b"caf\xe9.png", b"\xff\xfe.png"])
    out = tmp_path / "out.csv"
    result = nnconsole(["infer", run_dir, str(folder), "-o", str(out)], check=False,
                       env={"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8"})
    assert result.returncode == 0, result.stderr
    with open(out, newline="", encoding="utf-8") as fh:  # the results stay valid UTF-8
        sources = sorted(os.path.basename(row["source"]) for row in csv.DictReader(fh))
    assert sources == sorted(["plain.png", "caf\\xe9.png", "\\xff\\xfe.png"])


def test_the_batch_never_outgrows_the_data(tmp_path, monkeypatch):
    run_dir = make_run(tmp_path)
    images = write_images(tmp_path / "imgs", ["a.png", "b.png", "c.png"])
    built = []
    real = inference.build_runtime

    def build_runtime(view, batch_size):
        built.append(batch_size)
        assert batch_size <= 3, f"a network for {batch_size} samples was built for 3 images"
        return real(view, batch_size=batch_size)

    monkeypatch.setattr(inference, "build_runtime", build_runtime)
    summary = infer(run_dir, images, output=str(tmp_path / "o.csv"), batch_size=100_000_000)
    assert summary.count == 3 and built == [3]
