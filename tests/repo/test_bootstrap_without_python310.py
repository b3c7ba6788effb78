"""scripts/bootstrap.sh on a machine with no CPython 3.10: the messages, checks and helpers that need no
network (the whole uv path with a local downloads list is tests/system/test_bootstrap_uv.py, marker packaging).
"""
import hashlib
import http.server
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import zipfile

import pytest

from tests.support.no_python310 import hidden_env, why_cannot_hide
from tests.support.paths import ROOT, load_script

UNREACHABLE = "http://127.0.0.1:9"  # the discard port: connection refused at once
OFFLINE = {"PIP_INDEX_URL": UNREACHABLE + "/simple", "PIP_RETRIES": "0", "PIP_TIMEOUT": "2",
           "NNCONSOLE_PYPI_URL": UNREACHABLE}


def scripts_only(tmp_path):
    """A checkout holding just scripts/ and pyproject.toml: enough for the bootstrap to get to its Python."""
    root = tmp_path / "checkout"
    shutil.copytree(os.path.join(ROOT, "scripts"), root / "scripts")
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), root / "pyproject.toml")
    return root


def os_release(tmp_path, text):
    path = tmp_path / "os-release"
    path.write_text(text)
    return str(path)


@pytest.fixture
def no_python310(tmp_path):
    reason = why_cannot_hide()
    if reason:
        pytest.skip(reason)
    return tmp_path


