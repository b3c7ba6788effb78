"""Packaging: the Linux desktop files, the frozen app's entry point and runtime paths, and (opt-in,
``pytest -m packaging``) the wheel and sdist installed into clean venvs from PyPI.

The always-on tests are cheap: they parse the desktop entry, AppStream metainfo, MIME type and icons,
check that they name each other consistently, and exercise the app's argument dispatch and the
bundled-Open-MPI environment without building anything.
"""
from __future__ import annotations

import configparser
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from nnconsole.engine import helper_processes as runtime_paths
from tests.support.paths import ROOT, load_script

PACKAGING = os.path.join(ROOT, "packaging")
LINUX = os.path.join(PACKAGING, "linux")
APP_ID = "io.github.nnconsole.NNConsole"
MIME_TYPE = "application/x-nnconsole-project+yaml"


def _desktop_entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # keys are case-sensitive
    with open(os.path.join(LINUX, f"{APP_ID}.desktop"), encoding="utf-8") as fh:
        parser.read_file(fh)
    return parser["Desktop Entry"]


def _png_size(path: str) -> tuple:
    with open(path, "rb") as fh:
        header = fh.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", header[16:24])


# ---- desktop entry, metainfo, MIME type, icons ----------------------------------------------------
def test_desktop_entry_runs_the_gui_with_a_file_and_names_an_existing_icon():
    entry = _desktop_entry()
    assert entry["Type"] == "Application"
    assert entry["Exec"] == "nnconsole-gui %f"
    assert entry["Terminal"] == "false"
    categories = entry["Categories"].rstrip(";").split(";")
    assert {"Development", "Science"} <= set(categories)
    assert entry["MimeType"].rstrip(";").split(";") == [MIME_TYPE]
    icon = entry["Icon"]
    assert os.path.isfile(os.path.join(LINUX, f"{icon}.svg"))
    assert _png_size(os.path.join(LINUX, f"{icon}.png")) == (128, 128)


def test_icon_svg_is_square_xml():
    root = ET.parse(os.path.join(LINUX, f"{APP_ID}.svg")).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    _, _, width, height = (float(v) for v in root.attrib["viewBox"].split())
    assert width == height == 128


def test_metainfo_matches_the_desktop_entry_icon_and_mime_type():
    root = ET.parse(os.path.join(LINUX, f"{APP_ID}.metainfo.xml")).getroot()
    assert root.tag == "component" and root.attrib["type"] == "desktop-application"
    assert root.findtext("id") == APP_ID
    assert root.findtext("project_license") == "Apache-2.0"
    assert root.findtext("name") and root.findtext("summary")
    assert len(root.findall("description/p")) >= 1
    assert root.find("launchable").text == f"{APP_ID}.desktop"
    assert os.path.isfile(os.path.join(LINUX, root.find("launchable").text))
    icon = root.find("icon")
    assert icon.attrib["type"] == "stock" and icon.text == _desktop_entry()["Icon"]
    assert root.findtext("provides/mediatype") == MIME_TYPE
    assert {b.text for b in root.findall("provides/binary")} == {"nnconsole", "nnconsole-gui"}
    assert root.find("releases/release").attrib["version"] == "0.1.0"


def test_mime_type_recognises_saved_projects_by_their_first_key():
    ns = {"m": "http://www.freedesktop.org/standards/shared-mime-info"}
    root = ET.parse(os.path.join(LINUX, f"{APP_ID}.mime.xml")).getroot()
    mime = root.find("m:mime-type", ns)
    assert mime.attrib["type"] == MIME_TYPE
    assert mime.find("m:sub-class-of", ns).attrib["type"] == "application/yaml"
    match = mime.find("m:magic/m:match", ns)
    start, end = (int(v) for v in match.attrib["offset"].split(":"))
    # every template starts with that key within the magic's window (after its comment line)
    for name in ("digits_cnn", "iris_mlp", "wine_mlp", "diabetes_regression", "shapes_resnet", "binary_digits",
                 "sine_rnn", "gan_2d", "digits_search"):
        with open(os.path.join(ROOT, "project_templates", name, "project.yaml"), encoding="utf-8") as fh:
            head = fh.read(end + len(match.attrib["value"]))
        assert start <= head.find(match.attrib["value"]) <= end, name


