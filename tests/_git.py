"""Git in tests: a fixed author and committer, so commits work on a machine without git config; a
repository whose own ``.git/config`` runs a program (the classifier attacks' target), and the bwrap
Bash session that tries them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash

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


def filtered_repo(repo: Path, touches: str = "P", filtered: bool = True) -> None:
    """``repo`` (made here) with one committed then modified file ``f`` whose clean filter
    (``filter.x.clean``, when ``filtered``) touches ``touches``, relative to where git runs it."""
    repo.mkdir(parents=True, exist_ok=True)
    git_in(repo, "init", "-q")
    (repo / "f").write_text("a\n")
    (repo / ".gitattributes").write_text("f filter=x\n")
    git_in(repo, "add", "-A")
    git_in(repo, "commit", "-qm", "1")
    (repo / "f").write_text("b\n")
    if filtered:
        git_in(repo, "config", "filter.x.clean", f"sh -c 'touch {touches} && cat'")


async def bash_in_order(
    ws: Path, session: Path, commands: list[str], mode: str = "default", **runtime: object
) -> list[str]:
    """The model-facing text of each command, run one after another in ONE bwrap session (the
    working directory carries over from one to the next)."""
    async with shellrt.Runtime(
        workspace=ws, sandbox="bwrap", session_dir=session, tools=[Bash()], mode=mode, **runtime
    ) as rt:  # type: ignore[arg-type]
        texts = []
        for i, command in enumerate(commands):
            [envelope] = await rt.run_envelopes([ToolUseBlock(id=f"c{i}", name="Bash", input={"command": command})])
            texts.append(str(envelope.model.content))
    return texts
