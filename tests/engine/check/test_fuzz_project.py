"""Bad project files: random, truncated and hostile YAML, wrong types, huge numbers, cycles, unknown keys.

Every case must end in ProjectError whose problems name the file and a location (YAML path and/or
line), never in another exception; the CLI must exit 2 without a traceback and leave the file
as it was. Also the two rules that protect a user opening someone else's project: dataset paths
stay inside the project's folder, and the launcher arguments a project file may carry cannot
start other programs.
"""
from __future__ import annotations

import copy
import os
import shutil
import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnconsole.engine.project.errors import ProjectError
from nnconsole.engine.check.validate import check_datasets, check_mpiexec_args
from tests.support.cli import nnconsole
from tests.support.paths import ROOT
from nnconsole.engine.check.project_file import load_valid_project, loads_valid_project
from tests.support.timing import budget

TEMPLATE = os.path.join(ROOT, "project_templates", "iris_mlp")
FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def iris(tmp_path_factory) -> str:
    """A private copy of the iris template (project file and data); returns the project path."""
    dest = tmp_path_factory.mktemp("fuzz") / "iris"
    shutil.copytree(TEMPLATE, dest, ignore=shutil.ignore_patterns(".nnconsole-cache", "results"))
    return str(dest / "project.yaml")


def expect_located_error(text: str, file: str) -> ProjectError:
    """Load ``text`` as if it were ``file``; it must fail with located problems only."""
    with pytest.raises(ProjectError) as info:
        loads_valid_project(text, file=file)
    assert_located(info.value, file)
    return info.value


def assert_located(error: ProjectError, file: str) -> None:
    errors = [p for p in error.problems if p.severity == "error"]
    assert errors
    for p in errors:
        assert p.file == file, str(p)
        assert p.line is not None or p.path, f"problem without a location: {p}"
        assert str(p).startswith(file)


def load_or_located_error(text: str, file: str) -> bool:
    """Random input may be a valid project by chance; anything else must be a located ProjectError.

    Returns whether it was refused, so that callers can bound how often garbage gets through.
    """
    try:
        loads_valid_project(text, file=file)
    except ProjectError as exc:
        assert_located(exc, file)
        return True
    return False


def fuzz_outcomes(strategy, attempt) -> list:
    """What ``attempt`` returned for each of the FUZZ examples drawn from ``strategy``."""
    seen = []

    @FUZZ
    @given(strategy)
    def run(value):
        seen.append(attempt(value))

    run()
    return seen


# ---- random and truncated text ---------------------------------------------------------------------------
def test_random_text_gives_a_located_project_error(iris):
    refused = fuzz_outcomes(st.text(max_size=300), lambda text: load_or_located_error(text, iris))
    # Random text is hardly ever a whole project (none of the 120 examples is): a loader that
    # accepted garbage would let most of them through.
    assert len(refused) >= 100 and sum(refused) >= 0.95 * len(refused), (sum(refused), len(refused))


def test_random_bytes_in_a_file_give_a_located_project_error(iris, tmp_path):
    path = tmp_path / "random.yaml"

    def attempt(data: bytes) -> bool:
        path.write_bytes(data)
        try:
            load_valid_project(str(path))
        except ProjectError as exc:
            assert_located(exc, str(path))
            return True
        return False

    refused = fuzz_outcomes(st.binary(max_size=200), attempt)
    assert len(refused) >= 100 and sum(refused) >= 0.95 * len(refused), (sum(refused), len(refused))


@pytest.mark.slow
def test_every_truncation_of_a_project_fails_cleanly(iris):
    text = open(iris).read()
    loaded = [cut for cut in range(0, len(text) - 1, 5) if not load_or_located_error(text[:cut], iris)]
    # Cut before its datasets section, a project lacks a complete network or its training data: it
    # must be refused; cut near the end (only defaults missing), it still loads.
    assert loaded and min(loaded) > text.index("\ndatasets:"), loaded


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**31, max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["Input", "Affine", "x", "fc1", "../data/train.csv", "/etc/passwd", "1e999", "-.inf"]))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=10)


def _paths(data, prefix=()):
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _paths(value, prefix + (i,))


