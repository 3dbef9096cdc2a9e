"""Red team round 16, docker copy-in (and the batch/Inspect copies): a sparse file came in whole.

`sandbox._anchoredcopy` copies docker's copy-mode workspace, the batch task copy and the Inspect
sample copy. It copied a file's bytes with ``copy_file_range``, which on a file system without
reflinks (ext4, tmpfs) writes every zero of a hole: ``truncate -s 1T big``, free in a workspace
(any earlier command of a bind-mode or bwrap session, or docker's own ``--export``, which keeps
holes since round 9), became 1 TB on the host's temp file system at the next copy, as root.
Measured here: a 2 GiB hole took 14.7 s and 2.1 GB of disk. Now only data extents are copied
(``SEEK_DATA``/``SEEK_HOLE``), holes stay holes, the size and bytes are the same.

Same class: every name of a hard-linked file was copied whole (a link is free to make): the
copies of names already copied are now bounded (`MAX_LINK_COPY_BYTES`), past it the copy stops
with an error naming the fix.

No container but for the last test: the copy is the host's; runs as any user.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sandbox import BackendUnavailableError
from sandbox import _anchoredcopy as anchoredcopy
from sandbox._anchoredcopy import MAX_LINK_COPY_BYTES, LinkedCopyTooLargeError, copy_tree, copy_workspace
from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, config, policy, require_docker


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


def _linked_workspace(root: Path, names: int) -> Path:
    src = root / "linked"
    src.mkdir()
    (src / "data").write_bytes(os.urandom(4 << 20))
    for i in range(names):
        os.link(src / "data", src / f"n{i}")
    return src


def test_hard_links_cannot_multiply_the_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """300 names of a 4 MiB file cost their maker 300 directory entries; the copy wrote 1.2 GB
    (each name copied whole). Past `MAX_LINK_COPY_BYTES` of such copies it now stops, saying how
    to fix it, having written at most about that much."""
    src = _linked_workspace(tmp_path, 300)
    dst = tmp_path / "dst"
    assert MAX_LINK_COPY_BYTES < 300 * (4 << 20)
    monkeypatch.setattr(anchoredcopy, "MAX_LINK_COPY_BYTES", 64 << 20)  # the same, 16 times cheaper
    with pytest.raises(LinkedCopyTooLargeError, match="links"):
        copy_tree(str(src), str(dst))
    written = sum(os.stat(p).st_blocks * 512 for p in dst.iterdir())
    assert written <= (64 << 20) + (8 << 20), written


def test_a_few_hard_links_are_still_copied(tmp_path: Path) -> None:
    src = _linked_workspace(tmp_path, 3)
    copy_tree(str(src), str(tmp_path / "dst"))
    data = (src / "data").read_bytes()
    assert all((tmp_path / "dst" / f"n{i}").read_bytes() == data for i in range(3))


@pytest.mark.anyio
@pytest.mark.docker
async def test_docker_copy_mode_refuses_the_linked_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_docker()
    monkeypatch.setattr(anchoredcopy, "MAX_LINK_COPY_BYTES", 64 << 20)
    src = _linked_workspace(tmp_path, 300)
    with pytest.raises(BackendUnavailableError, match="links"):
        async with DockerBackend(config(BUSYBOX), policy(src)):
            pass
