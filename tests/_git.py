"""Git in tests: a fixed author and committer, so commits work on a machine without git config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def git_in(cwd: Path, *args: str) -> None:
    """``git -C cwd ARGS`` with `GIT_ENV`; fails the test when git fails."""
    subprocess.run(
        ["git", "-C", str(cwd), *args], check=True, env={**os.environ, **GIT_ENV}, capture_output=True
    )


def repo_with_change(tmp_path: Path, name: str, before: str, after: str) -> Path:
    """``tmp_path/ws`` (made here): a repository whose one commit holds ``name`` as ``before``,
    rewritten to ``after`` in the work tree (a change git has to diff)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git_in(ws, "init", "-q")
    (ws / name).write_text(before)
    git_in(ws, "add", "-A")
    git_in(ws, "commit", "-qm", "init")
    (ws / name).write_text(after)
    return ws
