"""Red team round 25 (trusted): one workspace-tree guard per session, hashed off the event loop.

Round 24 recorded the workspace tree for an operator's hook and for an operator's stdio server
that load the workspace whole, each on its own: a session with both hashed the tree twice at its
start and twice at its end (50-250 ms each for ~1,000 files) and wrote the record twice, and the
hooks' hash ran inside ``Runtime.__init__``, on the event loop's thread.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt.permissions.tree_writes as tree_writes
from shellrt.runtime import Runtime
from tests._governance import isolated_workspace
from tests._governance import record_entries as _entries
from tests._mcp_support import TEST_SERVER

_PATH = os.pathsep.join([str(Path(__file__).resolve().parent.parent), *filter(None, sys.path)])


def _settings(tmp_path: Path, ws: Path) -> Path:
    """The operator's own file: a hook and a stdio server that both load the workspace whole."""
    hook = f"PYTHONPATH={shlex.quote(str(ws))} {shlex.quote(sys.executable)} -c pass"
    server = {"command": sys.executable, "args": [str(TEST_SERVER)], "cwd": str(ws), "alwaysLoad": True,
              "env": {"PYTHONPATH": os.pathsep.join([".", _PATH])}}
    own = tmp_path / "operator.json"
    own.write_text(json.dumps({
        "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook}]}]},
        "mcpServers": {"srv": server},
    }))
    return own


def test_one_session_hashes_the_tree_once_at_start_and_once_at_end_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed 1 of 1 before: 4 hashes (2 at start, 2 at end), the hooks' one on the loop's thread."""
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "app.py").write_text("X = 1\n")
    own = _settings(tmp_path, ws)
    threads: list[int] = []
    real = tree_writes.workspace_tree_digest

    def counted(root: Path) -> str | None:
        threads.append(threading.get_ident())
        return real(root)

    monkeypatch.setattr(tree_writes, "workspace_tree_digest", counted)

    async def main() -> tuple[int, list[Any]]:
        loop_thread = threading.get_ident()
        async with Runtime(ws, "local", mode="bypassPermissions", settings_files=[own],
                           session_dir=tmp_path / "s1") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "mcp__srv__echo", "input": {"text": "hi"}}
            bash = {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "echo ran"}}
            out = (await rt.run({"role": "assistant", "content": [block, bash]}))["content"]
        return loop_thread, out

    loop_thread, out = anyio.run(main)
    assert "hi" in json.dumps(out[0]) and "ran" in json.dumps(out[1]), out  # both ran: nothing refused
    assert len(threads) == 2, f"the workspace was hashed {len(threads)} times for one session (2 expected)"
    assert loop_thread not in threads, "the workspace was hashed on the event loop's thread"
    assert _entries(tree_writes.tree_writes_path()) == {}  # unchanged: no record left
