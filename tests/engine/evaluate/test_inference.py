"""``nnconsole infer RUN DATA``: outputs against a forward pass computed here in numpy, CSV vs images, hostile input."""
from __future__ import annotations

import csv
import os

import numpy as np
import pytest
from PIL import Image

from nnconsole.engine.cli.main import main as cli_main
from nnconsole.engine.data.csv_reader import DatasetError
from nnconsole.engine.metrics.results import EvaluationError
from nnconsole.engine.evaluate.inference import InferenceError, infer
from nnconsole.engine.rundir.protocol import INFER_FINISHED_EVENT, INFER_PROGRESS_EVENT, read_events
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Datasets, Layer, Network, Project
from tests.support.cli import nnconsole
from nnconsole.engine.rundir.protocol import RESOLVED_FILE
from tests.support.datasets import write_images
from tests.support.runs import CLASSES, make_image_run

def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _probs(rows):
    return np.array([[float(r[f"p_{c}"]) for c in range(CLASSES)] for r in rows])


def test_image_folder_outputs_equal_a_numpy_forward_pass(tmp_path):
    run_dir, w, b = make_image_run(tmp_path)
    paths, pixels = write_images(tmp_path / "photos")
    out = tmp_path / "out.csv"
    seen = []
    summary = infer(run_dir, [str(tmp_path / "photos")], output=str(out), batch_size=2,  # 5 samples: padded last batch
                    top_k=2, progress=lambda done, total: seen.append((done, total)))
    expected = _softmax((pixels / 255.0).reshape(len(paths), -1) @ w + b)
    rows = _read(out)
    assert summary.count == 5 and summary.classes == CLASSES and summary.output == str(out)
    assert [r["source"] for r in rows] == paths  # sorted, absolute
    np.testing.assert_allclose(_probs(rows), expected, rtol=1e-4, atol=1e-6)
    order = np.argsort(-expected, axis=1)
    assert [int(r["prediction"]) for r in rows] == order[:, 0].tolist()
    assert [int(r["top2"]) for r in rows] == order[:, 1].tolist()
    np.testing.assert_allclose([float(r["confidence"]) for r in rows], expected.max(axis=1), rtol=1e-4)
    assert "top3" not in rows[0]  # --top 2
    assert seen == [(2, 5), (4, 5), (5, 5)]
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_a_dataset_csv_gives_the_same_numbers_as_its_images_and_keeps_labels(tmp_path):
    run_dir, w, b = make_image_run(tmp_path, names=["cat", "dog", "bird"])
    paths, pixels = write_images(tmp_path / "set" / "images", count=4)
    data = tmp_path / "set" / "data.csv"
    data.write_text("x:image,y:label\n" + "".join(f"images/{os.path.basename(p)},{i % 3}\n"
                                                  for i, p in enumerate(paths)))
    infer(run_dir, [str(data)], output=str(tmp_path / "from_csv.csv"), batch_size=3)
    infer(run_dir, paths, output=str(tmp_path / "from_images.csv"), batch_size=3)
    from_csv, from_images = _read(tmp_path / "from_csv.csv"), _read(tmp_path / "from_images.csv")
    np.testing.assert_array_equal(_probs(from_csv), _probs(from_images))
    assert [r["source"] for r in from_csv] == paths
    assert [r["label"] for r in from_csv] == ["0", "1", "2", "0"] and "label" not in from_images[0]
    names = ["cat", "dog", "bird"]
    assert [r["prediction_name"] for r in from_csv] == [names[int(r["prediction"])] for r in from_csv]
    assert [r["top1_name"] for r in from_csv] == [r["prediction_name"] for r in from_csv]


