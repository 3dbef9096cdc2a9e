"""Round 25, interfaces: an MCP client whose user never answers the permission prompt.

``shellrt serve`` asks the client's user through elicitation; the SDK waits for the answer
without a deadline, so a client that shows the dialog and never answers (its user gone, a
client that accepts the capability and ignores the request) held the call forever: the agent
got no result, and nothing said why. The ask now has a deadline (``$SHELLRT_APPROVAL_TIMEOUT``,
seconds), after which the call is denied with a reason; the other calls go on meanwhile.

A real ``shellrt serve`` process over pipes, local backend, default mode (a Write asks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests._mcp_support import ROOT, isolated_env
from tests.test_redteam_round25_iface_mcp_ids import Wire


def _argv(workspace: Path) -> list[str]:
    return [sys.executable, "-m", "shellrt", "serve", "--workspace", str(workspace), "--sandbox", "local"]


def test_an_unanswered_permission_prompt_denies_after_its_deadline(tmp_path: Path) -> None:
    wire = Wire(tmp_path, mode=(), capabilities={"elicitation": {}}, env={"SHELLRT_APPROVAL_TIMEOUT": "1"})
    target = tmp_path / "ws" / "written.txt"
    try:
        write = {"name": "Write", "arguments": {"file_path": str(target), "content": "x"}}
        wire.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": write})
        asked = wire.read()
        assert asked["method"] == "elicitation/create", asked  # and it is never answered
        started = time.monotonic()
        read = {"name": "Glob", "arguments": {"pattern": "*"}}
        wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": read})
        answers = {}
        while 1 not in answers:
            message = wire.read(120)  # a loaded machine took 55 s
            if "id" in message and "method" not in message:
                answers[message["id"]] = message
        waited = time.monotonic() - started
        assert 2 in answers, "the unanswered prompt held another call"
        result = answers[1]["result"]
        assert result["isError"] is True, result
        text = json.dumps(result)
        assert "no answer" in text and "1 s" in text and "SHELLRT_APPROVAL_TIMEOUT" in text, text
        assert waited < 120, waited  # bounded: before, no answer ever came
        assert not target.exists(), "the Write ran without an answer"
    finally:
        wire.close()


def test_a_bad_approval_deadline_is_a_clear_start_up_error(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {**os.environ, **isolated_env(tmp_path), "SHELLRT_APPROVAL_TIMEOUT": "soon"}
    done = subprocess.run(
        _argv(workspace), stdin=subprocess.DEVNULL, capture_output=True, env=env, cwd=str(ROOT), timeout=60
    )
    assert done.returncode == 2, done
    assert b"SHELLRT_APPROVAL_TIMEOUT" in done.stderr and b"seconds" in done.stderr, done.stderr
