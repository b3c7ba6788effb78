"""Hostile and damaged input (issue 13, items 2, 5 and 20): every case ends in a located message
(file, field, fix) and exit code 2, never a traceback, a read outside the project or a memory blow-up.
"""
from __future__ import annotations

import os
import shutil

import pytest

from nnconsole.engine.project.errors import ProjectError
from nnconsole.engine.project.io import load_project
from tests.support.cli import nnconsole
from tests.support.paths import ROOT
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.timing import budget

TEMPLATE = os.path.join(ROOT, "project_templates", "iris_mlp")


@pytest.fixture
def iris(tmp_path) -> str:
    """A private copy of the iris template in ``tmp_path/iris``; returns the project path."""
    dest = tmp_path / "iris"
    shutil.copytree(TEMPLATE, dest, ignore=shutil.ignore_patterns(".nnconsole-cache", "results"))
    return str(dest / "project.yaml")


def _set(path: str, old: str, new: str) -> str:
    text = open(path).read()
    assert old in text
    with open(path, "w") as fh:
        fh.write(text.replace(old, new, 1))
    return text.replace(old, new, 1)


def _cli_refuses(args, *words: str) -> str:
    out = nnconsole(args, check=False, timeout=120)
    assert out.returncode == 2, (args, out.stdout, out.stderr)
    assert "Traceback" not in out.stdout + out.stderr, out.stderr
    for word in words:
        assert word in out.stdout + out.stderr, (word, out.stdout, out.stderr)
    return out.stdout + out.stderr


# ---- item 2: config.initial_parameters follows the dataset rule ----------------------------------------
@pytest.mark.slow
def test_initial_parameters_outside_the_project_need_the_users_permission(iris, tmp_path):
    import nnabla as nn
    import nnabla.parametric_functions as PF

    secret = tmp_path / "secret.h5"
    with nn.parameter_scope("fc1"):
        PF.affine(nn.Variable((1, 4)), 32)
    nn.save_parameters(str(secret))
    nn.clear_parameters()
    text = _set(iris, "  seed: 0\n", "  seed: 0\n  initial_parameters: ../secret.h5\n")
    with pytest.raises(ProjectError) as info:
        load_valid_project(iris)
    [problem] = [p for p in info.value.problems if p.path == "config.initial_parameters"]
    assert "outside the project's folder" in problem.message and "--allow-outside-data" in problem.fix
    assert problem.file == iris and problem.line == text.splitlines().index("  initial_parameters: ../secret.h5") + 1
    # The CLI refuses both validate and train (nothing read, no run folder), and honours the user's consent.
    _cli_refuses(["validate", iris], "config.initial_parameters", "--allow-outside-data")
    _cli_refuses(["train", iris, "-q"], "config.initial_parameters", "--allow-outside-data")
    # The same from another working directory, with the project given by a relative path.
    _cli_refuses(["validate", os.path.relpath(iris, ROOT)], "config.initial_parameters", str(secret))
    assert not os.path.exists(os.path.join(os.path.dirname(iris), "results"))
    assert load_valid_project(iris, allow_outside_data=True).config.initial_parameters == "../secret.h5"


@pytest.mark.slow
def test_a_missing_initial_parameters_file_is_reported_by_validate(iris):
    _set(iris, "  seed: 0\n", "  seed: 0\n  initial_parameters: weights/start.h5\n")
    text = _cli_refuses(["validate", iris], iris, "config.initial_parameters", "not found")
    assert "relative to the project file" in text
    _cli_refuses(["train", iris, "-q"], "config.initial_parameters", "not found")


# ---- item 5: resource bombs are refused quickly with bounded memory --------------------------------------
def _refused_within_bounds(action, seconds: float = 5, megabytes: int = 200) -> Exception:
    """Run ``action``; it must raise, within ``seconds`` and with a Python heap peak under ``megabytes``."""
    import time
    import tracemalloc

    tracemalloc.start()
    start = time.monotonic()
    try:
        action()
    except Exception as exc:  # noqa: BLE001 - the caller checks the type and message
        error = exc
    else:
        raise AssertionError("the bomb was accepted")
    finally:
        elapsed = time.monotonic() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    allowed = budget(seconds)
    assert elapsed < allowed, f"refused after {elapsed:.1f} s (allowed {allowed:.1f} s at this machine's present speed)"
    assert peak < megabytes << 20, f"peak {peak >> 20} MiB"
    return error