def test_a_numeric_csv_without_labels_and_a_regression_network(tmp_path):
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    layers = [Layer("x", "Input", params={"shape": [2], "variable": "x"}),
              Layer("fc", "Affine", ["x"], {"out_shape": 1}),
              Layer("y", "Input", params={"shape": [1], "variable": "y"}),
              Layer("loss", "SquaredError", ["fc", "y"])]
    project = Project(name="reg", network=Network(layers), datasets=Datasets(training="t.csv", validation="t.csv"))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    save_project(project, str(run_dir / RESOLVED_FILE), backup=False)
    nn.clear_parameters()
    build_graph(project.network, 1, "runtime")
    params = nn.get_parameters()
    params["fc/affine/W"].d = np.array([[2.0], [-1.0]], dtype=np.float32)
    params["fc/affine/b"].d = np.array([0.5], dtype=np.float32)
    nn.save_parameters(str(run_dir / "parameters_best.h5"))
    nn.clear_parameters()
    (tmp_path / "new.csv").write_text("x__0,x__1\n1,2\n3,-1\n0.5,0.25\n")  # no label column at all
    summary = infer(str(run_dir), [str(tmp_path / "new.csv")], output=str(tmp_path / "r.csv"))
    rows = _read(tmp_path / "r.csv")
    assert summary.task == "regression"
    assert list(rows[0]) == ["index", "source", "output"]
    np.testing.assert_allclose([float(r["output"]) for r in rows], [0.5, 7.5, 1.25], rtol=1e-5)
    assert [r["source"] for r in rows] == ["row 1", "row 2", "row 3"]


def test_images_of_another_size_are_refused_unless_resized(tmp_path):
    run_dir, w, b = make_image_run(tmp_path)
    paths, _ = write_images(tmp_path / "big", count=2, size=(8, 10))
    with pytest.raises(InferenceError, match=r"im00.png: the image is 8x10 \(HxW\) but the network's input 'x' takes "
                                             r"4x5; fit the images to the input size"):
        infer(run_dir, paths, output=str(tmp_path / "o.csv"))
    assert not (tmp_path / "o.csv").exists()
    infer(run_dir, paths, output=str(tmp_path / "o.csv"), resize=True)
    resized = np.stack([np.asarray(Image.open(p).convert("RGB").resize((5, 4), Image.BILINEAR)).transpose(2, 0, 1)
                        for p in paths]).astype(np.float64)
    expected = _softmax((resized / 255.0).reshape(2, -1) @ w + b)
    np.testing.assert_allclose(_probs(_read(tmp_path / "o.csv")), expected, rtol=1e-4, atol=1e-6)


def test_a_grey_image_feeds_a_colour_network_as_training_decodes_it(tmp_path):
    run_dir, w, b = make_image_run(tmp_path)
    paths, grey = write_images(tmp_path / "grey", count=2, mode="L")
    infer(run_dir, paths, output=str(tmp_path / "o.csv"))
    rgb = np.repeat(grey, 3, axis=1)  # Pillow's L -> RGB copies the grey value into every channel
    expected = _softmax((rgb / 255.0).reshape(2, -1) @ w + b)
    np.testing.assert_allclose(_probs(_read(tmp_path / "o.csv")), expected, rtol=1e-4, atol=1e-6)


def test_an_existing_results_file_is_kept_without_force_and_the_input_never_replaced(tmp_path):
    run_dir, _, _ = make_image_run(tmp_path)
    paths, _ = write_images(tmp_path / "photos", count=2)
    out = tmp_path / "results.csv"
    out.write_text("mine\n")
    os.chmod(out, 0o640)
    with pytest.raises(InferenceError, match="already exists; choose another --output, or add --force"):
        infer(run_dir, paths, output=str(out))
    assert out.read_text() == "mine\n"
    infer(run_dir, paths, output=str(out), force=True)
    assert out.read_text().startswith("index,source,prediction")
    assert os.stat(out).st_mode & 0o777 == 0o640
    data = tmp_path / "data.csv"
    data.write_text("x:image\n" + "".join(f"{p}\n" for p in paths))
    before = data.read_text()
    with pytest.raises(InferenceError, match="would replace the input data"):
        infer(run_dir, [str(data)], output=str(data), force=True)
    assert data.read_text() == before


def test_runs_without_parameters_and_folders_that_are_not_runs_say_what_to_do(tmp_path):
    run_dir, _, _ = make_image_run(tmp_path, with_best=False)
    paths, _ = write_images(tmp_path / "p", count=1)
    with pytest.raises(EvaluationError, match="no best parameters in this run; use --model final"):
        infer(run_dir, paths)
    with pytest.raises(EvaluationError, match="not a run directory"):
        infer(str(tmp_path), paths)
    os.remove(os.path.join(run_dir, "parameters_final.h5"))
    with pytest.raises(EvaluationError, match="train the run to the end of at least one epoch"):
        infer(run_dir, paths, model="final")


