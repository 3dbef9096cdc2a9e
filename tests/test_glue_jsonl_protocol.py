"""JSONL protocol additions over a real ``shellrt serve --jsonl`` process: history, interrupt, --session."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.test_server_jsonl import JsonlClient, bash, text_of


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    return ws


def _write_line(client: JsonlClient, value: object) -> None:
    assert client.proc.stdin is not None
    client.proc.stdin.write(json.dumps(value).encode() + b"\n")
    client.proc.stdin.flush()


def _read_line(client: JsonlClient) -> dict[str, object]:
    assert client.proc.stdout is not None
    line = client.proc.stdout.readline()
    assert line, f"server closed its output; stderr: {client.stderr()}"
    value: dict[str, object] = json.loads(line)
    return value


def test_history_line_repairs_the_pairing(tmp_path: Path) -> None:
    client = JsonlClient(_workspace(tmp_path), "--sandbox", "local", "--mode", "bypassPermissions")
    try:
        conversation = [
            {"role": "user", "content": "list files"},
            {"role": "assistant", "content": [bash("u1", "ls")]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "ghost", "content": "x"}]},
        ]
        answer = client.send({"type": "history", "messages": conversation})
        assert answer["type"] == "history", answer
        kinds = {c["kind"] for c in answer["changes"]}
        assert {"synthetic_result", "orphan_result_dropped"} <= kinds, answer["changes"]
        last = answer["messages"][-1]["content"]
        assert [b["tool_use_id"] for b in last if b.get("type") == "tool_result"] == ["u1"]
        bad = client.send({"type": "history"})
        assert bad["type"] == "error" and "messages" in bad["error"]
    finally:
        client.close()


def test_interrupt_line_stops_a_running_command(tmp_path: Path) -> None:
    client = JsonlClient(_workspace(tmp_path), "--sandbox", "local", "--mode", "bypassPermissions")
    try:
        start = time.monotonic()
        _write_line(client, bash("s1", "sleep 30"))
        time.sleep(1.5)
        _write_line(client, {"type": "interrupt", "tool_use_ids": ["s1"]})
        first = _read_line(client)
        assert first == {"type": "interrupted", "interrupted": True, "tool_use_ids": ["s1"]}, first
        result = _read_line(client)
        content = result["content"]
        assert isinstance(content, list) and len(content) == 1
        block: dict[str, Any] = content[0]
        assert block["tool_use_id"] == "s1" and block["is_error"] is True
        assert "interrupted" in text_of(block).lower()
        assert time.monotonic() - start < 25  # not the 30 s of the sleep
        # Nothing running: the interrupt says so; the session goes on.
        idle = client.send({"type": "interrupt"})
        assert idle["interrupted"] is False
        after = client.send(bash("s2", "echo still here"))
        assert "still here" in text_of(after["content"][0])
    finally:
        client.close()


def test_session_option_reopens_the_cwd(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    (ws / "sub").mkdir()
    args = ("--sandbox", "local", "--mode", "bypassPermissions", "--session", "glue-resume")
    client = JsonlClient(ws, *args)
    try:
        client.send(bash("c1", "cd sub"))
    finally:
        assert client.close() == 0
    again = JsonlClient(ws, *args)
    try:
        pwd = again.send(bash("c2", "pwd"))
        assert text_of(pwd["content"][0]).strip().endswith("/ws/sub"), pwd
    finally:
        again.close()
