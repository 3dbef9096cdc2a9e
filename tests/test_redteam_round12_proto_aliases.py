"""Red team round 12 (protocol): a tool's other names must be the same tool to rules and hooks.

TaskOutput answers to ``BashOutput`` and TaskStop to ``KillShell`` (the names other agents and
their users' settings use; Claude Code's older ``KillBash`` too). The registry resolved a call by
either name, but a deny rule or a hook matcher naming ``BashOutput``/``KillShell`` was compared
with the canonical name only: ``deny: ["KillShell"]`` and a PreToolUse guard on ``KillShell``
matched nothing, silently, and the model stopped the operator's background tasks anyway. A rule or
matcher naming an alias now means the tool itself.

Regression tests (held before): tool-name spoofing (``Bash `` with a space, ``bash``, a Cherokee
``Ᏼash``, a zero-width space) is an unknown tool that never runs, whatever the deny rules.
"""

from __future__ import annotations

import json
import re
import secrets
import sys
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions.hooks import matcher_matches
from shellrt.permissions.rules import parse_rule
from shellrt.permissions.tool_names import TOOL_ALIASES, canonical_tool_name
from shellrt.runtime.registry import ToolRegistry
from shellrt.tools import builtin_tools
from tests._governance import trust_env

pytestmark = pytest.mark.anyio


async def _call(rt: shellrt.Runtime, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "al-" + secrets.token_hex(6), "name": name, "input": tool_input}
    result: dict[str, Any] = (await rt.run([block]))["content"][0]
    return result


def _text(result: dict[str, Any]) -> str:
    content = result["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


async def _background(rt: shellrt.Runtime) -> str:
    started = await _call(rt, "Bash", {"command": "sleep 60", "run_in_background": True})
    assert not started.get("is_error"), started
    found = re.search(r"task id (\w+)", _text(started))
    assert found, _text(started)
    return found.group(1)


def _settings(tmp_path: Path, body: dict[str, Any]) -> Path:
    path = tmp_path / ("settings-" + secrets.token_hex(3) + ".json")
    path.write_text(json.dumps(body))
    return path


@pytest.mark.parametrize(
    ("denied", "tool", "names"),
    [
        ("KillShell", "TaskStop", ["TaskStop", "KillShell"]),
        ("KillBash", "TaskStop", ["TaskStop", "KillShell"]),
        ("BashOutput", "TaskOutput", ["TaskOutput", "BashOutput"]),
    ],
)
async def test_a_deny_rule_naming_an_alias_denies_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, denied: str, tool: str, names: list[str]
) -> None:
    """Failed on the old code: ``deny: ["KillShell"]`` left TaskStop callable under both names
    (the background task was killed), and listed in tools[]."""
    trust_env(tmp_path, monkeypatch)
    ws = tmp_path / "ws"
    ws.mkdir()
    settings = _settings(tmp_path, {"permissions": {"allow": ["Bash"], "deny": [denied]}})
    async with shellrt.Runtime(ws, "local", session_dir=tmp_path / "s", settings_files=[settings]) as rt:
        assert tool not in [t["name"] for t in rt.tools_for_anthropic()]
        task_id = await _background(rt)
        for name in names:
            result = await _call(rt, name, {"task_id": task_id})
            assert result.get("is_error"), (name, result)
            assert "denied" in _text(result), _text(result)
        status = rt.supervisor.tasks.get(task_id) if rt.supervisor else None
        assert status is not None and status.status.value == "running", status


async def test_an_allow_rule_naming_an_alias_allows_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other direction: ``allow: ["KillShell"]`` in dontAsk mode lets TaskStop run (it was an
    allow rule for a tool that does not exist). TaskStop allows itself anyway; the rule must parse to
    the canonical name."""
    rule = parse_rule("KillShell", "allow")
    assert rule.tool == "TaskStop"
    assert parse_rule("BashOutput", "deny").tool == "TaskOutput"
    assert parse_rule("KillBash", "ask").tool == "TaskStop"


async def test_a_pre_tool_use_guard_on_an_alias_guards_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed on the old code: the operator's PreToolUse hook with matcher ``KillShell`` (exit 2:
    block) never ran for TaskStop, and the background task was killed."""
    trust_env(tmp_path, monkeypatch)
    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "hook.log"
    hook = f"{sys.executable} -c \"import sys; open({str(log)!r}, 'a').write('x'); sys.exit(2)\""
    for matcher in ("KillShell", "BashOutput|KillShell", "Kill.*"):
        hooks = {"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": hook}]}]}
        settings = _settings(tmp_path, {"hooks": hooks, "permissions": {"allow": ["Bash"]}})
        log.unlink(missing_ok=True)
        session = tmp_path / ("s-" + secrets.token_hex(3))
        async with shellrt.Runtime(ws, "local", session_dir=session, settings_files=[settings]) as rt:
            task_id = await _background(rt)
            result = await _call(rt, "TaskStop", {"task_id": task_id})
            assert result.get("is_error"), (matcher, result)
            assert log.exists(), f"the {matcher!r} guard did not run for TaskStop"
            status = rt.supervisor.tasks.get(task_id) if rt.supervisor else None
            assert status is not None and status.status.value == "running", (matcher, status)


def test_every_alias_of_a_built_in_tool_is_known_to_the_rules() -> None:
    """A new alias on a tool cannot be forgotten by the rule parser and the hook matcher."""
    registry = ToolRegistry(builtin_tools(include_powershell=True))
    for tool in registry.all_tools():
        for alias in tool.aliases:
            assert TOOL_ALIASES.get(alias) == tool.name, alias
            assert canonical_tool_name(alias) == tool.name
            assert matcher_matches(alias, tool.name)
            assert parse_rule(alias, "deny").tool == tool.name
    assert not matcher_matches("KillShell", "TaskOutput")
    assert not matcher_matches("Bash", "TaskStop")


@pytest.mark.parametrize("name", ["Bash ", " Bash", "bash", "BASH", "\u13f4ash", "Bash\u200b", "Ba\u0455h"])
async def test_a_spoofed_tool_name_never_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Held before: the lookup is exact; a look-alike name is an unknown tool, nothing runs."""
    trust_env(tmp_path, monkeypatch)
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = ws / "ran"
    settings = _settings(tmp_path, {"permissions": {"allow": ["Bash"], "deny": ["Bash(touch:*)"]}})
    async with shellrt.Runtime(ws, "local", session_dir=tmp_path / "s", settings_files=[settings]) as rt:
        result = await _call(rt, name, {"command": f"touch {marker}"})
        assert result.get("is_error")
        assert "Unknown tool" in _text(result), _text(result)
        denied = await _call(rt, "Bash", {"command": f"touch {marker}"})
        assert denied.get("is_error") and "denied" in _text(denied), _text(denied)
    assert not marker.exists()
