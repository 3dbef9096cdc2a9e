"""Red team round 8 (interfaces): JSON that two readers read differently.

Python's ``json`` (the JSONL protocol) and pydantic's parser (MCP) keep the *last* of two equal
keys and (Python) accept ``NaN``/``Infinity``. A client, proxy or guard in front of shellrt that
reads the first key (or refuses the line) judged ``{"command": "echo ok", "command": "touch
pwned"}`` as ``echo ok`` while shellrt ran ``touch pwned``. Such lines are now refused whole on
both stdio wires, with what to fix; nothing runs. Held (answered, the server keeps serving): a
5,000-digit number (now a clear error, was "internal error"), 100,000 nested brackets, a CRLF
line end, an escaped NUL in a command. Real ``shellrt serve`` processes over pipes; the local
backend.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests._serve_cli import serve_command

DUPLICATE = (
    '{"type": "tool_use", "id": "r8j-dup", "name": "Bash", '
    '"input": {"command": "echo ok", "command": "touch pwned"}}'
)


def _serve(tmp_path: Path, lines: list[str], *args: str) -> list[dict[str, Any]]:
    argv, env = serve_command(tmp_path, *args)
    done = subprocess.run(
        argv,
        input="".join(line + "\n" for line in lines).encode(),
        capture_output=True,
        env=env,
        timeout=180,
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def _mcp_answers(tmp_path: Path, lines: list[str], until_id: int) -> dict[Any, dict[str, Any]]:
    """Answers by id of ``shellrt serve`` (MCP on stdio), read until ``until_id`` is answered."""
    argv, env = serve_command(tmp_path, "--mode", "bypassPermissions")
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(line + "\n" for line in lines).encode())
    proc.stdin.flush()
    answers: dict[Any, dict[str, Any]] = {}
    try:
        while until_id not in answers:
            line = proc.stdout.readline()
            assert line, f"the server stopped; answers so far: {answers}"
            answer = json.loads(line)
            answers[answer.get("id")] = answer
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return answers


def test_jsonl_refuses_a_repeated_key_and_runs_nothing(tmp_path: Path) -> None:
    answers = _serve(tmp_path, [DUPLICATE], "--jsonl", "--mode", "bypassPermissions")
    assert len(answers) == 1 and answers[0]["type"] == "error", answers
    assert "'command' appears twice" in answers[0]["error"]
    assert not (tmp_path / "ws" / "pwned").exists(), "the last of two keys ran"


def test_jsonl_refuses_non_json_numbers_clearly(tmp_path: Path) -> None:
    lines = [
        '{"type": "tool_use", "id": "r8j-nan", "name": "Bash", "input": {"command": "touch a", "timeout": NaN}}',
        '{"type": "tool_use", "id": "r8j-inf", "name": "Bash", "input": {"command": "touch b", "timeout": -Infinity}}',
        '{"type": "tool_use", "id": "r8j-big", "name": "Bash", "input": {"command": "touch c", "timeout": '
        + "9" * 5000
        + "}}",
    ]
    answers = _serve(tmp_path, lines, "--jsonl", "--mode", "bypassPermissions")
    assert [a["type"] for a in answers] == ["error"] * 3, answers
    assert "NaN is not JSON" in answers[0]["error"] and "-Infinity is not JSON" in answers[1]["error"]
    assert "internal error" not in answers[2]["error"] and "digits" in answers[2]["error"]
    assert not list((tmp_path / "ws").iterdir())


def test_held_jsonl_edge_lines_are_answered_and_the_server_goes_on(tmp_path: Path) -> None:
    lines = [
        "[" * 100_000 + "]" * 100_000,
        '{"type": "tool_use", "id": "r8j-crlf", "name": "Bash", "input": {"command": "echo crlf"}}\r',
        '{"type": "tool_use", "id": "r8j-nul", "name": "Bash", "input": {"command": "echo \\u0000x"}}',
        '{"type": "tool_use", "id": "r8j-last", "name": "Bash", "input": {"command": "echo last"}}',
    ]
    answers = _serve(tmp_path, lines, "--jsonl", "--mode", "bypassPermissions")
    assert answers[0]["type"] == "error" and "nested too deeply" in answers[0]["error"]
    assert answers[1]["content"][0]["content"] == "crlf"
    assert answers[2]["content"][0]["is_error"] and "NUL" in answers[2]["content"][0]["content"]
    assert answers[3]["content"][0]["content"] == "last"


def test_mcp_stdio_refuses_a_repeated_key_and_runs_nothing(tmp_path: Path) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    call = (
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "Bash", '
        '"arguments": {"command": "echo ok", "command": "touch pwned"}}}'
    )
    later = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "Bash", "arguments": {"command": "echo still"}},
    }
    lines = [
        json.dumps(initialize),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call,
        json.dumps(later),
    ]
    answers = _mcp_answers(tmp_path, lines, until_id=3)
    assert "error" in answers[2] and "'command' appears twice" in answers[2]["error"]["message"], answers.get(
        2
    )
    assert "still" in json.dumps(answers[3])
    assert not (tmp_path / "ws" / "pwned").exists(), "the last of two keys ran"
