"""Bundled templates: their CSVs load with the shapes their project.yaml Input layers declare."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from nnconsole import templates as project_templates
from nnconsole.engine.data.loading import class_histogram, load_dataset
from nnconsole.engine.project.model import FORMAT_VERSION
from tests.support.paths import ROOT, load_script

# name -> (total samples, number of classes or None for regression, input shape of x)
EXPECTED = {
    "digits_cnn": (1797, 10, [1, 8, 8]),
    "wine_mlp": (178, 3, [13]),
    "iris_mlp": (150, 3, [4]),
    "diabetes_regression": (442, None, [10]),
    "shapes_resnet": (1300, 10, [3, 16, 16]),
    "binary_digits": (1797, 10, [1, 8, 8]),
    "digits_search": (1797, 10, [1, 8, 8]),
    "sine_rnn": (500, None, [16, 1]),
    "gan_2d": (500, None, [2]),  # two networks, variables x and z: tests/templates/test_gan_2d.py checks it
    "vat_digits": (1797, 10, [1, 8, 8]),  # three networks, variables x, y and xu: tests/templates/test_vat_digits.py
}
# validation share of the samples where it is not ~80/20 (shapes: 100 train + 30 validation per class)
VALIDATION_SHARE = {"shapes_resnet": 300 / 1300}
TEMPLATES = {t.name: t for t in project_templates.list_templates()}


def input_shapes(project: dict) -> dict:
    shapes = {}
    for layer in project["network"]["layers"]:
        if layer["type"] == "Input":
            params = layer.get("params", {})
            shapes[params.get("variable", layer["name"])] = tuple(params["shape"])
    return shapes


def test_template_list_and_default():
    assert set(TEMPLATES) == set(EXPECTED)
    assert project_templates.list_templates()[0].name == project_templates.DEFAULT_TEMPLATE == "digits_cnn"
    for t in TEMPLATES.values():
        assert t.title and len(t.description) > 40 and t.path == project_templates.template_path(t.name)
        assert t.project_file.is_file()
    with pytest.raises(KeyError, match="digits_cnn"):
        project_templates.template_path("no_such_template")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_template_datasets_match_network(name, tmp_path):
    if name == "gan_2d":
        pytest.skip("a GAN reads real points x and noise z (no label y); tests/templates/test_gan_2d.py checks it")
    if name == "vat_digits":
        pytest.skip("VAT reads labelled x, y and unlabelled xu; tests/templates/test_vat_digits.py checks it")
    total, classes, x_shape = EXPECTED[name]
    folder = project_templates.template_path(name)
    project = yaml.safe_load((folder / "project.yaml").read_text(encoding="utf-8"))
    assert project["format_version"] == FORMAT_VERSION and project["name"] == name
    assert project["multi_gpu"] == {"workers": 1, "scaling": "linear"}
    assert project["optimizer"]["schedule"]["type"] == "exponential"
    shapes = input_shapes(project)
    assert shapes == {"x": tuple(x_shape), "y": (1,)}
    layers = {layer["name"]: layer for layer in project["network"]["layers"]}
    assert layers["loss"]["inputs"][1] == "y" and layers["loss"]["inputs"][0] in layers
    boxes = [tuple(layer["position"]) for layer in project["network"]["layers"]]
    for i, a in enumerate(boxes):  # nodes (about 220 x 52 on the canvas) never overlap
        for b in boxes[i + 1:]:
            assert abs(a[0] - b[0]) >= 240 or abs(a[1] - b[1]) >= 80, (a, b)
    for layer in project["network"]["layers"]:
        for src in layer["inputs"]:
            assert src in layers
            if layer["type"] != "Delay":  # a Delay reads the next step's value: the loop goes back up
                assert layers[src]["position"][1] < layer["position"][1]  # data flows top to bottom
    sets = {}
    for role in ("training", "validation"):
        csv_path = folder / project["datasets"][role]
        ds = load_dataset(csv_path, shapes, normalize=project["datasets"]["normalize"], cache_dir=tmp_path)
        assert ds.variables == ["x", "y"]
        assert ds.arrays["x"].shape == (ds.size,) + tuple(x_shape)
        assert ds.arrays["y"].shape == (ds.size, 1)
        assert np.isfinite(ds.arrays["x"]).all()
        sets[role] = ds
    train, val = sets["training"], sets["validation"]
    assert train.size + val.size == total
    assert abs(val.size / total - VALIDATION_SHARE.get(name, 0.2)) < 0.01  # ~80/20 split
    if name == "sine_rnn":  # sine waves of amplitude <= 1 plus noise, the next clean value as target
        assert np.abs(train.arrays["x"]).max() < 1.3 and np.abs(train.arrays["y"]).max() <= 1.0
        return
    if classes is None:  # standardised with training statistics
        np.testing.assert_allclose(train.arrays["x"].mean(0), 0, atol=1e-4)
        np.testing.assert_allclose(train.arrays["x"].std(0), 1, atol=1e-3)
        np.testing.assert_allclose(train.arrays["y"].mean(), 0, atol=1e-4)
        return
    h_train, h_val = class_histogram(train, "y"), class_histogram(val, "y")
    assert sorted(h_train) == sorted(h_val) == list(range(classes))
    assert sum(h_train.values()) + sum(h_val.values()) == total
    for c in range(classes):  # stratified: every class split ~80/20
        share = h_val[c] / (h_train[c] + h_val[c])
        assert abs(share - VALIDATION_SHARE.get(name, 0.2)) < 0.05, (c, share)
    if name == "shapes_resnet":  # 8-bit colour pixels scaled to [0, 1], not standardised
        x = train.arrays["x"]
        assert 0.0 <= x.min() and x.max() <= 1.0 and len(np.unique(np.round(x * 255))) > 200
    elif name in ("digits_cnn", "binary_digits", "digits_search"):
        x = train.arrays["x"]
        assert 0.0 <= x.min() and x.max() <= 1.0 and x.max() == 1.0
        # 8-bit pixels holding the 17 levels of the 0..16 counts, round(v * 255 / 16)
        np.testing.assert_allclose(x * 255, np.round(x * 255), atol=1e-3)
        levels = np.unique(np.round(x * 255))
        assert len(levels) == 17
        np.testing.assert_array_equal(levels, np.round(np.arange(17) * 255 / 16))
    else:
        np.testing.assert_allclose(train.arrays["x"].mean(0), 0, atol=1e-4)
        np.testing.assert_allclose(train.arrays["x"].std(0), 1, atol=1e-3)


def test_digits_images_are_small_8bit_pngs():
    folder = project_templates.template_path("digits_cnn") / "data" / "images"
    files = sorted(folder.glob("*.png"))
    assert len(files) == 1797 and files[0].name == "00000.png"
    total = sum(f.stat().st_size for f in files)
    assert total < 1_000_000, total
    from PIL import Image
    with Image.open(files[0]) as img:
        assert img.mode == "L" and img.size == (8, 8)


def test_shapes_images_are_small_rgb_pngs_and_regenerate_identically(tmp_path):
    """The committed shapes data is what scripts/make_shapes_dataset.py writes, byte for byte, and < 2 MB."""
    from pathlib import Path

    data = project_templates.template_path("shapes_resnet") / "data"
    files = sorted((data / "images").glob("*.png"))
    assert len(files) == 1300
    assert sum(f.stat().st_size for f in [*files, *data.glob("*.csv")]) < 2_000_000  # what is committed
    from PIL import Image
    with Image.open(files[0]) as img:
        assert img.mode == "RGB" and img.size == (16, 16)
    script = Path(ROOT) / "scripts" / "make_shapes_dataset.py"
    module = load_script(str(script))
    assert module.generate(tmp_path) == {"train": 1000, "validation": 300}
    for name in ("train.csv", "validation.csv", "images/00000.png", "images/01299.png"):
        assert (tmp_path / name).read_bytes() == (data / name).read_bytes(), name


@pytest.mark.parametrize("copy", ["binary_digits", "digits_search"])
def test_digits_copies_are_the_digits_data(copy):
    """binary_digits and digits_search carry their own copy (a template is copied alone) of exactly digits_cnn's data."""
    ours = project_templates.template_path(copy) / "data"
    theirs = project_templates.template_path("digits_cnn") / "data"
    for name in ("train.csv", "validation.csv"):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes()
    mine = sorted(p.name for p in (ours / "images").glob("*.png"))
    assert mine == sorted(p.name for p in (theirs / "images").glob("*.png")) and len(mine) == 1797
    for name in mine[::97]:
        assert (ours / "images" / name).read_bytes() == (theirs / "images" / name).read_bytes()
