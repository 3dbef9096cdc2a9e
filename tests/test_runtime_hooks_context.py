"""Hooks through the runtime: PostToolUseFailure context reaches the model; hooks get a real transcript path."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from shellrt.runtime import Runtime

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    workspace = tmp_path / "ws"
    (workspace / ".shellrt").mkdir(parents=True)
    seen = tmp_path / "seen.json"
    hook = tmp_path / "hook.py"
    hook.write_text(
        "import json, sys\n"
        f"data = json.load(sys.stdin)\nopen({str(seen)!r}, 'w').write(json.dumps(data))\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUseFailure',"
        " 'additionalContext': 'HINT: the notes live in docs/notes.md'}}))\n"
    )
    spec = {"matcher": "Read", "hooks": [{"type": "command", "command": f"{sys.executable} {hook}"}]}
    (workspace / ".shellrt" / "settings.json").write_text(
        json.dumps({"hooks": {"PostToolUseFailure": [spec]}})
    )
    return workspace


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


async def test_failure_context_reaches_the_model_and_hooks_get_the_transcript(ws: Path) -> None:
    async with Runtime(ws, "local", session_dir=ws.parent / "session", trust_workspace=True) as rt:
        message = {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "notes.md"}}],
        }
        block = (await rt.run(message))["content"][0]
        assert block["is_error"]
        text = _text(block)
        assert "does not exist" in text and "HINT: the notes live in docs/notes.md" in text
        seen = json.loads((ws.parent / "seen.json").read_text())
        assert seen["hook_event_name"] == "PostToolUseFailure"
        assert seen["transcript_path"] == str(rt.transcript_path) and seen["transcript_path"]
        lines = [json.loads(line) for line in rt.transcript_path.read_text().splitlines()]
        assert lines[-1]["tool_use_id"] == "r1" and lines[-1]["ran"] and lines[-1]["is_error"]
        assert lines[-1]["input"] == {"file_path": "notes.md"} and "HINT" in _text(lines[-1]["model"])
        assert stat.S_IMODE(rt.transcript_path.stat().st_mode) == 0o600


async def test_the_transcript_records_what_actually_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True)
    hook = tmp_path / "rewrite.py"
    hook.write_text(
        "import json, sys\njson.load(sys.stdin)\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse',"
        " 'updatedInput': {'command': 'echo rewritten'}}}))\n"
    )
    spec = {"matcher": "Bash", "hooks": [{"type": "command", "command": f"{sys.executable} {hook}"}]}
    settings = {"hooks": {"PreToolUse": [spec]}, "permissions": {"allow": ["Bash"]}}
    (ws / ".shellrt" / "settings.json").write_text(json.dumps(settings))
    async with Runtime(ws, "local", session_dir=tmp_path / "session", trust_workspace=True) as rt:
        message = {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "echo original"}}
            ],
        }
        block = (await rt.run(message))["content"][0]
        assert _text(block).strip() == "rewritten"
        line = json.loads(rt.transcript_path.read_text().splitlines()[-1])
        assert line["input"] == {"command": "echo original"}
        assert line["executed_input"]["command"] == "echo rewritten" and line["rewritten_by_hook"] is True
        assert line["decision"] == "allow" and line["chain"] and line["ran"]


@pytest.fixture
def failing_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    workspace = tmp_path / "ws"
    (workspace / ".shellrt").mkdir(parents=True)
    hook = tmp_path / "failure_hook.py"
    hook.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "assert data['hook_event_name'] == 'PostToolUseFailure', data\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUseFailure',"
        " 'additionalContext': 'HINT for ' + data['tool_name'] + ': ' + json.dumps(data['error'])[:200]}}))\n"
    )
    spec = {"matcher": "Bash|Echo", "hooks": [{"type": "command", "command": f"{sys.executable} {hook}"}]}
    (workspace / ".shellrt" / "settings.json").write_text(
        json.dumps({"hooks": {"PostToolUseFailure": [spec]}})
    )
    return workspace


async def test_failure_context_reaches_the_model_for_a_failed_command_and_a_crashed_tool(
    failing_ws: Path,
) -> None:
    from shellrt.tools import builtin_tools
    from tests._runtime_tools import Echo

    tools = [*builtin_tools(), Echo()]
    async with Runtime(
        failing_ws,
        "local",
        tools=tools,
        mode="bypassPermissions",
        session_dir=failing_ws.parent / "session",
        trust_workspace=True,
    ) as rt:
        uses = [
            {
                "type": "tool_use",
                "id": "pf-bash-exit",
                "name": "Bash",
                "input": {"command": "echo out; exit 3"},
            },
            {"type": "tool_use", "id": "pf-echo-bug", "name": "Echo", "input": {"text": "raise-bug"}},
        ]
        bash_block, echo_block = (await rt.run({"role": "assistant", "content": uses}))["content"]
        assert bash_block["is_error"] and "HINT for Bash" in _text(bash_block), bash_block
        assert echo_block["is_error"] and "boom" in _text(echo_block)
        assert "HINT for Echo" in _text(echo_block) and "boom" in _text(echo_block).split("HINT for Echo")[1]