@pytest.mark.parametrize("tool,args,name", [
    ("desktop-file-validate", [], f"{APP_ID}.desktop"),
    ("appstreamcli", ["validate", "--no-net"], f"{APP_ID}.metainfo.xml"),
])
def test_freedesktop_validators_accept_the_files(tool, args, name):
    """The distributions' own validators (apt: desktop-file-utils, appstream), where installed."""
    if not shutil.which(tool):
        pytest.skip(f"{tool} not installed")
    result = subprocess.run([tool] + args + [os.path.join(LINUX, name)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_install_desktop_installs_and_uninstalls_into_a_prefix(tmp_path):
    script = os.path.join(LINUX, "install_desktop.sh")
    prefix = tmp_path / "share"
    subprocess.run(["bash", script, "--prefix", str(prefix), "--exec", "/opt/nnc/nnconsole-app"], check=True,
                   capture_output=True, timeout=60)
    desktop = (prefix / "applications" / f"{APP_ID}.desktop").read_text()
    assert "Exec=/opt/nnc/nnconsole-app %f" in desktop
    for rel in (f"metainfo/{APP_ID}.metainfo.xml", f"icons/hicolor/scalable/apps/{APP_ID}.svg",
                f"icons/hicolor/128x128/apps/{APP_ID}.png", f"mime/packages/{APP_ID}.xml"):
        assert (prefix / rel).is_file(), rel
    subprocess.run(["bash", script, "--prefix", str(prefix), "--uninstall"], check=True, capture_output=True,
                   timeout=60)
    assert not (prefix / "applications" / f"{APP_ID}.desktop").exists()


# ---- the frozen app's entry point and runtime paths -----------------------------------------------
def test_app_entry_dispatches_cli_modules_and_project_files(monkeypatch, capsys, tmp_path):
    app = load_script(os.path.join(PACKAGING, "nnconsole_app.py"), "nnconsole_app_under_test")
    assert app.main(["templates"]) == 0
    assert "digits_cnn" in capsys.readouterr().out
    monkeypatch.delitem(sys.modules, "nnconsole.engine.train.worker", raising=False)  # as in a fresh worker process
    assert app.main(["--run-module", "nnconsole.engine.train.worker"]) == 2  # the worker's own usage error, via runpy
    assert "usage: python -m nnconsole.engine.train.worker RUN_DIR" in capsys.readouterr().err
    assert app.main(["-m", "nnconsole.engine.cli.main", "templates"]) == 0  # what the GUI's QProcess runs
    assert "iris_mlp" in capsys.readouterr().out
    assert app.main(["--run-module"]) == 2
    opened = []
    monkeypatch.setattr(app, "run_gui", lambda args: opened.append(args) or 0)
    project = tmp_path / "project.yaml"
    project.write_text("format_version: 2\n")
    assert app.main([str(project)]) == 0 and app.main([]) == 0 and app.main(["gui", "x.yaml"]) == 0
    assert opened == [[str(project)], [], ["x.yaml"]]


def test_frozen_environment_points_open_mpi_and_mpi4py_at_the_bundle(monkeypatch, tmp_path):
    env = {"OPAL_PREFIX": "/usr/lib/openmpi"}
    runtime_paths.configure_frozen_environment(env)  # not frozen: nothing changes
    assert env == {"OPAL_PREFIX": "/usr/lib/openmpi"}
    prefix = tmp_path / "openmpi"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib").mkdir()
    (prefix / "lib" / runtime_paths.LIBMPI_SONAME).write_bytes(b"")
    mpiexec = prefix / "bin" / "mpiexec"
    mpiexec.write_text("#!/bin/sh\n")
    mpiexec.chmod(0o755)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    runtime_paths.configure_frozen_environment(env)
    assert env["OPAL_PREFIX"] == env["PMIX_PREFIX"] == str(prefix)
    assert env["MPI4PY_LIBMPI"] == str(prefix / "lib" / runtime_paths.LIBMPI_SONAME)
    assert runtime_paths.bundled_mpiexec() == str(mpiexec)
    assert runtime_paths.python_module_command("nnconsole.engine.train.worker") == [sys.executable, "--run-module",
                                                                     "nnconsole.engine.train.worker"]
    assert runtime_paths.cli_command() == [sys.executable]


def test_dist_inspection_flags_tests_caches_and_missing_images():
    inspect = load_script(os.path.join(PACKAGING, "inspect_dist.py"), "inspect_dist_under_test")
    templates = inspect.WHEEL_LAYOUT["project_templates"]
    good = [f"{p}/__init__.py" for p in inspect.WHEEL_LAYOUT.values()]
    for name in inspect.TEMPLATES:
        good += [f"{templates}/{name}/{m}" for m in ("project.yaml", "README.md", "data/train.csv",
                                                     "data/validation.csv")]
    good += [f"{templates}/digits_cnn/data/images/{i:05d}.png" for i in range(3)]
    assert inspect.check_names("wheel", good, 3, inspect.WHEEL_LAYOUT) == []
    bad = good[:-1] + ["tests/test_x.py", f"{templates}/digits_cnn/data/.nnconsole-cache/a.npz",
                       "nnconsole/engine/__pycache__/cli.cpython-310.pyc"]
    problems = inspect.check_names("wheel", bad, 3, inspect.WHEEL_LAYOUT)
    assert any("2 template PNGs, expected 3" in p for p in problems)
    assert sum("unexpected member" in p for p in problems) == 3
    # the sdist keeps the repository's folders
    sdist = [n.replace("nnconsole/templates/", "project_templates/").replace("nnconsole/engine/", "engine/")
             .replace("nnconsole/app/", "console_app/") for n in good]
    assert inspect.check_names("sdist", sdist, 3, inspect.SDIST_LAYOUT) == []


def test_every_source_package_is_listed_under_the_one_nnconsole_namespace():
    """pyproject.toml lists the packages (package-dir maps the folders): a new sub-package must be added."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as fh:
        text = fh.read()
    block = re.search(r"^packages = \[(.*?)^\]", text, re.S | re.M).group(1)
    listed = set(re.findall(r'"([\w.]+)"', block))
    folders = {"nnconsole": "nnconsole", "engine": "nnconsole.engine", "console_app": "nnconsole.app",
               "project_templates": "nnconsole.templates"}
    found = set()
    for folder, package in folders.items():
        for here, dirs, files in os.walk(os.path.join(ROOT, folder)):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__"))
                       and not (folder == "project_templates" and d in ("data", "results"))]
            if "__init__.py" in files:
                rel = os.path.relpath(here, os.path.join(ROOT, folder))
                found.add(package if rel == "." else package + "." + rel.replace(os.sep, "."))
    assert listed == found


def test_spec_and_hook_compile():
    for name in ("nnconsole.spec", os.path.join("hooks", "hook-mpi4py.py")):
        with open(os.path.join(PACKAGING, name), encoding="utf-8") as fh:
            compile(fh.read(), name, "exec")


# ---- opt-in: real builds --------------------------------------------------------------------------
@pytest.mark.packaging
def test_wheel_and_sdist_install_into_clean_venvs_and_train(tmp_path):
    """~3 minutes with a warm pip cache: build both, then install each from PyPI and train one epoch."""
    out = tmp_path / "dist"
    subprocess.run(["bash", os.path.join(PACKAGING, "build_dist.sh"), str(out)], check=True, timeout=900)
    result = subprocess.run(["bash", os.path.join(PACKAGING, "check_dist.sh"), str(out)], timeout=1800,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "check_dist: all checks passed" in result.stderr


@pytest.mark.packaging
def test_frozen_app_builds_and_trains_with_two_workers():
    """Builds dist/nnconsole-app (a few minutes the first time) and runs its smoke test."""
    subprocess.run(["bash", os.path.join(PACKAGING, "build_app.sh")], check=True, timeout=1800)
    result = subprocess.run(["bash", os.path.join(PACKAGING, "smoke_test_app.sh")], timeout=900,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "smoke_test_app: all checks passed" in result.stderr
