"""Fetch uv's binary from a Python package index with the standard library alone.

scripts/bootstrap.sh needs uv to install a CPython 3.10 on systems that have none, and it may have only a
bare ``python3`` to get it with (Debian without ``python3-venv``, so no pip). This reads the index's
simple API (PEP 691 JSON, else the PEP 503 HTML page), picks the newest uv wheel built for this machine
(manylinux or musllinux, by architecture), checks its sha256 and unpacks ``uv`` from it.

Usage: python3 scripts/fetch_uv.py DEST_DIR     (index: $NNCONSOLE_PYPI_URL, $PIP_INDEX_URL, else PyPI)
Runs on any Python 3.6+, so it must not use newer syntax.
"""
import hashlib
import html.parser
import json
import os
import platform
import re
import stat
import sys
import urllib.parse
import urllib.request
import zipfile

DEFAULT_INDEX = "https://pypi.org/simple"
WHEEL = re.compile(r"^uv-(?P<version>[0-9][^-]*)-py3-none-(?P<platforms>[^/]+)\.whl$")


def index_url():
    """The simple index to read: NNCONSOLE_PYPI_URL, else pip's PIP_INDEX_URL, else PyPI."""
    base = os.environ.get("NNCONSOLE_PYPI_URL") or os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX
    base = base.rstrip("/")
    return base if base.endswith("/simple") else base + "/simple"


class _Links(html.parser.HTMLParser):
    """The anchors of a PEP 503 page, as (filename, href)."""

    def __init__(self):
        html.parser.HTMLParser.__init__(self)
        self.links = []
        self._href = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data):
        if self._href:
            self.links.append((data.strip(), self._href))
            self._href = None


def wheel_files(project_url):
    """[(filename, absolute url, sha256 or None)] of the project page, JSON first, else HTML."""
    request = urllib.request.Request(project_url, headers={
        "Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"})
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
        kind = response.headers.get("Content-Type", "")
    if "json" in kind:
        data = json.loads(body.decode("utf-8"))
        return [(f["filename"], urllib.parse.urljoin(project_url, f["url"]), f.get("hashes", {}).get("sha256"))
                for f in data.get("files", [])]
    parser = _Links()
    parser.feed(body.decode("utf-8", "replace"))
    result = []
    for name, href in parser.links:
        url, _, fragment = href.partition("#")
        digest = fragment[len("sha256="):] if fragment.startswith("sha256=") else None
        result.append((name, urllib.parse.urljoin(project_url, url), digest))
    return result


def _version_key(version):
    return tuple(int(part) if part.isdigit() else -1 for part in re.split(r"[.+]", version))


def pick_wheel(files, machine=None, libc=None):
    """The newest stable uv wheel whose platform tags fit this machine's architecture and C library."""
    machine = machine or platform.machine()
    libc = libc or ("glibc" if platform.libc_ver()[0] == "glibc" else "musl")
    family = "manylinux" if libc == "glibc" else "musllinux"
    best = None
    for name, url, digest in files:
        match = WHEEL.match(name)
        if not match or re.search(r"(a|b|rc|dev)[0-9]", match.group("version")):
            continue
        tags = match.group("platforms").split(".")
        if not any(tag.startswith(family) and tag.endswith("_" + machine) for tag in tags):
            continue
        if best is None or _version_key(match.group("version")) > _version_key(best[0]):
            best = (match.group("version"), name, url, digest)
    return best


def download(url, digest):
    """The file's bytes, refused when the index gave a sha256 they do not match."""
    with urllib.request.urlopen(url, timeout=300) as response:
        data = response.read()
    if digest and hashlib.sha256(data).hexdigest() != digest:
        raise SystemExit("fetch_uv: sha256 of %s does not match the index's; not installing it" % url)
    return data


def unpack_uv(wheel_path, dest_dir):
    """Write the wheel's ``uv`` executable to dest_dir/uv."""
    with zipfile.ZipFile(wheel_path) as wheel:
        member = next((n for n in wheel.namelist() if re.match(r"^uv-[^/]+\.data/scripts/uv$", n)), None)
        if member is None:
            raise SystemExit("fetch_uv: %s holds no uv binary" % wheel_path)
        os.makedirs(dest_dir, exist_ok=True)
        target = os.path.join(dest_dir, "uv")
        with wheel.open(member) as source, open(target + ".part", "wb") as out:
            out.write(source.read())
    os.chmod(target + ".part", os.stat(target + ".part").st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.replace(target + ".part", target)
    return target


def main(argv):
    if len(argv) != 2:
        raise SystemExit("usage: python3 fetch_uv.py DEST_DIR")
    dest = argv[1]
    project_url = index_url() + "/uv/"
    try:
        files = wheel_files(project_url)
    except OSError as error:
        raise SystemExit("fetch_uv: cannot read %s: %s" % (project_url, error))
    chosen = pick_wheel(files)
    if chosen is None:
        raise SystemExit("fetch_uv: %s lists no uv wheel for %s" % (project_url, platform.machine()))
    version, name, url, digest = chosen
    try:
        data = download(url, digest)
    except OSError as error:
        raise SystemExit("fetch_uv: cannot download %s: %s" % (url, error))
    os.makedirs(dest, exist_ok=True)
    wheel_path = os.path.join(dest, name)
    with open(wheel_path, "wb") as out:
        out.write(data)
    try:
        target = unpack_uv(wheel_path, dest)
    finally:
        os.remove(wheel_path)
    print("fetch_uv: uv %s -> %s" % (version, target))


if __name__ == "__main__":
    main(sys.argv)
