"""`shellrt.tools._realdir.real_dir` answers exactly what `os.path.realpath` answers.

It resolves through the kernel (an ``O_PATH`` open and ``/proc/self/fd``) and caches
nothing; these cases compare it with `realpath` where the two could part: symlinks,
``..`` after a symlink, a moved directory with a symlink at its old path, a deleted
directory, files, loops, missing paths, ``//``. The Bash check uses it for the cwd.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shellrt.protocol import ToolContext
from shellrt.tools._realdir import real_dir
from shellrt.tools.bash import Bash, BashInput


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "file").write_text("x")
    (tmp_path / "to_b").symlink_to(tmp_path / "a" / "b")
    (tmp_path / "a" / "rel").symlink_to("b/c")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    return tmp_path


@pytest.mark.parametrize(
    "relative",
    [
        "a",
        "a/b/c",
        "a/b/c/",
        "a/./b//c",
        "to_b",
        "to_b/c",
        "to_b/..",  # `..` after a symlink: the parent of its target
        "a/rel",
        "a/rel/..",
        "a/file",  # not a directory: realpath's own answer
        "loop",
        "loop/x",
        "dangling",
        "missing/x/..",
    ],
)
def test_same_answer_as_realpath(tree: Path, relative: str) -> None:
    path = f"{tree}/{relative}"
    assert real_dir(path) == os.path.realpath(path)


def test_paths_realpath_keeps_as_it_likes(tree: Path) -> None:
    for path in ("//", f"/{tree}/a", f"//{str(tree).lstrip('/')}/a", "a/b", "", "/", "/proc/self"):
        assert real_dir(path) == os.path.realpath(path), path
    with pytest.raises(ValueError):  # as realpath: a NUL byte names no path
        real_dir(f"{tree}/a\x00b")


def test_a_moved_directory_with_a_symlink_at_its_old_path(tree: Path) -> None:
    """Same directory (same device and inode) through the old name, yet its real path changed:
    nothing remembered from before the move may be answered."""
    old = tree / "a" / "b"
    assert real_dir(str(old)) == str(old)
    moved = tree / "elsewhere"
    old.rename(moved)
    old.symlink_to(moved)
    assert os.stat(old).st_ino == os.stat(moved).st_ino
    assert real_dir(str(old)) == str(moved) == os.path.realpath(old)
    assert real_dir(f"{old}/c") == str(moved / "c")


def test_a_directory_deleted_and_made_again(tree: Path) -> None:
    target = tree / "a" / "b" / "c"
    target.rmdir()
    assert real_dir(str(target)) == os.path.realpath(target)
    target.mkdir()
    assert real_dir(str(target)) == str(target)


def _ctx(ws: Path, cwd: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(
        session_id="realdir",
        session_dir=tmp_path / "session",
        workspace=ws,
        cwd=str(cwd),
        allowed_roots=(ws,),
    )


@pytest.mark.anyio
async def test_the_bash_check_judges_the_cwd_where_it_is_now(tmp_path: Path) -> None:
    """A cwd inside the workspace is moved out of it and a symlink left at its old path:
    the next decision sees the cwd outside the workspace (it asks), though the string and
    the directory's identity are the same as before."""
    ws = tmp_path / "ws"
    sub = ws / "sub"
    sub.mkdir(parents=True)
    outside = tmp_path / "outside"
    bash = Bash()
    first = await bash.check_permissions(BashInput(command="ls"), _ctx(ws, sub, tmp_path))
    assert first.behavior == "allow"

    sub.rename(outside)
    sub.symlink_to(outside)
    again = await bash.check_permissions(BashInput(command="ls"), _ctx(ws, sub, tmp_path))
    assert again.behavior == "ask"
    assert "outside the workspace" in (again.reason or "")