@pytest.mark.parametrize("values, style", [(300_000, "flow"), (300_000, "block"), (1_000_000, "flow")])
def test_a_yaml_file_of_many_values_is_refused_quickly(tmp_path, values, style):
    path = tmp_path / "bomb.yaml"
    if style == "flow":
        body = "description: [" + ", ".join("1" for _ in range(values)) + "]\n"
    else:
        body = "description:\n" + "  - 1\n" * values
    path.write_text("format_version: 2\nname: bomb\n" + body)
    error = _refused_within_bounds(lambda: load_valid_project(str(path)))
    assert isinstance(error, ProjectError)
    [problem] = error.problems
    assert problem.file == str(path) and problem.line and "more than 50,000 values" in problem.message
    assert "project .yaml file" in problem.fix


def test_an_oversized_yaml_text_is_refused_before_parsing(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("format_version: 2\nname: big\ndescription: '" + "x" * (17 << 20) + "'\n")
    error = _refused_within_bounds(lambda: load_valid_project(str(path)), megabytes=100)
    assert isinstance(error, ProjectError) and "larger than 16 MiB" in str(error)


def _zip_with_declared_size(path, name: str, payload: bytes, declared: int) -> None:
    """A deflated zip of one member whose directory entries claim ``declared`` inflated bytes."""
    import struct
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name, payload)
    data = bytearray(open(path, "rb").read())
    real = struct.pack("<I", len(payload))
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        assert data[at + offset: at + offset + 4] == real
        data[at + offset: at + offset + 4] = struct.pack("<I", declared)
    open(path, "wb").write(bytes(data))


@pytest.mark.parametrize("declared, words", [
    (4_000_000_000, "refused without inflating it"),  # the archive tells the truth about a huge member
    (64 << 20, "refused as a zip bomb"),  # declared within the limit, but 1000x smaller than the data
    (1000, "CRC"),  # declared sizes lie: only what is declared is inflated, then the checksum fails
])
@pytest.mark.slow
def test_an_nnp_zip_bomb_is_refused_quickly_with_bounded_memory(tmp_path, declared, words):
    from nnconsole.engine.interop.report import InteropError
    from nnconsole.engine.interop.nntxt.importer import read_proto

    bomb = tmp_path / "bomb.nnp"
    _zip_with_declared_size(bomb, "parameter.h5", bytes(200 << 20), declared)
    assert bomb.stat().st_size < 1 << 20
    error = _refused_within_bounds(lambda: read_proto(str(bomb)))
    assert isinstance(error, InteropError), repr(error)
    assert str(bomb) in str(error) and words in str(error)
    # Through the CLI: exit 2, a message, no traceback, no project written.
    _cli_refuses(["import", str(bomb), "-o", str(tmp_path / "p.yaml")], str(bomb), words)
    assert not (tmp_path / "p.yaml").exists()


def test_an_nnp_with_thousands_of_members_is_refused(tmp_path):
    import zipfile

    from nnconsole.engine.interop.report import InteropError
    from nnconsole.engine.interop.nntxt.importer import read_proto

    bomb = tmp_path / "many.nnp"
    with zipfile.ZipFile(bomb, "w") as zf:
        for i in range(5000):
            zf.writestr(f"p{i}.h5", b"")
    with pytest.raises(InteropError, match="holds 5,000 files, more than the 256"):
        read_proto(str(bomb))


# ---- item 20: located errors instead of tracebacks --------------------------------------------------------
@pytest.mark.parametrize("value, words", [
    ("2024-02-30", "'2024-02-30' is written as a date but is not a valid one (day is out of range for month)"),
    ("9" * 5000, "is written as an integer but is not a valid one (Exceeds the limit (4300)"),
    ("!!binary x@", "failed to decode base64 data"),
    ("!!float abc", "'abc' is written as a number but is not a valid one"),
    ("!!bool maybe", "'maybe' is written as true/false"),
    ("!!timestamp 2024-13-01", "month must be in 1..12"),
])
def test_yaml_scalars_pyyaml_cannot_build_are_located_errors(iris, value, words):
    _set(iris, "\nname: iris_mlp\n", f"\nname: {value}\n")
    text = _cli_refuses(["validate", iris], f"{iris}:3: not valid YAML", words)
    assert "quotes" in text or "base64" in text