@pytest.mark.slow
@FUZZ
@given(st.data())
def test_wrong_types_and_huge_values_anywhere_give_located_errors(iris, data):
    base = yaml.safe_load(open(iris).read())
    paths = [p for p in _paths(base) if p]
    mutated = copy.deepcopy(base)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        parent = mutated
        try:
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = data.draw(_values)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation replaced an ancestor
    load_or_located_error(yaml.safe_dump(mutated, allow_unicode=True), iris)


@pytest.mark.slow
@FUZZ
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12), st.data())
def test_unknown_keys_are_named_with_their_line(iris, key, data):
    base = yaml.safe_load(open(iris).read())
    section = data.draw(st.sampled_from(["", "config", "optimizer", "datasets", "multi_gpu"]))
    target = base if not section else base[section]
    if key in target:
        return
    target[key] = 1
    text = yaml.safe_dump(base, sort_keys=False)
    error = expect_located_error(text, iris)
    [problem] = [p for p in error.problems if f"unknown key '{key}'" in p.message]
    assert problem.path == (f"{section}.{key}" if section else key)
    assert text.splitlines()[problem.line - 1].strip().lstrip("\x27\"").startswith(key)


@FUZZ
@given(st.data())
def test_cycles_in_the_network_are_reported_at_a_layer(iris, data):
    base = yaml.safe_load(open(iris).read())
    layers = base["network"]["layers"]
    chain = [i for i, layer in enumerate(layers) if layer["type"] not in ("Input",)]
    a = data.draw(st.sampled_from(chain))
    b = data.draw(st.sampled_from([i for i in chain if i >= a]))
    layers[a]["inputs"] = list(layers[a]["inputs"]) + [layers[b]["name"]]  # b depends on a: a cycle
    error = expect_located_error(yaml.safe_dump(base, sort_keys=False), iris)
    assert any("cycle" in p.message and p.path.startswith("network.layers[") for p in error.problems), str(error)


@pytest.mark.parametrize("old,new,path", [
    ("batch_size: 16", "batch_size: 100000000000000000000000", "config.batch_size"),
    ("batch_size: 16", "batch_size: 1.0e+300", "config.batch_size"),
    ("max_epoch: 100", "max_epoch: .inf", "config.max_epoch"),
    ("seed: 0", "seed: 18446744073709551617", "config.seed"),
    ("seed: 0", "seed: -3", "config.seed"),
    ("learning_rate: 0.001", "learning_rate: .inf", "optimizer.learning_rate"),
    ("learning_rate: 0.001", "learning_rate: .nan", "optimizer.learning_rate"),
    ("weight_decay: 0.0", "weight_decay: .nan", "optimizer.weight_decay"),
    ("lr_multiplier: 1.0", "lr_multiplier: 1.0e+999", "optimizer.lr_multiplier"),
    ("beta1: 0.9", "beta1: .nan", "optimizer.solver_params.beta1"),
    ("beta1: 0.9", "momentum: 0.9", "optimizer.solver_params.momentum"),
    ("workers: 1", "workers: 4000000000", "multi_gpu.workers"),
    ("shape: [4], variable: x", "shape: [100000000000000], variable: x", "network.layers[0]"),
    ("out_shape: 32", "out_shape: 99999999999999", "network.layers[1]"),
    ("W: {type: NormalAffineGlorot, multiplier: 1.0}", "W: {type: NormalAffineGlorot, multiplier: .nan}",
     "network.layers[1].initializers.W.multiplier"),
])
def test_huge_and_non_finite_numbers_are_refused_where_they_are(iris, old, new, path):
    text = open(iris).read()
    assert old in text
    error = expect_located_error(text.replace(old, new, 1), iris)
    assert any(p.path == path for p in error.problems), str(error)
    [line] = {p.line for p in error.problems if p.path == path}
    written = new.split(":")[0].strip()
    assert written in text.replace(old, new, 1).splitlines()[line - 1] or path.startswith("network.layers[")


# ---- hostile YAML ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("body", [
    "name: !!python/object/apply:os.system ['touch {marker}']",
    "name: !!python/object/new:subprocess.Popen [['touch', '{marker}']]",
    "name: !!python/name:os.system",
    "name: !!python/module:os",
    "? !!python/object/apply:os.system ['touch {marker}']\n: 1",
    "network: {{layers: [!!python/object/apply:os.system ['touch {marker}']]}}",
    "name: !custom value",
    "name: !!set {{a, b}}",
])
def test_yaml_tags_that_build_objects_are_refused_and_run_nothing(iris, tmp_path, body):
    marker = tmp_path / "pwned"
    error = expect_located_error("format_version: 2\n" + body.format(marker=marker) + "\n", iris)
    assert error.problems[0].line == 2
    assert not marker.exists()


