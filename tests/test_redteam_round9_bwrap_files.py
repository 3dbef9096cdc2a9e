"""Red team round 9 (file tools): a Write that makes a parent directory chowned what a command put there.

As root, Write and Edit create missing parent directories in a writable root and give each to the
root's owner (who commands act as, through the idmapped mount): ``mkdir`` then ``chown`` *by name*.
A command renaming another user's entry to that name in between (the directory it can write, the
entry it need not own) had it handed to the workspace's owner: a root-owned 0600 file, or a
root-owned directory that the Write then also wrote into. The race is a few microseconds wide;
the test makes the command's move happen right after the ``mkdir`` (the syscall wrapped), which
is what a command looping ``rename`` wins sooner or later. Failed before the fix (the new
directory is given through its fd, only when it is the one this process made and still empty).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox import confine
from sandbox.confine import ConfinementError, Mount, View
from tests.conftest import require

OWNER = (4242, 4242)


def _view(ws: Path) -> View:
    return View([Mount("/", "/"), Mount(str(ws), str(ws), writable=True, owner=OWNER, idmapped=True)])


def _racing_mkdir(ws: Path, planted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``mkdir`` of ``newdir`` is followed at once by a command's ``rmdir newdir; mv planted newdir``."""
    real: Callable[..., None] = os.mkdir

    def mkdir(path: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real(path, mode, dir_fd=dir_fd)
        if path == "newdir":
            os.rmdir(ws / "newdir")
            os.rename(planted, ws / "newdir")

    monkeypatch.setattr(os, "mkdir", mkdir)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    require(os.geteuid() == 0, "giving a directory to the root's owner needs root")
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def test_a_file_renamed_into_a_new_parent_is_not_given_away(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = ws / "root-only.key"
    victim.write_text("root's\n")
    victim.chmod(0o600)
    _racing_mkdir(ws, victim, monkeypatch)
    with pytest.raises(ConfinementError):
        confine.write_file(_view(ws), f"{ws}/newdir/f.txt", b"x\n", make_parents=True)
    st = os.lstat(ws / "newdir")
    assert (st.st_uid, st.st_gid) == (0, 0), (st.st_uid, st.st_gid)


def test_a_directory_renamed_into_a_new_parent_is_not_given_away(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = ws / "root-dir"
    victim.mkdir(mode=0o700)
    (victim / "inside").write_text("root's\n")
    _racing_mkdir(ws, victim, monkeypatch)
    with pytest.raises(ConfinementError):
        confine.write_file(_view(ws), f"{ws}/newdir/f.txt", b"x\n", make_parents=True)
    st = os.lstat(ws / "newdir")
    assert (st.st_uid, st.st_gid) == (0, 0) and not (ws / "newdir" / "f.txt").exists()


def test_new_parents_still_belong_to_the_roots_owner(ws: Path) -> None:
    outcome = confine.write_file(_view(ws), f"{ws}/a/b/f.txt", b"x\n", make_parents=True)
    assert outcome.created
    for path in (ws / "a", ws / "a" / "b", ws / "a" / "b" / "f.txt"):
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid) == OWNER, path
