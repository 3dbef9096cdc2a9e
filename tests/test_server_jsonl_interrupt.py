"""JSONL interrupts over a real ``shellrt serve --jsonl`` process: queued lines, block-type tools."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from tests.test_server_jsonl import JsonlClient, bash, text_of


def _id(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{time.monotonic_ns()}"


def _write_line(client: JsonlClient, value: object) -> None:
    assert client.proc.stdin is not None
    client.proc.stdin.write(json.dumps(value).encode() + b"\n")
    client.proc.stdin.flush()


def _read_line(client: JsonlClient) -> dict[str, Any]:
    assert client.proc.stdout is not None
    line = client.proc.stdout.readline()
    assert line, f"server closed its output; stderr: {client.stderr()}"
    value: dict[str, Any] = json.loads(line)
    return value


def test_an_interrupt_catches_messages_still_waiting_their_turn(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    client = JsonlClient(ws, "--sandbox", "local", "--mode", "bypassPermissions")
    try:
        slow, queued = _id("slow"), _id("queued")
        start = time.monotonic()
        # All three lines are in the pipe before the server has even started reading.
        _write_line(client, bash(slow, "sleep 30"))
        _write_line(client, bash(queued, "touch never-made"))
        _write_line(client, {"type": "interrupt"})
        answer = _read_line(client)
        assert answer["interrupted"] is True and {slow, queued} <= set(answer["tool_use_ids"]), answer
        first, second = _read_line(client), _read_line(client)
        assert first["content"][0]["tool_use_id"] == slow and first["content"][0]["is_error"]
        assert "interrupted" in text_of(first["content"][0]).lower()
        block = second["content"][0]
        assert block["tool_use_id"] == queued and block["is_error"]
        assert "before this call started" in text_of(block), block
        assert not (ws / "never-made").exists()
        assert time.monotonic() - start < 25  # not the 30 s of the sleep
        # The session goes on; a later message runs normally.
        after = client.send(bash(_id("after"), "echo still here"))
        assert "still here" in text_of(after["content"][0])
    finally:
        client.close()


def test_an_interrupt_during_a_block_type_tools_hook_keeps_it_from_starting(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    started = tmp_path / "hook-started"
    hook = tmp_path / "slow_hook.py"
    hook.write_text(
        "import json, pathlib, sys, time\njson.load(sys.stdin)\n"
        f"pathlib.Path({str(started)!r}).write_text('x')\ntime.sleep(2)\n"
    )
    spec = {"matcher": "Write", "hooks": [{"type": "command", "command": f"{sys.executable} {hook}"}]}
    (tmp_path / ".shellrt").mkdir()  # HOME is tmp_path: user settings
    (tmp_path / ".shellrt" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [spec]}}))
    client = JsonlClient(ws, "--sandbox", "local", "--mode", "bypassPermissions")
    try:
        use_id = _id("write")
        target = ws / "written.txt"
        _write_line(
            client,
            {
                "type": "tool_use",
                "id": use_id,
                "name": "Write",
                "input": {"file_path": str(target), "content": "kept\n"},
            },
        )
        deadline = time.monotonic() + 30
        while not started.exists():
            assert time.monotonic() < deadline, f"the hook never ran; stderr: {client.stderr()}"
            time.sleep(0.05)
        _write_line(client, {"type": "interrupt", "tool_use_ids": [use_id]})
        answer = _read_line(client)
        assert answer == {"type": "interrupted", "interrupted": True, "tool_use_ids": [use_id]}, answer
        result = _read_line(client)["content"][0]
        # Write is a block-type tool, but it had not started (its PreToolUse hook was running):
        # "block" keeps a started call whole, it never starts one the user stopped (round 8).
        assert result["is_error"] and "not run" in text_of(result), result
        assert not target.exists()
    finally:
        client.close()
