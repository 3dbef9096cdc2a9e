"""Red team round 36 (files2): ignore files still hid tracked files where the index was not read.

A linked worktree or a submodule (``.git`` is a file, ``gitdir: ...``), a workspace below its
repository's top, and a split index (``link`` extension): Glob and Grep were told nothing was
hidden, so ``.rgignore`` naming ``evil.py`` hid the tracked ``src/evil.py`` there, silently.
The ``.git`` file is the repository's: a ``gitdir:`` naming a directory outside the workspace
is not followed (pinned), nor a ``.git`` file that is a FIFO or a symlink.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio

from shellrt.tools._tracked import tracked_under
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from tests.test_tools_edit import make_ctx

_NOTE = "shown are tracked by git but named in this tree's ignore files"


def _git(root: Path, *argv: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a"}
    env["GIT_COMMITTER_EMAIL"] = "a@b"
    subprocess.run(["git", "-C", str(root), *argv], check=True, capture_output=True, env=env)


def _files(root: Path) -> None:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "src/evil.py").write_text("eval(input())  # MARK\n")
    (root / "src/ok.py").write_text("print('MARK')\n")


def _grep(workspace: Path, path: Path | None = None) -> str:
    async def go() -> str:
        out = []
        for tool, raw in (
            (GrepTool(), {"pattern": "MARK", "output_mode": "content", "path": str(path or workspace)}),
            (GlobTool(), {"pattern": "**/*.py", "path": str(path or workspace)}),
        ):
            ctx = make_ctx(workspace)
            inp = tool.parse_input(raw)
            assert (await tool.validate(inp, ctx)).ok
            out.append(str(tool.to_model_content((await tool.call(inp, ctx)).data)))  # type: ignore[attr-defined]
        return "\n".join(out)

    return anyio.run(go)


def _real(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


def test_a_separate_git_dir_inside_the_workspace(tmp_path: Path) -> None:
    """A submodule's layout: ``.git`` is a file naming a git directory elsewhere in the workspace."""
    ws = _real(tmp_path) / "ws"
    sub = ws / "sub"
    _files(sub)
    (ws / ".session").mkdir(parents=True)
    (ws / "modules").mkdir()
    subprocess.run(
        ["git", "init", "-q", f"--separate-git-dir={ws / 'modules/sub'}", str(sub)],
        check=True,
        capture_output=True,
    )
    _git(sub, "add", "src")
    assert (sub / ".git").is_file()
    (sub / ".rgignore").write_text("evil.py\n")
    content = _grep(ws, sub)
    assert "sub/src/evil.py:1:eval" in content and _NOTE in content
    assert str(sub / "src/evil.py") in content


def test_a_linked_worktree_inside_the_workspace(tmp_path: Path) -> None:
    ws = _real(tmp_path) / "ws"
    _files(ws)
    (ws / ".session").mkdir()
    _git(ws, "init", "-q")
    _git(ws, "add", "src")
    _git(ws, "commit", "-qm", "x")
    _git(ws, "worktree", "add", "-q", str(ws / "wt"))
    (ws / "wt/.ignore").write_text("evil.py\n")
    assert sorted(tracked_under(ws / "wt", ws) or []) == ["src/evil.py", "src/ok.py"]
    assert "wt/src/evil.py:1:eval" in _grep(ws, ws / "wt")


def test_a_gitdir_outside_the_workspace_is_not_followed(tmp_path: Path) -> None:
    ws = _real(tmp_path) / "ws"
    _files(ws)
    subprocess.run(
        ["git", "init", "-q", f"--separate-git-dir={_real(tmp_path) / 'outside'}", str(ws)],
        check=True,
        capture_output=True,
    )
    _git(ws, "add", "src")
    assert tracked_under(ws, ws) is None  # it may name any host path: not read
    (ws / ".git").unlink()
    os.symlink(_real(tmp_path) / "outside", ws / ".git")
    assert tracked_under(ws, ws) is None
    os.unlink(ws / ".git")
    os.mkfifo(ws / ".git")
    assert tracked_under(ws, ws) is None  # not opened for reading: no hang


def test_a_workspace_below_its_repository_top(tmp_path: Path) -> None:
    repo = _real(tmp_path) / "repo"
    ws = repo / "pkg"
    _files(ws)
    (ws / ".session").mkdir()
    _git(repo, "init", "-q")
    _git(repo, "add", "pkg/src")
    (ws / ".ignore").write_text("evil.py\n")
    content = _grep(ws)
    assert "src/evil.py:1:eval" in content and _NOTE in content


def test_a_split_index(tmp_path: Path) -> None:
    ws = _real(tmp_path) / "ws"
    _files(ws)
    (ws / ".session").mkdir()
    _git(ws, "init", "-q")
    _git(ws, "add", "src/ok.py")
    _git(ws, "update-index", "--split-index")
    _git(ws, "add", "src/evil.py")
    assert list((ws / ".git").glob("sharedindex.*"))
    assert sorted(tracked_under(ws, ws) or []) == ["src/evil.py", "src/ok.py"]
    (ws / ".rgignore").write_text("evil.py\n")
    assert "src/evil.py:1:eval" in _grep(ws)
    assert shutil.which("git")
