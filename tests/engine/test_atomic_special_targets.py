"""The atomic writer never replaces what is not a regular file (issue 25 item 4): a device or FIFO is written
into, a folder or socket is refused, and ``target_problem``/``folder_problem`` say so in words beforehand."""
from __future__ import annotations

import os
import shutil
import socket
import stat
import threading

import pytest

from nnconsole.engine.atomic import NotAFileError, atomic_write, folder_problem, target_problem, write_via


def _reader(path, into):
    def read():
        with open(path, "rb") as fh:
            into.append(fh.read())
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("how", ["atomic_write", "write_via"])
def test_a_fifo_is_written_into_and_stays_a_fifo(tmp_path, how):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    got: list = []
    thread = _reader(fifo, got)
    if how == "atomic_write":
        atomic_write(str(fifo), b"a,b\n1,2\n")
    else:
        write_via(str(fifo), lambda tmp: open(tmp, "wb").write(b"a,b\n1,2\n"))
    thread.join(10)
    assert got == [b"a,b\n1,2\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["pipe.csv"]  # no temp file left beside it


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_is_written_into_and_never_replaced(tmp_path):
    null = tmp_path / "null"  # a copy of /dev/null's device node: the real one is never put at risk
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    write_via(str(null), lambda tmp: shutil.copyfile(__file__, tmp))
    atomic_write(str(null), b"x" * 100_000, backup=True)
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert os.listdir(tmp_path) == ["null"]


def test_a_folder_or_a_socket_is_refused_and_left_as_it_was(tmp_path):
    folder = tmp_path / "out.csv"
    folder.mkdir()
    (folder / "mine.txt").write_text("kept")
    with pytest.raises(NotAFileError, match="is a folder, not a file"):
        atomic_write(str(folder), b"data")
    assert (folder / "mine.txt").read_text() == "kept"
    sock_path = str(tmp_path / "s.csv")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(sock_path)
        with pytest.raises(NotAFileError, match="is a socket, not a file"):
            write_via(sock_path, lambda tmp: open(tmp, "wb").write(b"data"))
        assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    finally:
        sock.close()
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "s.csv"]


def test_problems_are_said_in_words_before_anything_is_written(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    (tmp_path / "d").mkdir()
    assert target_problem(str(notes)) is None  # a file: replaced
    assert target_problem(str(tmp_path / "new" / "x.csv")) is None  # folders are made
    assert target_problem(str(tmp_path / "d")) == f"{tmp_path / 'd'} is a folder, not a file"
    assert target_problem(str(notes / "x.csv")) == f"{notes} is a file, not a folder"
    assert target_problem(str(notes / "a" / "b" / "x.csv")) == f"{notes} is a file, not a folder"
    assert folder_problem(str(notes)) == f"{notes} is a file, not a folder"
    assert folder_problem(str(tmp_path / "d" / "new")) is None
    assert notes.read_text() == "my notes"
