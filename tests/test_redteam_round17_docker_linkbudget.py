"""Red team round 17, docker and the other workspace copies: the hard-link bound was per copy.

Round 16 bounded what the copies of a file's extra names (hard links) may write, at 1 GiB, per
copy. A workspace is copied again and again: every docker session on it (and each recovery and
reset of one), every batch task and every Inspect sample of the same source. So a linked tree
wrote up to 1 GiB more at each copy, copy after copy, and N sessions at once wrote N GiB. The
budget is now the source tree's (its real path, device and inode), over every copy this process
makes of it (`sandbox/_anchoredcopy.py`). The bound is patched to 64 MiB to keep the test cheap,
as round 16's test does; the ledger is a fresh one per test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox import _anchoredcopy as anchoredcopy
from sandbox._anchoredcopy import LinkedCopyTooLargeError, copy_tree, copy_workspace
from sandbox.docker import DockerBackend
from sandbox.errors import BackendUnavailableError
from tests._docker_support import BUSYBOX, config, policy, require_docker

#: 10 names of a 4 MiB file: 36 MiB of extra copies each time, under the patched 64 MiB bound once,
#: over it the second time.
_NAMES = 10


def _linked(root: Path) -> Path:
    src = root / "src"
    src.mkdir()
    (src / "data").write_bytes(os.urandom(4 << 20))
    for i in range(_NAMES - 1):
        os.link(src / "data", src / f"n{i}")
    return src


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anchoredcopy, "MAX_LINK_COPY_BYTES", 64 << 20)
    monkeypatch.setattr(anchoredcopy, "_spent", {})


@pytest.mark.usefixtures("small_budget")
def test_copy_after_copy_shares_one_budget(tmp_path: Path) -> None:
    """Before: every copy started at a full budget, so the second (and the thousandth) passed."""
    src = _linked(tmp_path)
    copy_workspace(src, tmp_path / "task1", ())  # a batch task's or an Inspect sample's copy
    assert (tmp_path / "task1" / "n3").read_bytes() == (src / "data").read_bytes()
    with pytest.raises(LinkedCopyTooLargeError, match="links"):
        copy_tree(str(src), str(tmp_path / "task2"))  # docker's copy-in, the same source
    with pytest.raises(LinkedCopyTooLargeError, match="links"):
        copy_workspace(src, tmp_path / "task3", ())


@pytest.mark.usefixtures("small_budget")
def test_another_source_has_its_own_budget(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    copy_tree(str(_linked(first)), str(tmp_path / "c1"))
    copy_tree(str(_linked(second)), str(tmp_path / "c2"))  # not charged for the first tree's links


@pytest.mark.anyio
@pytest.mark.docker
@pytest.mark.usefixtures("small_budget")
async def test_a_second_docker_session_on_the_linked_workspace_is_refused(tmp_path: Path) -> None:
    require_docker()
    src = _linked(tmp_path)
    async with DockerBackend(config(BUSYBOX), policy(src)):
        with pytest.raises(BackendUnavailableError, match="links"):
            async with DockerBackend(config(BUSYBOX), policy(src)):
                pass


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
