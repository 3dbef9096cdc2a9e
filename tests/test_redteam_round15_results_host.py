"""Red team round 15 (follow-up): what a host-side tool fetched is not persisted where commands read.

A result above a tool's size limit is persisted in the session and the model gets a preview with
the path. The session's ``tool-results/`` is bound back read-only into the sandbox (so ``grep``
of a path the model was given works), and every tool persisted there -- also an MCP tool's or an
API caller's tool's result, whose data the sandbox never had (a private database row, a file the
MCP server read outside the workspace). Repo code a later command runs (``npm test`` of a hostile
repo) then read it: measured on the old code, a non-root caller's bwrap session's ``cat`` of the
persisted file printed the secret (a root caller's commands run as a leased uid: they listed the
file, and the 0600 mode kept its content from them). Now only tools whose results hold what commands see anyway
(`Tool.results_seen_by_commands`: Bash, TaskOutput, Glob, Edit, Write) persist there; every other
tool's result goes to ``tool-results-host/``, masked for commands and still shown to the file tools.

Found with it: in a user's first session the per-user state directory did not exist yet when the
masks were worked out (only existing directories are masked outside the roots), so the session's
own transcript and everything in it was readable by a non-root caller's commands. It is made first now.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from shellrt.tools import builtin_tools
from tests._runtime_tools import Echo
from tests.conftest import require

_SECRET = "HOST-ONLY-9c41e2"


def test_a_host_side_tools_persisted_result_is_not_readable_by_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(shutil.which("bwrap") is not None, "bwrap is needed")
    # Where sessions really live (the state directory: masked for commands, its result
    # directories bound back), somewhere the sandbox shows (not below /tmp, which it replaces).
    base = Path(tempfile.mkdtemp(prefix="rt15-results-", dir="/var/tmp"))
    base.chmod(0o755)
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
    monkeypatch.setenv("HOME", str(base / "home"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    ws = base / "ws"
    (ws / "many").mkdir(parents=True)
    for i in range(3000):
        (ws / "many" / f"file-number-{i:05d}.txt").touch()
    big = f"{_SECRET}\n" * 4000  # above Echo's 20,000-character limit: persisted

    async def call(rt: shellrt.Runtime, i: int, name: str, tool_input: dict[str, Any]) -> str:
        block = {"type": "tool_use", "id": f"r{i}", "name": name, "input": tool_input}
        return json.dumps((await rt.run({"role": "assistant", "content": [block]}))["content"][0])

    async def run() -> tuple[str, str, str, str, str]:
        tools = [*builtin_tools(include_powershell=False), Echo()]
        async with shellrt.Runtime(ws, "bwrap", mode="bypassPermissions", tools=tools) as rt:
            session = Path(rt.session_dir)
            echo = await call(rt, 0, "Echo", {"text": big})
            kept = (session / "tool-results-host" / "r0.txt").read_text()
            probe = (
                f"ls {session}/tool-results {session}/tool-results-host 2>&1; cat {session}/transcript.jsonl 2>&1; "
                f"cat {session}/tool-results*/*.txt 2>&1; grep -rl {_SECRET} {session} 2>&1; true"
            )
            seen = await call(rt, 1, "Bash", {"command": probe})
            # A listing of the sandbox's own files: its persisted copy is the sandbox's to read.
            listing = await call(rt, 2, "Glob", {"pattern": "many/*.txt", "limit": 3000})
            return (
                str(session),
                echo,
                kept,
                seen,
                listing + str((session / "tool-results" / "r2.txt").exists()),
            )

    try:
        session_text, echo, kept, seen, listed = anyio.run(run)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    session = Path(session_text)
    assert str(session / "tool-results-host" / "r0.txt") in echo, echo[:500]  # the model is pointed there
    assert kept == big
    # The sandbox can neither read it (a non-root caller's commands run as its own uid) nor see it.
    assert _SECRET not in seen and "r0.txt" not in seen, seen
    # (A user's first session: its state directory did not exist when the masks were worked out, so
    # a non-root caller's ``cat transcript.jsonl`` printed the secret too; root's commands were refused.)
    assert str(session / "tool-results" / "r2.txt") in listed and listed.endswith("True"), listed[-800:]


def test_the_file_tools_still_read_the_host_only_copy(tmp_path: Path) -> None:
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    big = f"{_SECRET}\n" * 4000

    async def run() -> str:
        tools = [*builtin_tools(include_powershell=False), Echo()]
        async with shellrt.Runtime(
            ws, "local", session_dir=session, mode="bypassPermissions", tools=tools
        ) as rt:
            await rt.run(
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "e", "name": "Echo", "input": {"text": big}}],
                }
            )
            path = session / "tool-results-host" / "e.txt"
            block = {
                "type": "tool_use",
                "id": "rd",
                "name": "Read",
                "input": {"file_path": str(path), "limit": 3},
            }
            result = await rt.run({"role": "assistant", "content": [block]})
            return json.dumps(result["content"][0])

    text = anyio.run(run)
    assert _SECRET in text and '"is_error": false' in text, text[:500]
