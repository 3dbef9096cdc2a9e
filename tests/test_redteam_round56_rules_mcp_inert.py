"""Red team, round 56 (rules): MCP deny rules that parsed and named no tool.

``mcp__*`` (every MCP tool, as an operator would write it), ``mcp___*``, ``MCP__srv__wipe`` and
``Mcp__srv`` were taken as rules: the first two as a server named ``*``/``_*``, which no server can
be, the others as tools of another name (MCP tool names are ``mcp__`` in lower case). Each matched
nothing, silently, so the deny denied nothing: ``mcp__srv__wipe`` ran unasked in
``bypassPermissions``. A deny that can never match is malformed: now each is refused with what to
write instead, and a malformed deny degrades the session (fail closed) as any other does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.permissions import build_governance
from shellrt.permissions.errors import RuleSyntaxError
from shellrt.permissions.rules import parse_rule
from shellrt.protocol import PermissionResult, ToolContext
from tests._runtime_tools import SleepInput, _SleepBase

INERT = ["mcp__*", "mcp___*", "MCP__srv__wipe", "Mcp__srv", "MCP__srv__*"]
#: Rules that do name MCP tools: unchanged.
KEPT = ["mcp__srv", "mcp__srv__*", "mcp__srv__wipe", "mcp__a-b", "mcp__srv___private"]


class Wipe(_SleepBase):
    """An MCP-named tool with side effects and no opinion of its own (as an MCP proxy is)."""

    name = "mcp__srv__wipe"
    touches_environment = True

    async def check_permissions(self, tool_input: SleepInput, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.passthrough()


@pytest.mark.parametrize("text", INERT)
def test_a_rule_that_names_no_mcp_tool_is_refused(text: str) -> None:
    """Failed 5 of 5 before: parsed, matching no tool."""
    with pytest.raises(RuleSyntaxError, match="mcp__"):
        parse_rule(text, "deny")


@pytest.mark.parametrize("text", KEPT)
def test_rules_naming_mcp_tools_still_parse(text: str) -> None:
    assert parse_rule(text, "deny").tool == text


@pytest.mark.anyio
@pytest.mark.parametrize("text", INERT)
async def test_the_tool_does_not_run_unasked(tmp_path: Path, text: str) -> None:
    """Failed 5 of 5 before: ``allow`` (bypassPermissions), the deny inert and unreported."""
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"deny": [text]}}))
    gov = build_governance(
        ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode="bypassPermissions",
        trust_workspace=True,
    )
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "s", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    decision = await gov.engine.decide(Wipe(), SleepInput(seconds=0), ctx)
    assert decision.behavior != "allow", decision
    assert any(text in d and "mcp__" in d for d in gov.settings.diagnostics), gov.settings.diagnostics
