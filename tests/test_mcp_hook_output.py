"""``updatedMCPToolOutput``: a PostToolUse hook replaces an MCP tool's output (real MCP server, real hook)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from shellrt.runtime import Runtime
from tests._mcp_support import fixture_server_config, write_settings

pytestmark = pytest.mark.anyio

_fresh = iter(range(1, 1_000_000))

#: The hook: answers with whatever REPLACEMENT.json holds (written by each test).
_HOOK = """
import json, pathlib, sys
data = json.load(sys.stdin)
here = pathlib.Path(__file__).parent
(here / "seen.jsonl").open("a").write(json.dumps(data) + "\\n")
replacement = json.loads((here / "REPLACEMENT.json").read_text())
print(json.dumps({"hookSpecificOutput": {"hookEventName": data["hook_event_name"],
                                         "updatedMCPToolOutput": replacement}}))
"""


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    hook = tmp_path / "hook.py"
    hook.write_text(_HOOK)
    command = f"{sys.executable} {hook}"
    hooks = {
        "PostToolUse": [{"matcher": "mcp__t__.*|Read", "hooks": [{"type": "command", "command": command}]}],
        "PostToolUseFailure": [{"matcher": "mcp__t__.*", "hooks": [{"type": "command", "command": command}]}],
    }
    write_settings(
        workspace,
        {"t": fixture_server_config(alwaysLoad=True)},
        permissions={"allow": ["mcp__t", "Read"]},
        hooks=hooks,
    )
    (workspace / "notes.txt").write_text("the real notes\n")
    return workspace


def _replacement(ws: Path, value: Any) -> None:
    (ws.parent / "REPLACEMENT.json").write_text(json.dumps(value))


async def _call(rt: Runtime, name: str, args: dict[str, Any]) -> dict[str, Any]:
    use_id = f"mo-{os.getpid()}-{time.monotonic_ns()}-{next(_fresh)}"
    message = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": use_id, "name": name, "input": args}],
    }
    result: dict[str, Any] = (await rt.run(message))["content"][0]
    return result


def _text(result: dict[str, Any]) -> str:
    content = result["content"]
    return (
        content if isinstance(content, str) else "\n".join(b.get("text", f"[{b['type']}]") for b in content)
    )


def _last_call(rt: Runtime) -> dict[str, Any]:
    entries = [json.loads(line) for line in rt.transcript_path.read_text().splitlines()]
    call: dict[str, Any] = [e for e in entries if e.get("type") == "call"][-1]
    return call


async def test_a_hook_replaces_an_mcp_tools_output_and_the_transcript_keeps_both(ws: Path) -> None:
    _replacement(ws, "[redacted by policy]")
    async with Runtime(ws, "local", session_dir=ws.parent / "session", trust_workspace=True) as rt:
        result = await _call(rt, "mcp__t__echo", {"text": "secret-token-123"})
        assert not result["is_error"]
        assert _text(result) == "[redacted by policy]"
        seen = json.loads((ws.parent / "seen.jsonl").read_text().splitlines()[-1])
        assert "secret-token-123" in json.dumps(seen["tool_response"])  # the hook saw the real output
        call = _last_call(rt)
        assert str(call["mcp_output_replaced_by_hook"]).startswith(sys.executable)
        assert "secret-token-123" in json.dumps(call["original_output"])
        assert "secret-token-123" not in json.dumps(call["model"])
        # Content blocks in MCP shape, an image included.
        pixel = "iVBORw0KGgo="
        _replacement(
            ws,
            {
                "content": [
                    {"type": "text", "text": "one"},
                    {"type": "image", "data": pixel, "mimeType": "image/png"},
                ]
            },
        )
        result = await _call(rt, "mcp__t__echo", {"text": "x"})
        assert [b["type"] for b in result["content"]] == ["text", "image"]
        assert result["content"][1]["source"] == {"type": "base64", "media_type": "image/png", "data": pixel}


async def test_a_built_in_tools_output_is_not_replaced_and_a_notice_says_so(ws: Path) -> None:
    _replacement(ws, "[hook says: nothing here]")
    async with Runtime(ws, "local", session_dir=ws.parent / "session", trust_workspace=True) as rt:
        result = await _call(rt, "Read", {"file_path": "notes.txt"})
        assert "the real notes" in _text(result) and "nothing here" not in _text(result)
        assert "updatedMCPToolOutput ignored: Read is not an MCP tool" in _last_call(rt)["audit"]


async def test_a_bad_replacement_or_a_failure_keeps_the_real_output(ws: Path) -> None:
    _replacement(ws, [{"type": "audio", "data": "x"}])
    async with Runtime(ws, "local", session_dir=ws.parent / "session", trust_workspace=True) as rt:
        result = await _call(rt, "mcp__t__echo", {"text": "kept"})
        assert _text(result) == "echo: kept"
        assert "not a text or image content block" in _last_call(rt)["audit"]
        _replacement(ws, "[would hide the failure]")
        failed = await _call(rt, "mcp__t__fail", {})
        assert failed["is_error"] and "it failed on purpose" in _text(failed)
        assert "PostToolUse only" in _last_call(rt)["audit"]