def test_hostile_data_is_refused_with_the_file_named(tmp_path):
    run_dir, _, _ = make_image_run(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "fake.png").write_bytes(b"not an image at all")
    with pytest.raises(InferenceError, match=r"fake.png: cannot decode the image"):
        infer(run_dir, [str(bad)], output=str(tmp_path / "o.csv"))
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    with pytest.raises(InferenceError, match="pipe.png: not a regular file"):
        infer(run_dir, [str(fifo)], output=str(tmp_path / "o.csv"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InferenceError, match="the folder holds no image file"):
        infer(run_dir, [str(tmp_path / "empty")], output=str(tmp_path / "o.csv"))
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InferenceError, match="not an image file or a dataset CSV"):
        infer(run_dir, [str(tmp_path / "notes.txt")], output=str(tmp_path / "o.csv"))
    (tmp_path / "nox.csv").write_text("z:image,y\na.png,1\n")
    with pytest.raises(DatasetError, match=r"nox.csv line 1: the header has no variable 'x'"):
        infer(run_dir, [str(tmp_path / "nox.csv")], output=str(tmp_path / "o.csv"))
    (tmp_path / "gone.csv").write_text("x:image\nmissing.png\n")
    with pytest.raises(DatasetError, match=r"gone.csv line 2, column x: image file 'missing.png' not found"):
        infer(run_dir, [str(tmp_path / "gone.csv")], output=str(tmp_path / "o.csv"))
    assert not (tmp_path / "o.csv").exists()


def test_images_cannot_feed_a_network_whose_input_is_not_an_image(tmp_path):
    run_dir, _, _ = make_image_run(tmp_path, shape=(7,))
    paths, _ = write_images(tmp_path / "p", count=1)
    with pytest.raises(InferenceError, match=r"input 'x' has shape \[7\], which is not an image"):
        infer(run_dir, paths, output=str(tmp_path / "o.csv"))


def test_cli_infer_with_relative_paths_from_another_folder(tmp_path, monkeypatch, capsys):
    run_dir, _, _ = make_image_run(tmp_path)
    write_images(tmp_path / "photos", count=3)
    monkeypatch.chdir(tmp_path)
    rel_run = os.path.relpath(run_dir, tmp_path)
    assert cli_main(["infer", rel_run, "photos", "--top", "2", "--events", "events.jsonl"]) == 0
    out = capsys.readouterr().out
    default = os.path.join(run_dir, "inference", "photos_best.csv")
    assert f"results: {default}" in out and "inferred 3/3 samples" in out  # for people; the GUI reads the events
    events, _ = read_events(str(tmp_path / "events.jsonl"))  # --events relative to where the command ran
    assert {e["event"] for e in events[:-1]} == {INFER_PROGRESS_EVENT}
    assert events[-2] == {"event": INFER_PROGRESS_EVENT, "done": 3, "total": 3}  # the last figure always goes
    assert events[-1] == {"event": INFER_FINISHED_EVENT, "output": default, "count": 3}
    assert len(_read(default)) == 3
    assert cli_main(["infer", rel_run, "photos"]) == 2  # exists: refused, exit code 2, no traceback
    err = capsys.readouterr().err
    assert "already exists" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exited:  # argparse refuses it before anything runs
        cli_main(["infer", rel_run, "photos", "--top", "0"])
    assert exited.value.code == 2 and "expected a whole number >= 1, got '0'" in capsys.readouterr().err


@pytest.mark.slow  # two CLI subprocesses (~3 s)
def test_infer_runs_as_a_real_subprocess(tmp_path):
    run_dir, _, _ = make_image_run(tmp_path)
    paths, _ = write_images(tmp_path / "photos", count=2)
    result = nnconsole(["infer", run_dir, *paths, "-o", str(tmp_path / "o.csv")])
    assert "results:" in result.stdout and len(_read(tmp_path / "o.csv")) == 2
    bad = nnconsole(["infer", str(tmp_path), *paths], check=False)
    assert bad.returncode == 2 and "not a run directory" in bad.stderr and "Traceback" not in bad.stderr


