"""The launcher's dataset checks stream the training CSV once (issue 31): the header, every row, the labels'
range and each distinct image file are checked in one pass, whose row count the plan reuses."""
from __future__ import annotations

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.data import csv_stream
from nnconsole.engine.launch.launcher import plan_for
from tests.support.image_projects import cycled_image_project


def test_validating_and_planning_read_each_dataset_csv_once(tmp_path, monkeypatch):
    path = cycled_image_project(str(tmp_path / "p"), rows=40)
    passes = []
    real = csv_stream.CsvStream.chunks

    def counted(self):
        passes.append(self.path.name)
        return real(self)

    monkeypatch.setattr(csv_stream.CsvStream, "chunks", counted)
    project = load_valid_project(path)
    plan = plan_for(project, workers=1)
    assert sorted(passes) == ["train.csv", "valid.csv"]
    assert plan.dataset_size == 40


def test_a_csv_changed_after_its_check_is_counted_again(tmp_path):
    path = cycled_image_project(str(tmp_path / "p"), rows=40)
    project = load_valid_project(path)
    csv = tmp_path / "p" / "train.csv"
    csv.write_text(csv.read_text() + "img/0.png,0\n", encoding="utf-8")
    assert csv_stream.peek_csv(csv, 0).row_count == 41
    assert project is not None