def test_alias_cycles_bombs_deep_nesting_and_duplicate_keys_fail_fast(iris):
    laughs = "format_version: 2\na: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    cases = {
        "alias cycle": ("format_version: 2\nname: &a [*a]\n", "cycle"),
        "alias bomb": (laughs, "expands to more than"),
        "deep nesting": ("format_version: 2\nname: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
        "duplicate key": (open(iris).read().replace("  batch_size: 16", "  batch_size: 16\n  batch_size: 64"),
                          "duplicate key 'batch_size'"),
        "merge key": ("format_version: 2\nbase: &b {max_epoch: 1}\nconfig:\n  <<: *b\n", "merge keys"),
    }
    for name, (text, words) in cases.items():
        start = time.monotonic()
        error = expect_located_error(text, iris)
        assert words in str(error), (name, str(error))
        assert time.monotonic() - start < budget(10), name


def test_a_file_that_is_not_a_regular_file_is_refused(tmp_path):
    for path in (str(tmp_path), "/dev/zero"):
        with pytest.raises(ProjectError, match="not a regular file"):
            load_valid_project(path)
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)  # opening it would block forever
    with pytest.raises(ProjectError, match="not a regular file"):
        load_valid_project(str(fifo))


# ---- dataset paths stay inside the project's folder -----------------------------------------------------
def _with_training(iris: str, path: str) -> str:
    return open(iris).read().replace("training: data/train.csv", f"training: {path}")


def test_dataset_paths_outside_the_project_folder_need_the_users_permission(iris, tmp_path):
    shared = tmp_path / "shared"
    shutil.copytree(os.path.dirname(iris), shared)
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(shared / "data" / "train.csv", tmp_path / "elsewhere" / "train.csv")
    target = str(shared / "project.yaml")
    for written in ("../elsewhere/train.csv", str(tmp_path / "elsewhere" / "train.csv"),
                    "data/../../elsewhere/train.csv"):
        text = _with_training(iris, written)
        with open(target, "w") as fh:
            fh.write(text)
        with pytest.raises(ProjectError) as info:
            load_valid_project(target)
        [problem] = [p for p in info.value.problems if p.path == "datasets.training"]
        assert "outside the project's folder" in problem.message and "--allow-outside-data" in problem.fix
        assert problem.line == text.splitlines().index(f"  training: {written}") + 1
        assert problem.file == target
        # The user's explicit permission loads it (the file exists there).
        assert load_valid_project(target, allow_outside_data=True).datasets.training == written


def test_paths_inside_the_folder_and_symlinked_data_folders_are_fine(iris, tmp_path):
    folder = os.path.dirname(iris)
    assert load_valid_project(iris).datasets.training == "data/train.csv"
    text = _with_training(iris, "data/../data/./train.csv")
    assert loads_valid_project(text, file=iris).datasets.training == "data/../data/./train.csv"
    # A data folder linked into the project by its user counts as inside (a YAML file cannot make links).
    big = tmp_path / "bigdisk"
    shutil.copytree(os.path.join(folder, "data"), big)
    os.symlink(big, os.path.join(folder, "linked"))
    try:
        assert loads_valid_project(_with_training(iris, "linked/train.csv"), file=iris)
    finally:
        os.unlink(os.path.join(folder, "linked"))


def test_the_gui_check_reports_the_same_rule(iris):
    project = load_valid_project(iris)
    project.datasets.validation = "../../outside.csv"
    problems = check_datasets(project)
    assert [p.path for p in problems] == ["datasets.validation"]
    assert check_datasets(project, allow_outside=True)[0].message.startswith("dataset file not found")


# ---- launcher arguments in a project file ---------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ["--mca", "plm_rsh_agent", "sh -c 'touch /tmp/x'"],
    ["--mca", "plm_rsh_agent", "/tmp/evil.sh"],
    ["--prtemca", "prte_launch_agent", "evil"],
    ["-x", "LD_PRELOAD=data/evil.so"],
    ["--prefix", "/tmp/fake-openmpi"],
    ["--mca", "btl_tcp_if_include", "eth0;touch /tmp/x"],
    ["--map-by", "$(touch /tmp/x)"],
    ["--tune", "params.conf"],
    ["--mca"],
])
def test_project_files_cannot_carry_launcher_arguments_that_run_programs(iris, args):
    assert check_mpiexec_args(args)
    text = open(iris).read().replace("  workers: 1", "  workers: 1\n  mpiexec_args: " + yaml.safe_dump(
        args, default_flow_style=True).strip())
    error = expect_located_error(text, iris)
    assert any(p.path.startswith("multi_gpu.mpiexec_args") and "--mpiexec-arg" in p.fix for p in error.problems)