def test_class_names_lose_control_characters_and_fall_back_to_numbers(tmp_path):
    from nnconsole.engine.data.labels import class_name, read_class_names

    (tmp_path / "labels.txt").write_text("cat\x1b[31m\ndog,\"x\"\r\n\n\n")
    names = read_class_names(str(tmp_path / "labels.txt"))
    assert names == ["cat[31m", 'dog,"x"']
    assert class_name(names, 1) == 'dog,"x"' and class_name(names, 2) == "2"


@pytest.mark.parametrize("mode", ["trimming", "padding"])
def test_resize_modes_trim_or_pad_to_the_input_aspect_as_dataset_creation_does(tmp_path, mode):
    run_dir, w, b = make_image_run(tmp_path)
    paths, _ = write_images(tmp_path / "wide", count=2, size=(8, 20))  # 8 high, 20 wide; the network takes 4x5
    infer(run_dir, paths, output=str(tmp_path / "o.csv"), resize=mode)
    fitted = []
    for p in paths:
        pixels = np.asarray(Image.open(p).convert("RGB"))
        if mode == "trimming":  # the centre 8x10 (the input's 4:5 aspect), then bilinear to 4x5
            pixels = pixels[:, 5:15]
        else:  # black bands above and below to 16x20, then bilinear to 4x5
            pixels = np.pad(pixels, ((4, 4), (0, 0), (0, 0)))
        fitted.append(np.asarray(Image.fromarray(pixels).resize((5, 4), Image.BILINEAR)).transpose(2, 0, 1))
    expected = _softmax((np.stack(fitted).astype(np.float64) / 255.0).reshape(2, -1) @ w + b)
    np.testing.assert_allclose(_probs(_read(tmp_path / "o.csv")), expected, rtol=1e-4, atol=1e-6)


def test_bounded_memory_images_are_decoded_one_batch_at_a_time(tmp_path, monkeypatch):
    import nnconsole.engine.evaluate.inference as infer_module

    run_dir, _, _ = make_image_run(tmp_path)
    paths, _ = write_images(tmp_path / "many", count=7)
    decoded = []
    real = infer_module.load_image
    monkeypatch.setattr(infer_module, "load_image", lambda *a, **k: decoded.append(a[0]) or real(*a, **k))
    seen = []
    infer(run_dir, paths, output=str(tmp_path / "o.csv"), batch_size=3,
          progress=lambda done, total: seen.append((done, len(decoded))))
    assert seen == [(3, 3), (6, 6), (7, 7)]  # each batch decoded just before it runs, never ahead


def test_cli_resize_mode_gives_the_same_numbers_as_the_api(tmp_path, capsys):
    run_dir, _, _ = make_image_run(tmp_path)
    paths, _ = write_images(tmp_path / "wide", count=2, size=(8, 20))
    infer(run_dir, paths, output=str(tmp_path / "api.csv"), resize="padding")
    assert cli_main(["infer", run_dir, *paths, "-o", str(tmp_path / "cli.csv"), "--resize",
                     "--resize-mode", "padding"]) == 0
    assert (tmp_path / "cli.csv").read_text() == (tmp_path / "api.csv").read_text()
    assert cli_main(["infer", run_dir, *paths, "-o", str(tmp_path / "no.csv")]) == 2
    assert "--resize-mode trimming or padding" in capsys.readouterr().err


