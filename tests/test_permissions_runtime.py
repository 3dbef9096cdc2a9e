"""Governance inside the real runtime: settings files, hooks and rules on real Bash calls."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio


def _bash(id_: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "Bash", "input": {"command": command}}


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


async def test_runtime_applies_rules_and_hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        import shellrt
        from shellrt.tools.bash import Bash
    except Exception as exc:  # built in parallel
        pytest.skip(f"runtime or Bash not importable: {exc}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True)
    rewrite = tmp_path / "rewrite.py"
    rewrite.write_text(
        "import json, sys\n"
        "d = json.load(sys.stdin)\n"
        "cmd = d['tool_input']['command']\n"
        "if cmd.startswith('echo secret'):\n"
        "    print('no secrets please', file=sys.stderr); sys.exit(2)\n"
        "if cmd == 'echo hi':\n"
        "    print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse',"
        " 'updatedInput': {'command': 'echo rewritten'}}}))\n"
    )
    settings = {
        "permissions": {"allow": ["Bash(touch allowed.txt)"], "deny": ["Bash(touch denied.txt)"]},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": f"{sys.executable} {rewrite}"}]}
            ]
        },
    }
    (ws / ".shellrt" / "settings.json").write_text(json.dumps(settings))
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", session_dir=tmp_path / ".s", tools=[Bash()], trust_workspace=True
    ) as rt:
        user = await rt.run(
            [
                _bash("a", "echo hi"),
                _bash("b", "echo secret stuff"),
                _bash("c", "touch allowed.txt"),
                _bash("d", "touch denied.txt"),
                _bash("e", "touch allowed.txt && touch sneaky.txt"),
            ]
        )
    a, b, c, d, e = user["content"]
    assert _text(a).strip() == "rewritten"
    assert b["is_error"] and "no secrets please" in _text(b)
    assert not c.get("is_error") and (ws / "allowed.txt").exists()
    assert d["is_error"] and "Bash(touch denied.txt)" in _text(d) and not (ws / "denied.txt").exists()
    assert e["is_error"] and not (ws / "sneaky.txt").exists()
