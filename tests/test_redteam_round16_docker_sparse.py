"""Red team round 16, docker copy-in (and the batch/Inspect copies): a sparse file came in whole.

`sandbox._anchoredcopy` copies docker's copy-mode workspace, the batch task copy and the Inspect
sample copy. It copied a file's bytes with ``copy_file_range``, which on a file system without
reflinks (ext4, tmpfs) writes every zero of a hole: ``truncate -s 1T big``, free in a workspace
(any earlier command of a bind-mode or bwrap session, or docker's own ``--export``, which keeps
holes since round 9), became 1 TB on the host's temp file system at the next copy, as root.
Measured here: a 2 GiB hole took 14.7 s and 2.1 GB of disk. Now only data extents are copied
(``SEEK_DATA``/``SEEK_HOLE``), holes stay holes, the size and bytes are the same.

No container: the copy is the host's; runs as any user.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from sandbox._anchoredcopy import copy_tree, copy_workspace


def _sparse_workspace(root: Path) -> Path:
    src = root / "src"
    src.mkdir()
    with open(src / "big", "wb") as fh:
        fh.truncate(1 << 30)  # a 1 GiB hole
        fh.seek(300 << 20)
        fh.write(b"middle")  # one data extent inside it
    with open(src / "tail", "wb") as fh:
        fh.write(b"head")
        fh.truncate(256 << 20)
    (src / "plain").write_bytes(os.urandom(70_000))
    return src


def _allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def _check(src: Path, dst: Path) -> None:
    for name in ("big", "tail", "plain"):
        assert os.stat(dst / name).st_size == os.stat(src / name).st_size, name
    assert _allocated(dst / "big") < (8 << 20), _allocated(dst / "big")  # not 1 GiB of zeros
    assert _allocated(dst / "tail") < (8 << 20), _allocated(dst / "tail")
    with open(dst / "big", "rb") as fh:
        fh.seek((300 << 20) - 2)
        assert fh.read(10) == b"\0\0middle\0\0"
    with open(dst / "tail", "rb") as fh:
        assert fh.read(6) == b"head\0\0"
    assert (dst / "plain").read_bytes() == (src / "plain").read_bytes()


def test_copy_tree_keeps_holes(tmp_path: Path) -> None:
    src = _sparse_workspace(tmp_path)
    start = time.monotonic()
    copy_tree(str(src), str(tmp_path / "dst"))
    _check(src, tmp_path / "dst")
    assert time.monotonic() - start < 5


def test_workspace_copy_keeps_holes(tmp_path: Path) -> None:
    src = _sparse_workspace(tmp_path)
    copy_workspace(src, tmp_path / "dst", leave_out=())
    _check(src, tmp_path / "dst")
