"""Red team, round 17 (classifier): read-only git obeyed a ``.gitconfig`` planted in the sandbox's HOME.

Before a git command is judged read-only, the Bash tool reads the configuration git would obey
(``_gitrepo.repo_code_keys``) on the host, trusting the operator's global file. In a root
caller's bwrap session the command's HOME is ``/tmp`` (root's home is not the sandbox user's), a
tmpfs kept across calls: one approved command (``sh build.sh`` of a hostile repository) leaves
``/tmp/.gitconfig`` with ``[filter "x"] clean = <program>``, the repository's ``.gitattributes``
selects ``filter=x``, and every later ``git status``/``git diff`` ran that program, judged
read-only and unasked, while the host-side check saw no such key. Read-only git now gets
``GIT_CONFIG_GLOBAL`` naming the operator's own file (the one the check trusted): where the
sandbox cannot read it, or it is absent, git skips it and reads no other directory's file.
As a non-root caller the sandbox's HOME is the caller's own, read-only: no such place to plant.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash, BashInput
from tests._bwrap_session import require_bwrap

pytestmark = pytest.mark.anyio

_GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _repo(ws: Path) -> Path:
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "f").write_text("a\n")
    (ws / ".gitattributes").write_text("f filter=x diff=x\n")
    env = {**os.environ, **_GIT_ENV}
    subprocess.run(["git", "add", "-A"], cwd=ws, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "1"], cwd=ws, check=True, env=env)
    (ws / "f").write_text("b\n")  # modified: status and diff run the clean filter on it
    marker = ws / "MARK"
    (ws / "build.sh").write_text(
        "cat > ~/.gitconfig <<'EOF'\n"
        # (no `;` or `#`: they start a comment in a git config value)
        f"[filter \"x\"]\n\tclean = sh -c 'touch {marker} && cat'\n"
        f"[diff \"x\"]\n\ttextconv = sh -c 'touch {marker} && cat $1' -\n"
        "EOF\n"
    )
    return marker


async def test_git_status_ignores_a_gitconfig_left_in_the_sandbox_home(tmp_path: Path) -> None:
    require_bwrap()
    if os.geteuid() != 0:
        pytest.skip("as a non-root caller the sandbox's HOME is the caller's own, read-only: no place to plant")
    ws = tmp_path / "ws"
    marker = _repo(ws)
    tool = Bash()
    # The premise of "unasked": the command is judged read-only (analysis and repository check).
    assert tool.analysis(BashInput(command="git status")).read_only  # type: ignore[union-attr]
    commands = ["sh build.sh && echo HOME=$HOME", "git status", "git diff", "git log -p -1"]
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=tmp_path / ".s", tools=[tool],
                               mode="bypassPermissions") as rt:
        envelopes = [
            (await rt.run_envelopes([ToolUseBlock(id=f"c{i}", name="Bash", input={"command": c})]))[0]
            for i, c in enumerate(commands)
        ]
    texts = [str(e.model.content) for e in envelopes]
    assert "HOME=/tmp" in texts[0], texts[0]  # planted in the session's own HOME
    assert not marker.exists(), texts
    assert "modified:" in texts[1] and "+b" in texts[2], texts  # git still works


def test_read_only_git_names_the_operators_global_file() -> None:
    env = Bash().env_for(BashInput(command="git status"))
    assert env["GIT_CONFIG_GLOBAL"].endswith(("/.gitconfig", "/git/config")) or os.environ.get("GIT_CONFIG_GLOBAL")
    assert "GIT_CONFIG_GLOBAL" not in Bash().env_for(BashInput(command="ls"))
