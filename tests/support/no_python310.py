"""A machine without CPython 3.10, simulated for scripts/bootstrap.sh, and a local stand-in for uv's downloads.

The bootstrap looks for a 3.10 in $NNCONSOLE_PYTHON, on PATH, under pyenv and at /usr/bin and /usr/local/bin.
``hidden_env`` gives it a PATH of links to every system tool except python3.10 and pyenv, an empty pyenv
root and a fresh HOME, so it sees what Debian 12 or Ubuntu 24.04 would show it. ``python_archive`` packs
this test run's own CPython 3.10 the way python-build-standalone's install_only archives are laid out, and
``downloads_json`` lists it for uv's ``--python-downloads-json-url``, so uv installs it with no internet.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
from typing import Dict, Optional

from tests.support.paths import ROOT

FIXED_LOCATIONS = ("/usr/bin/python3.10", "/usr/local/bin/python3.10")
HIDDEN_NAMES = ("python3.10", "pyenv")


def why_cannot_hide() -> Optional[str]:
    """A reason the simulation is impossible here (a 3.10 at a path the bootstrap checks by name, or no
    other python3 to fetch uv with), else None."""
    for path in FIXED_LOCATIONS:
        if os.path.exists(path):
            return f"{path} exists: the bootstrap would find it"
    system = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    if system is None:
        return "no system python3 to fetch uv with"
    version = subprocess.run([system, "-c", "import sys; print(sys.version_info[:2] == (3, 10))"],
                             capture_output=True, text=True).stdout.strip()
    if version == "True":
        return f"the system python3 ({system}) is 3.10 itself"
    return None


def hidden_path(bin_dir: str) -> str:
    """A folder of links to every tool in the system folders except any CPython 3.10 and pyenv."""
    os.makedirs(bin_dir, exist_ok=True)
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            if name.startswith(HIDDEN_NAMES) or os.path.lexists(os.path.join(bin_dir, name)):
                continue
            os.symlink(os.path.join(folder, name), os.path.join(bin_dir, name))
    return bin_dir


def hidden_env(tmp: str, **extra: str) -> Dict[str, str]:
    """An environment in which the bootstrap finds no CPython 3.10 (see the module docstring)."""
    home = os.path.join(tmp, "home")
    os.makedirs(home, exist_ok=True)
    env = {"PATH": hidden_path(os.path.join(tmp, "bin")), "HOME": home, "PYENV_ROOT": os.path.join(tmp, "no-pyenv"),
           "LANG": "C.UTF-8", "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "XDG_CACHE_HOME", "UV_CACHE_DIR"):
        if name in os.environ:
            env[name] = os.environ[name]
    # The user's caches keep the downloads of a networked run short; a fresh HOME would drop them.
    real_cache = os.path.join(os.path.expanduser("~"), ".cache")
    env.setdefault("XDG_CACHE_HOME", real_cache)
    env.update(extra)
    return env


def copy_checkout(dest: str) -> str:
    """The files git would ship (tracked and untracked-not-ignored), copied to ``dest`` and committed there: a
    fresh clone of the working tree as it is."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        source = os.path.join(ROOT, rel)
        if not os.path.isfile(source):
            continue
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(source, target)
    # A repository of its own, as a clone would be (tests and scripts ask git what is tracked).
    git = ["git", "-c", "user.name=nnconsole-test", "-c", "user.email=test@localhost", "-c", "init.defaultBranch=main"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "copy of the checkout under test"]):
        subprocess.run(git + command, cwd=dest, check=True, capture_output=True)
    return dest


def python_archive(dest_dir: str) -> str:
    """This run's CPython 3.10 as an install_only archive (top folder ``python/``), without site-packages."""
    prefix = sys.base_prefix
    archive = os.path.join(dest_dir, "cpython-3.10-install_only.tar.gz")
    skip = (os.sep + "site-packages" + os.sep, os.sep + "__pycache__", os.sep + "test" + os.sep)

    def keep(info: tarfile.TarInfo) -> Optional[tarfile.TarInfo]:
        path = os.sep + info.name + os.sep
        return None if any(part in path for part in skip) else info

    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        tar.add(prefix, arcname="python", filter=keep)
    return archive


def downloads_json(archive: str, dest: str) -> str:
    """uv's downloads list naming ``archive`` (file:// URL, its sha256) as CPython 3.10 for this machine."""
    with open(archive, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    major, minor, patch = (int(part) for part in platform.python_version_tuple())
    arch = platform.machine()
    libc = "gnu" if platform.libc_ver()[0] == "glibc" else "musl"
    key = f"cpython-{major}.{minor}.{patch}-linux-{arch}-{libc}"
    listing = {key: {"name": "cpython", "arch": {"family": arch, "variant": None}, "os": "linux", "libc": libc,
                     "major": major, "minor": minor, "patch": patch, "prerelease": "",
                     "url": "file://" + os.path.abspath(archive), "sha256": digest, "variant": None,
                     "build": "20240101"}}
    with open(dest, "w", encoding="utf-8") as handle:
        json.dump(listing, handle)
    return dest
