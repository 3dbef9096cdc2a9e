"""The Bash permission check's allowed roots are memoised, yet always name what each root is now.

`shellrt.tools.bash._roots` keeps roots that are their own real paths after one stat per
call says each still names the same directory; a root through a symlink is resolved on
every call: a root whose symlink now points elsewhere, or whose target moved while
another directory took its name, is never judged by its old target.
"""

from __future__ import annotations

from pathlib import Path

from shellrt.protocol import ToolContext
from shellrt.tools.bash import _roots


def _ctx(root: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(
        session_id="roots", session_dir=tmp_path / "s", workspace=root, cwd=str(root), allowed_roots=(root,)
    )


def test_a_retargeted_root_symlink_is_resolved_afresh(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    link = tmp_path / "ws"
    link.symlink_to(first)
    ctx = _ctx(link, tmp_path)
    assert _roots(ctx) == (str(link), str(first))
    assert _roots(ctx) == (str(link), str(first))  # memoised: same answer

    link.unlink()
    link.symlink_to(second)
    roots = _roots(ctx)
    assert str(second) in roots
    assert str(first) not in roots  # the old target is no longer an allowed root


def test_a_root_that_disappears_and_returns_as_a_symlink_is_resolved_afresh(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "ws"
    root.mkdir()
    ctx = _ctx(root, tmp_path)
    assert _roots(ctx) == (str(root),)
    root.rmdir()
    root.symlink_to(elsewhere)
    assert _roots(ctx) == (str(root), str(elsewhere))


def test_a_moved_root_target_with_a_new_directory_at_its_old_path_is_not_a_root(tmp_path: Path) -> None:
    """The root's symlink follows its target to a new place and a new directory takes the old
    name: the link still names the same directory (same identity), yet the old name is no
    longer an allowed root."""
    first = tmp_path / "first"
    first.mkdir()
    link = tmp_path / "ws"
    link.symlink_to(first)
    ctx = _ctx(link, tmp_path)
    assert _roots(ctx) == (str(link), str(first))

    moved = tmp_path / "moved"
    first.rename(moved)
    link.unlink()
    link.symlink_to(moved)
    first.mkdir()  # a directory the workspace no longer is
    roots = _roots(ctx)
    assert str(moved) in roots
    assert str(first) not in roots
