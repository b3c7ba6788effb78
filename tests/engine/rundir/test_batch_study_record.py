"""study.json: written atomically, read back equal, and a damaged or foreign file reads as no study."""
import json
import os

from nnconsole.engine.rundir.batch_study import (BatchStudy, Recommendation, StudyPoint, list_studies, read_study,
                                                 study_dir, write_study)


def _study():
    return BatchStudy(name="s1", project="/p/x.yaml", per_worker_batch=32, tolerance=0.005, epochs=3,
                      points=[StudyPoint(workers=1, policy="none", logical_batch=32, state="complete",
                                         validation_error=0.05, run_dir="/r/1"),
                              StudyPoint(workers=4, policy="linear", warmup_epochs=1.5, logical_batch=128,
                                         simulated=True, state="running")],
                      recommendation=Recommendation(1, "none", 0.0, 32, 0.05, 0.05, 0.005, "because"))


def test_round_trip(tmp_path):
    folder = study_dir(str(tmp_path), "s1")
    write_study(folder, _study())
    back = read_study(folder)
    assert back == _study()
    assert back.point(4, "linear", 1.5).simulated and back.point(4, "linear", 1.0) is None
    assert list_studies(str(tmp_path)) == [folder]


def test_damaged_or_foreign_reads_as_none(tmp_path):
    folder = study_dir(str(tmp_path), "bad")
    os.makedirs(folder)
    path = os.path.join(folder, "study.json")
    for text in ["{", "[]", json.dumps({"name": "x"}), json.dumps({"name": "x", "per_worker_batch": 8,
                                                                   "points": [{"workers": 0, "policy": "linear"}]}),
                 json.dumps({"name": "x", "per_worker_batch": 8, "points": [{"workers": 2, "policy": "cubic"}]}),
                 "[" * 100000]:
        with open(path, "w") as fh:
            fh.write(text)
        assert read_study(folder) is None, text
    assert list_studies(str(tmp_path)) == []


def test_newer_writers_extra_keys_are_ignored(tmp_path):
    folder = study_dir(str(tmp_path), "s")
    write_study(folder, _study())
    path = os.path.join(folder, "study.json")
    data = json.load(open(path))
    data["future"] = 1
    data["points"][0]["future"] = 2
    json.dump(data, open(path, "w"))
    assert read_study(folder) == _study()