def test_non_ascii_layer_names_are_refused_by_validation(iris):
    # nnabla's solvers turn parameter names into ASCII C++ strings: 'set_parameters' raised
    # UnicodeEncodeError in the worker after 'validate' had said OK.
    text = open(iris).read().replace("fc1", "全結合")
    open(iris, "w").write(text)
    line = text.splitlines().index("    - name: 全結合") + 1
    _cli_refuses(["validate", iris], f"{iris}:{line}: network.layers[1].name", "outside ASCII", "rename it")
    _cli_refuses(["train", iris, "-q"], "network.layers[1].name")
    assert not os.path.exists(os.path.join(os.path.dirname(iris), "results"))


def test_a_batch_size_beyond_memory_is_a_located_error(iris):
    text = _set(iris, "batch_size: 16", "batch_size: 1000000000")
    line = text.splitlines().index("  batch_size: 1000000000") + 1
    _cli_refuses(["validate", iris], f"{iris}:{line}: config.batch_size", "GiB", "smaller batch size")
    from nnconsole.engine.check.validate import check_batch_memory

    project = load_project(iris)
    # 1000 values per sample x 12 bytes: 1,000 samples need 12 MB; a 10 MB machine cannot hold them.
    assert check_batch_memory(project, 1000, memory=10 << 20)
    project.config.batch_size = 100
    assert check_batch_memory(project, 1000, memory=10 << 20) == []


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> str:
    """A 2-epoch iris run (checkpoints, best and final parameters), trained once for this module."""
    folder = tmp_path_factory.mktemp("run") / "iris"
    shutil.copytree(TEMPLATE, folder, ignore=shutil.ignore_patterns(".nnconsole-cache", "results"))
    project = str(folder / "project.yaml")
    _set(project, "max_epoch: 100", "max_epoch: 2")
    from tests.support.cli import run_dir_from

    return run_dir_from(nnconsole(["train", project, "-q"], timeout=300).stdout)


def _copy_run(run: str, tmp_path) -> str:
    copy = str(tmp_path / "run")
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("writer.lock", "evaluation"))
    return copy


