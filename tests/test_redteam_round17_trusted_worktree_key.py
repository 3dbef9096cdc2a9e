"""Red team round 17 (trusted): ``core.worktree`` pointed at a host directory the sandbox cannot write.

A command set ``core.worktree = <a host directory>`` in ``.git/config`` (a benign key until now).
The operator's next ``git status`` shows every tracked file as deleted, and ``git checkout -- .``
or ``git reset --hard`` (the usual answer) writes them there -- a committed ``.bashrc`` lands in
the home, unsandboxed (shown by hand with git 2.39). A value that leaves the tree is now a
code-running key (reverted); one inside it (``git submodule``'s ``../../../sub``) stays benign.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime


def _run(ws: Path, commands: list[str]) -> list[dict[str, Any]]:
    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, "local", mode="bypassPermissions", session_dir=ws.parent / "s") as rt:
            out = []
            for i, command in enumerate(commands):
                block = {"type": "tool_use", "id": f"c{i}", "name": "Bash", "input": {"command": command}}
                out += (await rt.run({"role": "assistant", "content": [block]}))["content"]
            return out

    return anyio.run(main)


def test_a_worktree_outside_the_tree_is_reverted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    victim = tmp_path / "victim"
    victim.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    results = _run(
        ws,
        [
            f"python3 -c \"import subprocess; subprocess.run(['git', 'config', 'core.worktree', '{victim}'])\"; echo set",
            "python3 -c \"import subprocess as s; s.run(['git', 'init', '-q', 'inner']);"
            " s.run(['git', '-C', 'inner', 'config', 'core.worktree', '../../inner2'])\"; echo inside",
        ],
    )
    shown = json.dumps(results)
    assert "set" in shown and "inside" in shown, shown
    config = (ws / ".git" / "config").read_text()
    assert str(victim) not in config, (config, shown)
    assert "inner2" in (ws / "inner" / ".git" / "config").read_text(), shown  # inside the tree: kept
