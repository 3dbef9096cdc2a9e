"""Red team, round 20 (classifier): read-only ``git diff`` rewrote ``.git/index``.

Found by this round's option generator for git (every option of every read-only git subcommand,
run in bubblewrap with the read-only environment): ``git diff`` compares the work tree with the
index, and when a tracked file's stat data changed but its content did not (any ``touch``, a
checkout, an editor saving the same bytes) git 2.39 refreshes the index "quietly": it takes
``.git/index.lock`` and writes ``.git/index`` again. ``GIT_OPTIONAL_LOCKS=0`` stops that in
``git status`` only; ``builtin/diff.c`` does not look at it. So a command judged read-only (and run
concurrently with other read-only calls) wrote a file and held the index lock, the same write the
models refuse ``git describe --dirty`` for. ``diff.autoRefreshIndex=false`` (a read-only command's
configuration overrides) turns that refresh off; git then lists such a file with an empty diff
instead of writing. The commands run only inside bubblewrap, through the Bash tool.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import shellrt
from shellrt.analysis import analyze
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._bwrap_session import require_bwrap

pytestmark = pytest.mark.anyio

_GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
#: Read-only forms that compare the work tree with the index (each refreshed it before).
COMMANDS = ["git diff", "git diff --stat", "git diff HEAD", "git diff -- f"]


def _repo(ws: Path) -> Path:
    """A repository whose tracked file ``f`` has new stat data and unchanged content."""
    ws.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "f").write_text("a\n")
    env = {**os.environ, **_GIT_ENV}
    subprocess.run(["git", "add", "-A"], cwd=ws, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "1"], cwd=ws, check=True, env=env)
    later = (ws / ".git" / "index").stat().st_mtime + 100
    os.utime(ws / "f", (later, later))  # what `touch f` does an instant later
    return ws / ".git" / "index"


def _state(index: Path) -> tuple[bytes, int]:
    return index.read_bytes(), index.stat().st_mtime_ns


@pytest.mark.parametrize("command", COMMANDS)
def test_read_only_git_gets_no_index_refresh(command: str) -> None:
    result = analyze(command)
    assert result.read_only, result.reasons
    env = result.env
    keys = {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))}
    assert keys.get("diff.autoRefreshIndex") == "false", keys


async def test_read_only_git_diff_leaves_the_index_alone_in_bwrap(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    index = _repo(ws)
    before = _state(index)
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=tmp_path / ".s", tools=[Bash()],
                               mode="default") as rt:
        envelopes = await rt.run_envelopes(
            [ToolUseBlock(id=f"d{i}", name="Bash", input={"command": c}) for i, c in enumerate(COMMANDS)]
        )
        texts = [str(e.model.content) for e in envelopes]
        assert not any(e.model.is_error for e in envelopes), texts  # they ran (read-only, unasked)
        assert _state(index) == before, texts
    # The premise: a command that is not read-only (no read-only overlay; run here because the mode
    # lets it) makes the same git diff refresh the index.
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=tmp_path / ".s2", tools=[Bash()],
                               mode="bypassPermissions") as rt:
        [approved] = await rt.run_envelopes(
            [ToolUseBlock(id="w", name="Bash", input={"command": "git diff; touch Q"})]
        )
    assert _state(index) != before, approved.model.content