@pytest.mark.slow
def test_evaluate_reports_a_truncated_parameter_file(finished_run, tmp_path):
    run = _copy_run(finished_run, tmp_path)
    params = os.path.join(run, "parameters_best.h5")
    data = open(params, "rb").read()
    open(params, "wb").write(data[: len(data) // 3])
    _cli_refuses(["evaluate", run], f"{params}: not a readable nnabla parameter file", "truncated")


@pytest.mark.slow
def test_evaluate_and_resume_name_what_differs_from_the_network(finished_run, tmp_path):
    run = _copy_run(finished_run, tmp_path)
    resolved = os.path.join(run, "project.yaml")
    _set(resolved, "out_shape: 32", "out_shape: 16")  # the run's network no longer fits its parameters
    _cli_refuses(["evaluate", run], os.path.join(run, "parameters_best.h5"),
                 "fc1/affine/W is (4, 32) in the file but (4, 16) in the network")
    out = nnconsole(["train", "--resume", run, "--epochs", "3", "-q"], check=False, timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stdout + out.stderr, out.stderr
    assert "ckpt-00000016.h5: the parameters do not fit this network" in out.stderr, out.stderr
    assert "fc1/affine/W is (4, 32) in the file but (4, 16) in the network" in out.stderr


@pytest.mark.parametrize("name, change, words", [
    ("launch.json", lambda d: d.update(workers="two"), "field 'workers' should be an integer, got 'two'"),
    ("launch.json", lambda d: d.update(max_epoch=[3]), "field 'max_epoch' should be an integer or null, got [3]"),
    ("launch.json", None, "not valid JSON"),
    ("status.json", lambda d: d.update(status="running", pid="abc"), "field 'pid' should be an integer or null"),
    ("status.json", None, "not valid JSON"),
])
@pytest.mark.slow
def test_damaged_run_files_are_named_with_their_field(finished_run, tmp_path, name, change, words):
    import json

    run = _copy_run(finished_run, tmp_path)
    path = os.path.join(run, name)
    if change is None:
        open(path, "w").write(open(path).read()[:20])  # truncated by a crash
    else:
        data = json.load(open(path))
        change(data)
        json.dump(data, open(path, "w"))
    _cli_refuses(["train", "--resume", run, "-q"], path, words)
    if name == "launch.json":
        _cli_refuses(["replay", run, "-q"], path, words)


@pytest.mark.slow
def test_a_checkpoint_json_with_wrong_types_is_skipped_with_a_named_warning(finished_run, tmp_path):
    import json

    from nnconsole.engine.runtime.checkpoint import CheckpointError, read_checkpoint

    run = _copy_run(finished_run, tmp_path)
    newest = os.path.join(run, "checkpoints", "ckpt-00000016.json")
    data = json.load(open(newest))
    data["iteration"] = None
    json.dump(data, open(newest, "w"))
    with pytest.raises(CheckpointError, match=r"ckpt-00000016.json: field 'iteration' should be an integer, got None"):
        read_checkpoint(newest)
    out = nnconsole(["train", "--resume", run, "--epochs", "3", "-q"], check=False, timeout=300)
    assert out.returncode == 0 and "Traceback" not in out.stdout + out.stderr, out.stderr
    assert "ckpt-00000016.json: field 'iteration' should be an integer, got None" in out.stderr
    for other in (["iteration", -5, "field 'iteration' is negative"], ["files", {"a": 1}, "field 'files' should be"]):
        data = json.load(open(os.path.join(run, "checkpoints", "ckpt-00000008.json")))
        data[other[0]] = other[1]
        bad = tmp_path / "ckpt-00000099.json"
        json.dump(data, open(bad, "w"))
        with pytest.raises(CheckpointError, match=other[2]):
            read_checkpoint(str(bad))


def test_parameter_differences_name_missing_extra_and_reshaped_parameters():
    from nnconsole.engine.network.parameter_files import parameter_differences

    network = {"a/W": (4, 3), "a/b": (3,), "c/W": (3, 2)}
    assert parameter_differences(dict(network), network) == []
    found = {"a/W": (4, 3), "a/b": (4,), "z/W": (1,)}
    assert parameter_differences(found, network) == [
        "the network's c/W is not in the file", "the file's z/W is not in the network",
        "a/b is (4,) in the file but (3,) in the network"]
    assert parameter_differences(found, network, allow_missing=True, allow_extra=True) == [
        "a/b is (4,) in the file but (3,) in the network"]


@pytest.mark.slow
def test_validate_checks_the_initial_parameters_file_itself(iris):
    import nnabla as nn
    import nnabla.parametric_functions as PF

    folder = os.path.dirname(iris)
    _set(iris, "  seed: 0\n", "  seed: 0\n  initial_parameters: start.h5\n")
    with open(os.path.join(folder, "start.h5"), "wb") as fh:
        fh.write(b"\x89HDF\r\n\x1a\n" + bytes(100))  # an HDF5 signature, then nothing: truncated
    _cli_refuses(["validate", iris], "config.initial_parameters", "start.h5", "damaged or truncated")
    with nn.parameter_scope("fc1"):
        PF.affine(nn.Variable((1, 4)), 16)  # the network's fc1 has 32 outputs
    nn.save_parameters(os.path.join(folder, "start.h5"))
    nn.clear_parameters()
    _cli_refuses(["validate", iris], "config.initial_parameters",
                 "fc1/W is (4, 16) in the file but (4, 32) in the network")
    out = nnconsole(["train", iris, "-q"], check=False, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr and "fc1/W is (4, 16)" in out.stderr
    # Parameters for part of the network (fine-tuning from an imported model) are fine.
    with nn.parameter_scope("fc1"):
        PF.affine(nn.Variable((1, 4)), 32)
    nn.save_parameters(os.path.join(folder, "start.h5"))
    nn.clear_parameters()
    assert nnconsole(["validate", iris], check=False).returncode == 0


@pytest.mark.parametrize("body, line", [
    ("name: " + "[" * 3000 + "]" * 3000 + "\n", 2),  # flow: libyaml's own limit is 1,000 levels
    ("name:\n" + "".join("  " * i + "-\n" for i in range(1, 3000)), 66),  # block: the 65th level
])
def test_deeply_nested_yaml_is_refused_quickly_at_its_line(tmp_path, body, line):
    path = tmp_path / "deep.yaml"
    path.write_text("format_version: 3\n" + body)
    error = _refused_within_bounds(lambda: load_valid_project(str(path)))
    assert isinstance(error, ProjectError)
    [problem] = error.problems
    assert problem.line == line and "nested too deeply (more than 64 levels)" in problem.message


def test_the_gui_consent_lists_initial_parameters_outside_the_folder_too(iris, tmp_path):
    from nnconsole.engine.project.paths import files_outside

    _set(iris, "  seed: 0\n", "  seed: 0\n  initial_parameters: ../secret.h5\n")
    project = load_project(iris)
    assert files_outside(project) == [str(tmp_path / "secret.h5")]
    project.datasets.training = "../shared/train.csv"
    assert files_outside(project) == [str(tmp_path / "secret.h5"), str(tmp_path / "shared" / "train.csv")]
