"""Red team round 36 (files): a file growing while Grep judged it held the call.

Grep reads each hit file (and a single file it is given) for a NUL byte, as ripgrep judges binary
files, to the end of the file: while a sandboxed command appends to the file faster than it is
read (``yes > log.txt &``), the check reads on, for hit files in a worker thread no deadline stops,
for a single file in ``off_loop`` (counted stuck after 30 s; 16 such and every file tool of the
process is refused). Not run against a real writer (it would fill the disk): the file object here
appends 1 MiB of text each time it is read, deterministically ahead of the reader (failed before:
it read on and on). Now the check reads up to the size the file had when it looked, as Read does.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from shellrt.tools._search import has_nul, stream_has_nul

_MIB = 1 << 20


class _Growing(io.FileIO):
    """A file a command appends 1 MiB of text to each time it is read; at most ``reads`` reads."""

    def __init__(self, path: Path, reads: int) -> None:
        super().__init__(path, "rb")
        self._path, self.reads, self._left = path, 0, reads

    def read(self, size: int | None = -1) -> bytes:
        self.reads += 1
        if self.reads > self._left:
            raise AssertionError(f"read {self.reads} times: past the size the file had")
        with open(self._path, "ab") as out:
            out.write(b"y\n" * (_MIB // 2))
        return super().read(size)


def test_a_file_growing_while_it_is_judged_is_read_to_its_size_then(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    path.write_bytes(b"y\n" * (3 * _MIB // 2))  # 3 MiB of text, no NUL
    with _Growing(path, reads=16) as fh:
        assert stream_has_nul(fh) is False
        assert fh.reads <= 4
    assert os.path.getsize(path) < 8 * _MIB


def test_a_nul_before_the_size_judged_is_still_found(tmp_path: Path) -> None:
    path = tmp_path / "bin.dat"
    path.write_bytes(b"a" * (2 * _MIB) + b"\x00" + b"b" * 10)
    assert has_nul(str(path)) is True
    path.write_bytes(b"a" * (2 * _MIB + 11))
    assert has_nul(str(path)) is False
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert has_nul("bin.dat", fd) is False
    finally:
        os.close(fd)
