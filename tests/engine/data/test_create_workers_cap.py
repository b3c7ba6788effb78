"""``dataset create --workers N`` is capped at the usable CPU cores and the images, and says so (issue 25 item 26)."""
from __future__ import annotations

import numpy as np
from PIL import Image

from nnconsole.engine.cli.main import main as cli_main
from nnconsole.engine.data.create import writer
from nnconsole.engine.data.create.writer import CreateOptions, create_dataset, usable_cores


def _source(folder, count):
    (folder / "cat").mkdir(parents=True)
    for i in range(count):
        Image.fromarray(np.full((4, 4), i * 10, np.uint8), "L").save(folder / "cat" / f"{i}.png")


def _spy(monkeypatch):
    asked = []
    real = writer.convert_all

    def convert_all(tasks, workers, *rest):
        asked.append(workers)
        return real(tasks, 1, *rest)  # converted here: the test is about the number asked for

    monkeypatch.setattr(writer, "convert_all", convert_all)
    return asked


def test_a_huge_worker_count_is_capped_at_the_cores_and_the_images(tmp_path, monkeypatch):
    asked = _spy(monkeypatch)
    _source(tmp_path / "src", 3)
    result = create_dataset(CreateOptions(str(tmp_path / "src"), str(tmp_path / "out"), 4, 4, workers=1_000_000))
    assert asked == [min(usable_cores(), 3)]
    assert any(n.startswith("--workers 1000000: using ") for n in result.notes)
    monkeypatch.setattr(writer, "usable_cores", lambda: 2)
    result = create_dataset(CreateOptions(str(tmp_path / "src"), str(tmp_path / "out2"), 4, 4, workers=64))
    assert asked[-1] == 2 and "--workers 64: using 2 converting processes (one per core; there are 2 CPU cores)" \
        in result.notes


def test_the_cli_says_so_before_converting_and_refuses_a_negative_count(tmp_path, monkeypatch, capsys):
    asked = _spy(monkeypatch)
    monkeypatch.setattr(writer, "usable_cores", lambda: 4)
    _source(tmp_path / "src", 2)
    assert cli_main(["dataset", "create", "-i", str(tmp_path / "src"), "-o", str(tmp_path / "out"), "-w", "4",
                     "-g", "4", "--workers", "500", "-q"]) == 0
    err = capsys.readouterr().err
    assert asked == [2] and "note: --workers 500: using 2 converting processes (one per image; there are 2 images)" \
        in err and err.count("--workers 500") == 1
    try:
        cli_main(["dataset", "create", "-i", str(tmp_path / "src"), "-o", str(tmp_path / "o2"), "-w", "4", "-g", "4",
                  "--workers", "-3"])
    except SystemExit as exc:
        assert exc.code == 2
    assert "expected a number of processes" in capsys.readouterr().err