@pytest.mark.parametrize("args", [
    ["--mca", "btl_tcp_if_include", "eth0"], ["--mca", "btl", "^openib"], ["--map-by", "ppr:1:node"],
    ["--bind-to", "none", "--report-bindings"], ["-x", "NCCL_DEBUG"], ["--mca", "pml", "ucx"],
    ["--prtemca", "oob_tcp_if_include", "10.0.0.0/8"],
])
def test_harmless_launcher_arguments_are_kept(iris, args):
    assert check_mpiexec_args(args) == []
    text = open(iris).read().replace("  workers: 1", "  workers: 1\n  mpiexec_args: " + yaml.safe_dump(
        args, default_flow_style=True).strip())
    assert loads_valid_project(text, file=iris).multi_gpu.mpiexec_args == args


# ---- through the CLI ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_cli_validate_and_train_exit_2_without_traceback_and_touch_nothing(iris, tmp_path):
    text = open(iris).read()
    cases = {
        "truncated": text[: text.index("params: {shape: [4]") + 14],
        "python tag": text.replace("name: iris_mlp", "name: !!python/object/apply:os.getcwd []"),
        "wrong type": text.replace("batch_size: 16", "batch_size: [16]"),
        "cycle": text.replace("inputs: [x]", "inputs: [x, relu1]"),
        "huge": text.replace("out_shape: 32", "out_shape: 1000000000000"),
        "outside data": text.replace("training: data/train.csv", "training: ../../../../../../etc/hosts"),
    }
    folder = tmp_path / "cli"
    shutil.copytree(os.path.dirname(iris), folder)
    (folder / "data" / "bad_encoding.csv").write_bytes("x__0,x__1,x__2,x__3,y\n1,2,3,4,0\n1,2,3,\xe9,1\n"
                                                      .encode("latin-1"))
    (folder / "data" / "columns.csv").write_text("x__0,x__1,x__2,x__3,y\n1,2,3,4,0\n1,2,3,4\n")
    cases["bad encoding"] = text.replace("training: data/train.csv", "training: data/bad_encoding.csv")
    cases["column count"] = text.replace("training: data/train.csv", "training: data/columns.csv")
    train_for = {"truncated", "cycle", "outside data", "column count"}
    for name, body in cases.items():
        path = folder / f"{name.replace(' ', '_')}.yaml"
        path.write_text(body)
        before = path.read_bytes()
        commands = [["validate", str(path)]] + ([["train", str(path), "-q"]] if name in train_for else [])
        for args in commands:
            out = nnconsole(args, check=False, timeout=60)
            assert out.returncode == 2, (name, args[0], out.stdout, out.stderr)
            assert "Traceback" not in out.stderr, (name, out.stderr)
            assert str(path) in out.stderr, (name, out.stderr)
            assert path.read_bytes() == before
        assert not (folder / "results").exists(), name
    # The user's explicit permission is honoured by the CLI.
    elsewhere = tmp_path / "elsewhere.csv"
    shutil.copy(folder / "data" / "train.csv", elsewhere)
    allowed = folder / "allowed.yaml"
    allowed.write_text(text.replace("training: data/train.csv", f"training: {elsewhere}"))
    assert nnconsole(["validate", str(allowed)], check=False).returncode == 2
    out = nnconsole(["validate", str(allowed), "--allow-outside-data"], check=False)
    assert out.returncode == 0, out.stderr


@pytest.mark.slow
def test_cli_reports_a_missing_project_and_a_folder_cleanly(tmp_path):
    for target in (str(tmp_path / "nope.yaml"), str(tmp_path)):
        for command in ("validate", "train", "info", "plan"):
            out = nnconsole([command, target], check=False, timeout=60)
            assert out.returncode == 2 and "Traceback" not in out.stderr, (command, out.stderr)
            assert target in out.stderr
