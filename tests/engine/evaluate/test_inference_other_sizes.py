"""Images of another size (issue 28 item 5): the message names the ways out in words (no CLI flag, since the
GUI shows it too), and one wrong-size image no longer has to fail the whole batch: ``skip_other_sizes``
(``--skip-other-sizes``) leaves it out and names it in the summary and the ``infer_finished`` event."""
from __future__ import annotations

import csv
import shutil

import pytest

from nnconsole.engine.evaluate.inference import ImageSizeError, infer
from nnconsole.engine.rundir.protocol import INFER_FINISHED_EVENT, read_events
from tests.support.cli import nnconsole
from tests.support.datasets import write_images
from tests.support.runs import make_image_run


def mixed_images(tmp_path):
    good, _ = write_images(tmp_path / "good", count=3, size=(4, 5))
    big, _ = write_images(tmp_path / "big", count=1, size=(8, 10))
    odd = str(tmp_path / "good" / "odd.png")
    shutil.copy(big[0], odd)
    return good + [odd], odd


def test_the_size_message_names_no_command_line_flag(tmp_path):
    run_dir, _w, _b = make_image_run(tmp_path)
    paths, odd = mixed_images(tmp_path)
    with pytest.raises(ImageSizeError) as caught:
        infer(run_dir, paths, output=str(tmp_path / "o.csv"))
    message = str(caught.value)
    assert "odd.png: the image is 8x10 (HxW)" in message and "takes 4x5" in message
    assert "--" not in message and "skip the images of another size" in message


def test_the_command_line_names_its_flags_the_gui_gets_words(tmp_path, capsys):
    from nnconsole.engine.cli.main import main as cli_main

    run_dir, _w, _b = make_image_run(tmp_path)
    paths, _odd = mixed_images(tmp_path)
    assert cli_main(["infer", run_dir, *paths, "-o", str(tmp_path / "a.csv")]) == 2
    assert "--skip-other-sizes skips them" in capsys.readouterr().err
    events = str(tmp_path / "events.jsonl")
    assert cli_main(["infer", run_dir, *paths, "-o", str(tmp_path / "b.csv"), "--events", events]) == 2
    assert "--" not in capsys.readouterr().err.split("nnconsole infer:")[-1]


def test_a_wrong_size_image_is_skipped_and_named(tmp_path):
    run_dir, _w, _b = make_image_run(tmp_path)
    paths, odd = mixed_images(tmp_path)
    summary = infer(run_dir, paths, output=str(tmp_path / "o.csv"), skip_other_sizes=True)
    assert summary.count == 3 and summary.skipped == [odd]
    with open(tmp_path / "o.csv") as fh:
        sources = [row["source"] for row in csv.DictReader(fh)]
    assert len(sources) == 3 and not any("odd.png" in s for s in sources)


def test_all_images_of_another_size_is_still_an_error(tmp_path):
    run_dir, _w, _b = make_image_run(tmp_path)
    big, _ = write_images(tmp_path / "big", count=2, size=(8, 10))
    with pytest.raises(ImageSizeError, match="none of the 2 images is 4x5"):
        infer(run_dir, big, output=str(tmp_path / "o.csv"), skip_other_sizes=True)


@pytest.mark.slow  # the CLI in a subprocess
def test_the_cli_skips_and_announces_the_skipped_images(tmp_path):
    run_dir, _w, _b = make_image_run(tmp_path)
    paths, odd = mixed_images(tmp_path)
    events = tmp_path / "events.jsonl"
    result = nnconsole(["infer", run_dir, *paths, "-o", str(tmp_path / "o.csv"), "--skip-other-sizes",
                        "--events", str(events)])
    assert result.returncode == 0, result.stderr
    assert "skipped 1 image(s) of another size" in result.stdout
    finished = [e for e in read_events(str(events))[0] if e["event"] == INFER_FINISHED_EVENT]
    assert finished[-1]["skipped"] == [odd] and finished[-1]["count"] == 3
