"""Red team round 47 (files7): a ``.git`` *file* sent ripgrep to an exclude file the walker never reads.

Round 45's Left. ripgrep (13) reads a ``.git`` that is a regular file as a worktree's: its first
line ``gitdir: <dir>`` names a directory, and when ``<dir>/commondir`` exists ripgrep obeys
``<commondir>/info/exclude`` -- wherever the two point (an absolute path, or one relative to
ripgrep's own working directory). The walker reads no such file, and the guard (round 45) did not
look: the model writes ``sub/.git`` (``gitdir: /ws/fake``) and ``fake/commondir``
(``/home/alice/other/.git``) and the names Glob and Grep list tell the lines of another
repository's ``info/exclude`` outside the workspace, which Read may not read: which of
``TOKEN=hunter2`` and ``TOKEN=hunter3`` is listed, one guess a name. Now a ``.git`` file whose
gitdir holds (or may hold) a ``commondir`` sends the search to the walker; a search whose root
(or an ancestor) holds a ``.git`` file -- a worktree's -- runs ripgrep with ``--no-ignore-exclude``,
which then reads no exclude file, and the walker answers only where it obeys a ``.git/info/exclude``.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from shellrt.tools import _gitignore, _search
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from tests.test_tools_edit import make_ctx

_GUESSES = ("TOKEN=hunter2", "TOKEN=hunter3")  # the first is the outside exclude file's line


def _tree(base: Path, relative: bool, at_top: bool = False) -> Path:
    base = Path(os.path.realpath(base))
    other = base / "home/other/.git"  # another repository of the user's, outside the workspace
    (other / "info").mkdir(parents=True)
    (other / "info/exclude").write_text("TOKEN=hunter2\n")
    root = base / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "fake").mkdir()
    (root / ".session").mkdir()
    (root / "fake/commondir").write_text(f"{other}\n")  # what the model's Write makes
    gitdir = "fake" if relative else str(root / "fake")  # relative: to ripgrep's working directory
    (root / ("sub/.git" if not at_top else ".git")).write_text(f"gitdir: {gitdir}\n")
    for name in _GUESSES:
        (root / "sub" / name).write_text("hello\n")
    return root


async def _answers(root: Path) -> list[str]:
    ctx = make_ctx(root)
    got: list[str] = []
    for tool, raw in (
        (GlobTool(), {"pattern": "**/TOKEN*"}),
        (GrepTool(), {"pattern": "hello", "output_mode": "files_with_matches"}),
        (GrepTool(), {"pattern": "hello", "output_mode": "files_with_matches", "path": "sub"}),
    ):
        inp = tool.parse_input(raw)
        assert (await tool.validate(inp, ctx)).ok
        try:
            got.append(str(tool.to_model_content((await tool.call(inp, ctx)).data)))  # type: ignore[attr-defined]
        except Exception as exc:  # the refusal is the answer the model sees
            got.append(f"error: {exc}")
    return got


@pytest.mark.parametrize(
    ("relative", "at_top"),
    [(False, False), (True, False), (False, True)],
    ids=["absolute-gitdir", "relative-gitdir", "worktree-root"],
)
def test_a_git_files_commondir_exclude_is_not_obeyed(tmp_path: Path, relative: bool, at_top: bool) -> None:
    if _search.ripgrep_binary() is None:
        pytest.fail("ripgrep is needed (the host search that read the exclude file): install rg")
    root = _tree(tmp_path, relative, at_top)
    for answer in anyio.run(_answers, root):
        for name in _GUESSES:  # the outside file's line hid "TOKEN=hunter2"
            assert name in answer, answer


def test_only_a_git_file_with_a_commondir_sends_the_search_to_the_walker(tmp_path: Path) -> None:
    """A submodule's ``.git`` file (no ``commondir`` where it points) keeps ripgrep; a worktree's
    (or one naming a ``commondir``) does not, nor one the guard cannot read to its first line end."""
    root = _tree(tmp_path, relative=False)
    sub = root / "sub"
    assert _gitignore.odd_ignore_file(root) == str(sub / ".git")
    (sub / ".git").write_text("gitdir: ../.git/modules/sub\n")  # a submodule's: nothing there
    assert _gitignore.odd_ignore_file(root) is None
    (sub / ".git").write_text("not a pointer\n")  # ripgrep reads no exclude through it
    assert _gitignore.odd_ignore_file(root) is None
    (sub / ".git").write_text("gitdir: " + "x/" * 4096)  # no line end within what is read
    assert _gitignore.odd_ignore_file(root) == str(sub / ".git")


def test_a_worktree_keeps_ripgrep_told_to_read_no_exclude_file(tmp_path: Path) -> None:
    """A worktree's searches stay with ripgrep (``--no-ignore-exclude``, so its ``.git`` file leads
    nowhere), unless the walker obeys a ``.git/info/exclude`` below, which ripgrep would then not."""
    root = _tree(tmp_path, relative=False, at_top=True)
    assert _gitignore.gitfile_along(root) and _gitignore.gitfile_along(root / "sub")
    assert not _gitignore.gitfile_along(root.parent)
    assert _gitignore.odd_ignore_file(root, read_exclude=False) is None
    nested = root / "sub/vendored/.git/info"
    nested.mkdir(parents=True)
    (nested / "exclude").write_text("# comments are no rules\n")
    assert _gitignore.odd_ignore_file(root, read_exclude=False) is None
    (nested / "exclude").write_text("*.log\n")  # the walker obeys it; ripgrep, so told, would not
    assert _gitignore.odd_ignore_file(root, read_exclude=False) == str(root / "sub/vendored/.git/info/exclude")