def test_offline_machine_gets_the_install_command_for_its_distribution(no_python310):
    tmp = no_python310
    root = scripts_only(tmp)
    env = hidden_env(str(tmp), NNCONSOLE_OS_RELEASE=os_release(tmp, 'ID=fedora\nPRETTY_NAME="Fedora Linux 41"\n'),
                     **OFFLINE)
    done = subprocess.run(["bash", "scripts/bootstrap.sh", "test"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    err = done.stderr
    assert "nnconsole needs CPython 3.10" in err and "none could be fetched" in err
    assert "Fix for Fedora Linux 41" in err and "sudo dnf install python3.10" in err
    assert "NNCONSOLE_PYTHON" in err and "Traceback" not in err
    assert f"installing one with uv into {root}/.nnconsole-python" in err  # said what it tried, and where
    assert not (root / ".venv").exists()
    assert not os.path.exists(os.path.join(env["HOME"], ".local", "bin", "uv"))  # nothing on the user's PATH


@pytest.mark.parametrize("text, hint", [
    ('ID=ubuntu\nID_LIKE=debian\nVERSION_ID="22.04"\n', "sudo apt-get install python3.10 python3.10-venv"),
    ('ID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n', "ppa:deadsnakes/ppa"),
    ('ID=debian\nVERSION_ID="12"\n', "pyenv install 3.10.13"),
    ('ID=fedora\nVERSION_ID=41\n', "sudo dnf install python3.10"),
    ('ID="rocky"\nID_LIKE="rhel centos fedora"\n', "sudo dnf install python3.10"),
    ('ID="opensuse-tumbleweed"\nID_LIKE="opensuse suse"\n', "sudo zypper install python310"),
    ('ID=arch\n', "yay -S python310"),
    ('ID=gentoo\n', "pyenv install 3.10.13"),
])
def test_install_hint_per_distribution(tmp_path, text, hint):
    script = f'source "{ROOT}/scripts/python310.sh"; distro_install_hint'
    done = subprocess.run(["bash", "-c", script], env=dict(os.environ, NNCONSOLE_OS_RELEASE=os_release(tmp_path, text)),
                          capture_output=True, text=True, timeout=30)
    assert hint in done.stdout


def fake_getconf(tmp_path, output, rc=0):
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    (bin_dir / "getconf").write_text(f"#!/bin/sh\nprintf '%s' '{output}'\nexit {rc}\n")
    (bin_dir / "getconf").chmod(0o755)
    return f"{bin_dir}:{os.environ['PATH']}"


@pytest.mark.parametrize("output, rc, words", [
    ("glibc 2.17\n", 0, "glibc 2.17 is too old"),
    ("", 1, "no GNU C library"),
])
def test_old_or_missing_glibc_is_refused_before_anything_is_installed(tmp_path, output, rc, words):
    root = scripts_only(tmp_path)
    env = dict(os.environ, PATH=fake_getconf(tmp_path, output, rc), NNCONSOLE_PYTHON=sys.executable)
    done = subprocess.run(["bash", "scripts/bootstrap.sh", "test"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1
    assert words in done.stderr and "2.28" in done.stderr
    assert not (root / ".venv").exists()


def test_this_machines_glibc_passes_the_real_check():
    done = subprocess.run(["bash", "-c", f'source "{ROOT}/scripts/python310.sh"; check_glibc && glibc_version'],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("2.")


def test_a_python_uv_installed_earlier_is_reused_without_the_network(no_python310):
    """A second bootstrap (or after deleting .venv) finds the project's own 3.10 and fetches nothing."""
    tmp = no_python310
    root = scripts_only(tmp)
    managed = root / ".nnconsole-python" / "pythons" / "cpython-3.10.13-linux-x86_64-gnu" / "bin"
    managed.mkdir(parents=True)
    base = os.path.join(sys.base_prefix, "bin", "python3.10")
    (managed / "python3.10").symlink_to(base)
    script = 'root="$PWD"; source scripts/python310.sh; python310_for_venv && echo "PY=$NNCONSOLE_PY"'
    done = subprocess.run(["bash", "-c", script], cwd=root, env=hidden_env(str(tmp), **OFFLINE),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"PY={managed}/python3.10" in done.stdout
    assert "installing one with uv" not in done.stderr


def test_nnconsole_python_keeps_priority(no_python310):
    tmp = no_python310
    root = scripts_only(tmp)
    script = 'root="$PWD"; source scripts/python310.sh; python310_for_venv && echo "PY=$NNCONSOLE_PY"'
    env = hidden_env(str(tmp), NNCONSOLE_PYTHON=os.path.join(sys.base_prefix, "bin", "python3.10"), **OFFLINE)
    done = subprocess.run(["bash", "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"PY={env['NNCONSOLE_PYTHON']}" in done.stdout


# --- scripts/fetch_uv.py: uv's wheel with the standard library alone ---------------------------------------

fetch_uv = load_script(os.path.join(ROOT, "scripts", "fetch_uv.py"))


def fake_wheel(version, payload):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr(f"uv-{version}.data/scripts/uv", payload)
        wheel.writestr(f"uv-{version}.dist-info/METADATA", f"Name: uv\nVersion: {version}\n")
    return buffer.getvalue()


class Index:
    """A simple index on loopback serving uv's page as PEP 691 JSON or PEP 503 HTML, and the wheels."""

    def __init__(self, files, html=False, corrupt=()):
        self.files, self.html, self.corrupt = files, html, set(corrupt)
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path.startswith("/simple/uv/"):
                    body, kind = index.page()
                elif self.path.startswith("/files/"):
                    name = self.path[len("/files/"):]
                    body, kind = index.files[name], "application/octet-stream"
                    if name in index.corrupt:
                        body = body + b"tampered"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def page(self):
        digests = {name: hashlib.sha256(data).hexdigest() for name, data in self.files.items()}
        if self.html:
            links = "".join(f'<a href="/files/{n}#sha256={d}">{n}</a>' for n, d in digests.items())
            return f"<html><body>{links}</body></html>".encode(), "text/html"
        files = [{"filename": n, "url": f"/files/{n}", "hashes": {"sha256": d}} for n, d in digests.items()]
        return json.dumps({"name": "uv", "files": files}).encode(), "application/vnd.pypi.simple.v1+json"


MACHINE = platform.machine()


def wheels():
    tag = f"manylinux_2_17_{MACHINE}.manylinux2014_{MACHINE}"
    return {
        f"uv-0.9.0-py3-none-{tag}.whl": fake_wheel("0.9.0", b"old"),
        f"uv-0.10.2-py3-none-{tag}.whl": fake_wheel("0.10.2", b"#!/bin/sh\necho uv 0.10.2\n"),
        f"uv-0.11.0rc1-py3-none-{tag}.whl": fake_wheel("0.11.0rc1", b"pre-release"),
        "uv-0.12.0-py3-none-musllinux_1_1_%s.whl" % MACHINE: fake_wheel("0.12.0", b"musl"),
        "uv-0.12.0-py3-none-manylinux_2_17_ppc64le.whl": fake_wheel("0.12.0", b"other arch"),
        "uv-0.12.0.tar.gz": b"sdist",
    }


@pytest.mark.parametrize("html", [False, True], ids=["pep691-json", "pep503-html"])
def test_fetch_uv_takes_the_newest_stable_wheel_for_this_machine(tmp_path, html):
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("the fake index lists manylinux wheels")
    index = Index(wheels(), html=html)
    try:
        done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "fetch_uv.py"), str(tmp_path / "bin")],
                              env=dict(os.environ, NNCONSOLE_PYPI_URL=index.url), capture_output=True, text=True,
                              timeout=60)
    finally:
        index.server.shutdown()
    assert done.returncode == 0, done.stderr
    uv = tmp_path / "bin" / "uv"
    assert uv.read_bytes() == b"#!/bin/sh\necho uv 0.10.2\n"
    assert os.access(uv, os.X_OK)
    assert subprocess.run([str(uv)], capture_output=True, text=True).stdout.strip() == "uv 0.10.2"
    assert sorted(os.listdir(tmp_path / "bin")) == ["uv"]  # the wheel itself is not left behind


def test_fetch_uv_refuses_a_wheel_whose_sha256_differs(tmp_path):
    files = wheels()
    newest = next(n for n in files if n.startswith("uv-0.10.2"))
    index = Index(files, corrupt=[newest])
    try:
        done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "fetch_uv.py"), str(tmp_path / "bin")],
                              env=dict(os.environ, NNCONSOLE_PYPI_URL=index.url), capture_output=True, text=True,
                              timeout=60)
    finally:
        index.server.shutdown()
    assert done.returncode != 0
    assert "sha256" in done.stderr and "not installing" in done.stderr
    assert not (tmp_path / "bin" / "uv").exists()


def test_pick_wheel_by_architecture_and_c_library():
    files = [(name, "u", None) for name in wheels()]
    assert fetch_uv.pick_wheel(files, machine=MACHINE, libc="glibc")[0] == "0.10.2"
    assert fetch_uv.pick_wheel(files, machine=MACHINE, libc="musl")[0] == "0.12.0"
    assert fetch_uv.pick_wheel(files, machine="ppc64le", libc="glibc")[0] == "0.12.0"
    assert fetch_uv.pick_wheel(files, machine="riscv64", libc="glibc") is None


def test_index_url_prefers_ours_then_pips(monkeypatch):
    monkeypatch.delenv("NNCONSOLE_PYPI_URL", raising=False)
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    assert fetch_uv.index_url() == "https://pypi.org/simple"
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/pypi/simple/")
    assert fetch_uv.index_url() == "https://mirror.example/pypi/simple"
    monkeypatch.setenv("NNCONSOLE_PYPI_URL", "https://other.example")
    assert fetch_uv.index_url() == "https://other.example/simple"