def test_a_per_pixel_classifier_writes_its_outputs_not_meaningless_top_classes(tmp_path):
    """Softmax over the channel axis of a (3, 4, 5) map: 60 values a sample are not 60 classes."""
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    layers = [Layer("x", "Input", params={"shape": [3, 4, 5], "variable": "x"}),
              Layer("conv", "Convolution", ["x"], {"outmaps": 3, "kernel": [1, 1]}),
              Layer("y", "Input", params={"shape": [1, 4, 5], "variable": "y"}),
              Layer("loss", "SoftmaxCrossEntropy", ["conv", "y"], {"axis": 0})]
    project = Project(name="seg", network=Network(layers), datasets=Datasets(training="t.csv", validation="t.csv"))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    save_project(project, str(run_dir / RESOLVED_FILE), backup=False)
    nn.clear_parameters()
    build_graph(project.network, 1, "runtime")
    nn.save_parameters(str(run_dir / "parameters_best.h5"))
    nn.clear_parameters()
    paths, _ = write_images(tmp_path / "p", count=2)
    summary = infer(str(run_dir), paths, output=str(tmp_path / "o.csv"))
    rows = _read(tmp_path / "o.csv")
    assert summary.task == "outputs" and "prediction" not in rows[0]
    assert [k for k in rows[0] if k.startswith("output__")] == [f"output__{j}" for j in range(60)]
    values = np.array([[float(r[f"output__{j}"]) for j in range(60)] for r in rows]).reshape(2, 3, 4, 5)
    np.testing.assert_allclose(values.sum(axis=1), 1.0, rtol=1e-5)  # a softmax over the channels of every pixel


def test_parameters_of_another_network_are_refused_naming_the_file(tmp_path):
    import shutil

    run_dir, _, _ = make_image_run(tmp_path / "a")
    other, _, _ = make_image_run(tmp_path / "b", shape=(7,))
    shutil.copyfile(os.path.join(other, "parameters_best.h5"), os.path.join(run_dir, "parameters_best.h5"))
    paths, _ = write_images(tmp_path / "p", count=1)
    with pytest.raises(EvaluationError, match=r"parameters_best.h5: the parameters do not fit this network"):
        infer(run_dir, paths, output=str(tmp_path / "o.csv"))
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.slow  # a CLI subprocess stopped half-way (~4 s)
def test_a_stopped_inference_leaves_no_file_behind(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from tests.support.paths import ROOT

    run_dir, _, _ = make_image_run(tmp_path)
    write_images(tmp_path / "many", count=300)
    out = tmp_path / "out" / "o.csv"
    events = str(tmp_path / "events.jsonl")
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "nnconsole.engine.cli.main", "infer", run_dir, str(tmp_path / "many"),
                             "-o", str(out), "--batch-size", "1", "--events", events], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    first, deadline = [], time.monotonic() + 120
    while not first and proc.poll() is None and time.monotonic() < deadline:  # as the GUI polls the events file
        first, _ = read_events(events)
        time.sleep(0.02)
    assert first[:1] == [{"event": INFER_PROGRESS_EVENT, "done": 1, "total": 300}], \
        (first, None if proc.poll() is None else proc.stderr.read())
    proc.send_signal(signal.SIGTERM)  # what the GUI's Stop sends
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
    assert os.listdir(out.parent) == []  # no results and no temp file
    assert INFER_FINISHED_EVENT not in {e["event"] for e in read_events(events)[0]}  # nor a results file named


def test_infer_runs_the_executor_as_evaluate_does(tmp_path):
    """A project's executor (issue 17) decides the passes per batch: std of identical passes is 0 everywhere."""
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph
    from nnconsole.engine.project.model import Executor

    layers = [Layer("x", "Input", params={"shape": [2], "variable": "x"}),
              Layer("fc", "Affine", ["x"], {"out_shape": 1}),
              Layer("y", "Input", params={"shape": [1], "variable": "y"}),
              Layer("loss", "SquaredError", ["fc", "y"])]
    project = Project(name="reg", network=Network(layers), datasets=Datasets(training="t.csv", validation="t.csv"),
                      executors=[Executor(num_evaluations=3, repeat_evaluation_type="std")])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    save_project(project, str(run_dir / RESOLVED_FILE), backup=False)
    nn.clear_parameters()
    build_graph(project.network, 1, "runtime")
    nn.get_parameters()["fc/affine/b"].d = np.array([0.5], dtype=np.float32)
    nn.save_parameters(str(run_dir / "parameters_best.h5"))
    nn.clear_parameters()
    (tmp_path / "new.csv").write_text("x__0,x__1\n1,2\n3,-1\n")
    infer(str(run_dir), [str(tmp_path / "new.csv")], output=str(tmp_path / "r.csv"))
    assert [float(r["output"]) for r in _read(tmp_path / "r.csv")] == [0.0, 0.0]
