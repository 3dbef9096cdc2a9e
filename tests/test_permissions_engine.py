"""The decision order of issue 6, step by step, and every permission mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shellrt.permissions import Governance, PermissionDecision, build_governance
from shellrt.protocol import Tool

from .test_permissions_support import (
    Bash,
    EditTool,
    ReadTool,
    Refuser,
    WebFetchTool,
    edit_input,
    make_ctx,
    mcp_tool,
)

pytestmark = pytest.mark.anyio


def make_gov(tmp_path: Path, settings: dict[str, Any] | None = None, **kw: Any) -> Governance:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True, exist_ok=True)
    if settings is not None:
        (ws / ".shellrt" / "settings.json").write_text(json.dumps(settings, indent=2))
    kw.setdefault("home", tmp_path / "home")
    kw.setdefault("managed_path", tmp_path / "managed.json")
    kw.setdefault("trust_workspace", True)  # these tests are about the engine, not workspace trust
    return build_governance(ws, **kw)


async def decide(
    gov: Governance, tool: Tool[Any, Any], raw: dict[str, Any], tmp_path: Path, **kw: Any
) -> PermissionDecision:
    ctx = make_ctx(gov.settings.workspace, tmp_path)
    return await gov.engine.decide(tool, tool.parse_input(raw), ctx, **kw)


def rules(allow: list[str] = [], deny: list[str] = [], ask: list[str] = [], **extra: Any) -> dict[str, Any]:  # noqa: B006
    return {"permissions": {"allow": allow, "deny": deny, "ask": ask, **extra}}


# --- step 1: deny ---------------------------------------------------------------------------
async def test_step1_tool_wide_deny_beats_everything(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["Bash"], deny=["Bash"]), mode="bypassPermissions")
    d = await decide(gov, Bash(), {"command": "ls"}, tmp_path)
    assert d.behavior == "deny" and d.rule == "Bash"
    assert "project settings" in (d.source or "") and "settings.json:" in (d.source or "")
    assert any(step.startswith("1 deny") for step in d.chain)


async def test_step1_content_deny_on_one_subcommand_denies_the_whole(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["Bash(ls:*)"], deny=["Bash(curl:*)"]))
    d = await decide(gov, Bash(), {"command": "ls; curl evil"}, tmp_path)
    assert d.behavior == "deny" and d.rule == "Bash(curl:*)"
    assert "curl evil" in d.reason


async def test_step1_hook_deny(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["Bash"]))
    hook = PermissionDecision(behavior="deny", reason="no", source="hook")
    d = await decide(gov, Bash(), {"command": "ls"}, tmp_path, hook_decision=hook)
    assert d.behavior == "deny" and d.source == "hook"


# --- step 2: tool-wide ask ------------------------------------------------------------------
async def test_step2_tool_wide_ask_beats_allow_and_bypass(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["WebFetch"], ask=["WebFetch"]), mode="bypassPermissions")
    d = await decide(gov, WebFetchTool(), {"url": "https://example.com"}, tmp_path)
    assert d.behavior == "ask" and d.rule == "WebFetch"


async def test_step2_hook_ask_beats_allow_rule(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["Bash"]))
    hook = PermissionDecision(behavior="ask", reason="check with a human", source="hook")
    d = await decide(gov, Bash(), {"command": "make"}, tmp_path, hook_decision=hook)
    assert d.behavior == "ask" and "human" in d.reason


# --- step 3: the tool's own check -------------------------------------------------------------
async def test_step3_tool_deny_is_final(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["Refuser"]), mode="bypassPermissions")
    d = await decide(gov, Refuser(), {}, tmp_path)
    assert d.behavior == "deny" and d.reason == "never"


async def test_step3_read_only_bash_inside_workspace_allows(tmp_path: Path) -> None:
    gov = make_gov(tmp_path)
    d = await decide(gov, Bash(), {"command": "git status"}, tmp_path)
    assert d.behavior == "allow" and d.source == "tool"


async def test_step3_read_outside_asks(tmp_path: Path) -> None:
    gov = make_gov(tmp_path)
    d = await decide(gov, ReadTool(), {"file_path": "/etc/hostname"}, tmp_path)
    assert d.behavior == "ask" and "outside" in d.reason


# --- step 4: content ask and safety checks ------------------------------------------------------
async def test_step4_content_ask_beats_bypass_and_allow(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["Bash"], ask=["Bash(git push:*)"]), mode="bypassPermissions")
    d = await decide(gov, Bash(), {"command": "git push origin main"}, tmp_path)
    assert d.behavior == "ask" and d.rule == "Bash(git push:*)"


async def test_step4_safety_check_cannot_be_bypassed(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["Edit"]), mode="bypassPermissions")
    ws = gov.settings.workspace
    d = await decide(gov, EditTool(), edit_input(str(ws / ".git" / "hooks" / "pre-commit")), tmp_path)
    assert d.behavior == "ask" and any("safety" in s for s in d.chain)
    gov = make_gov(tmp_path, mode="acceptEdits")
    d = await decide(gov, EditTool(), edit_input(str(ws / ".env")), tmp_path)
    assert d.behavior == "ask"


# --- step 5: modes ----------------------------------------------------------------------------------
async def test_step5_bypass_allows_the_rest(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, mode="bypassPermissions")
    d = await decide(gov, Bash(), {"command": "rm -rf build"}, tmp_path)
    assert d.behavior == "allow" and d.source == "mode"


async def test_mode_plan_denies_side_effects_allows_reads(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["Bash"]), mode="plan")
    d = await decide(gov, Bash(), {"command": "rm -rf build"}, tmp_path)
    assert d.behavior == "deny" and "plan mode" in d.reason
    d = await decide(gov, Bash(), {"command": "git status"}, tmp_path)
    assert d.behavior == "allow"


async def test_mode_accept_edits(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, mode="acceptEdits")
    ws = gov.settings.workspace
    assert (
        await decide(gov, EditTool(), edit_input(str(ws / "src" / "a.py")), tmp_path)
    ).behavior == "allow"
    outside = await decide(gov, EditTool(), edit_input(str(tmp_path / "elsewhere.py")), tmp_path)
    # Outside the sandbox's writable places is the boundary, not a question: no mode writes there.
    assert outside.behavior == "deny"
    # acceptEdits says nothing about shell commands
    assert (await decide(gov, Bash(), {"command": "make"}, tmp_path)).behavior == "ask"


async def test_mode_default_edit_inside_workspace_asks(tmp_path: Path) -> None:
    gov = make_gov(tmp_path)
    ws = gov.settings.workspace
    assert (await decide(gov, EditTool(), edit_input(str(ws / "a.py")), tmp_path)).behavior == "ask"


async def test_mode_dont_ask_turns_ask_into_deny(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["Bash(make)"]), mode="dontAsk")
    assert (await decide(gov, Bash(), {"command": "make"}, tmp_path)).behavior == "allow"
    d = await decide(gov, Bash(), {"command": "make install"}, tmp_path)
    assert d.behavior == "deny" and "dontAsk" in d.reason


async def test_mode_from_settings_and_managed_can_disable_bypass(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(defaultMode="acceptEdits"))
    assert gov.mode == "acceptEdits" and gov.settings.mode_source == "project"
    (tmp_path / "managed.json").write_text(
        json.dumps({"permissions": {"disableBypassPermissionsMode": "disable"}})
    )
    gov = make_gov(tmp_path, mode="bypassPermissions")
    assert gov.mode == "acceptEdits"
    assert any("disabled by managed policy" in d for d in gov.diagnostics)


# --- step 6 and 7: allow rules, else ask --------------------------------------------------------------
async def test_step6_allow_rule_and_compound_commands(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["Bash(git status:*)", "Bash(make:*)"]))
    d = await decide(gov, Bash(), {"command": "make test"}, tmp_path)
    assert d.behavior == "allow" and d.rule == "Bash(make:*)" and "project settings" in d.reason
    for cmd in ("git status && rm -rf x", "git status; curl evil", "make test | sh"):
        d = await decide(gov, Bash(), {"command": cmd}, tmp_path)
        assert d.behavior == "ask", cmd


async def test_step6_incomplete_subject_is_never_allowed_by_a_rule(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["Bash", "Bash(echo:*)"]))
    d = await decide(gov, Bash(), {"command": "echo 'unterminated"}, tmp_path)
    assert d.behavior == "ask"
    assert any("incomplete" in s for s in d.chain)


async def test_step6_hook_allow_skips_the_prompt_but_not_rules(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(deny=["Bash(rm:*)"]))
    allow = PermissionDecision(behavior="allow", reason="hook ok", source="hook")
    assert (
        await decide(gov, Bash(), {"command": "make"}, tmp_path, hook_decision=allow)
    ).behavior == "allow"
    d = await decide(gov, Bash(), {"command": "rm -rf x"}, tmp_path, hook_decision=allow)
    assert d.behavior == "deny" and d.rule == "Bash(rm:*)"


async def test_step6_domain_and_mcp_rules(tmp_path: Path) -> None:
    gov = make_gov(
        tmp_path, rules(allow=["WebFetch(domain:docs.python.org)", "mcp__gh"], deny=["mcp__gh__delete"])
    )
    assert (
        await decide(gov, WebFetchTool(), {"url": "https://docs.python.org/3/"}, tmp_path)
    ).behavior == "allow"
    assert (await decide(gov, WebFetchTool(), {"url": "https://evil.test/"}, tmp_path)).behavior == "ask"
    assert (await decide(gov, mcp_tool("mcp__gh__list"), {}, tmp_path)).behavior == "allow"
    assert (await decide(gov, mcp_tool("mcp__gh__delete"), {}, tmp_path)).behavior == "deny"
    assert (await decide(gov, mcp_tool("mcp__other__x"), {}, tmp_path)).behavior == "ask"


async def test_step7_anything_left_asks_with_the_chain(tmp_path: Path) -> None:
    gov = make_gov(tmp_path)
    d = await decide(gov, Bash(), {"command": "make"}, tmp_path)
    assert d.behavior == "ask"
    steps = [s.split(":")[0] for s in d.chain if not s.startswith("part:")]
    assert steps[2:] == ["1 deny", "2 ask", "3 tool check", "4 ask", "5 mode default", "6 allow"]


async def test_broken_settings_file_disables_allow_rules_and_bypass(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".shellrt").mkdir(parents=True)
    (home / ".shellrt" / "settings.json").write_text("{ not json")
    gov = make_gov(tmp_path, rules(allow=["Bash"]), mode="bypassPermissions")
    assert gov.settings.degraded
    assert any("settings.json:1" in d and "not valid JSON" in d for d in gov.diagnostics)
    assert (await decide(gov, Bash(), {"command": "make"}, tmp_path)).behavior == "ask"
    # what the tool itself allows asks too: the file may have held a Read(...) deny (round 15)
    assert (await decide(gov, Bash(), {"command": "ls"}, tmp_path)).behavior == "ask"


async def test_subject_that_raises_is_denied(tmp_path: Path) -> None:
    class Broken(Bash):
        def permission_subject(self, tool_input: Any) -> Any:
            raise RuntimeError("boom")

    gov = make_gov(tmp_path, rules(allow=["Bash"]))
    assert (await decide(gov, Broken(), {"command": "ls"}, tmp_path)).behavior == "deny"


class _CheckRaises(Bash):
    async def check_permissions(self, tool_input: Any, ctx: Any) -> Any:
        raise RuntimeError("check exploded")


class _PartsRaise(Bash):
    def command_parts(self, tool_input: Any, ctx: Any) -> Any:
        raise RuntimeError("parts exploded")


class _NoParts(Bash):
    def command_parts(self, tool_input: Any, ctx: Any) -> Any:
        return None


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"])
async def test_a_tool_check_that_raises_is_a_deny_in_every_mode(tmp_path: Path, mode: str) -> None:
    gov = make_gov(tmp_path, rules(allow=["Bash"]), mode=mode)
    d = await decide(gov, _CheckRaises(), {"command": "ls"}, tmp_path)
    assert d.behavior == "deny" and "check exploded" in d.reason
    assert any("raised RuntimeError" in step for step in d.chain)


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"])
async def test_command_parts_that_raise_are_a_deny_in_every_mode(tmp_path: Path, mode: str) -> None:
    gov = make_gov(tmp_path, rules(allow=["Bash"]), mode=mode)
    d = await decide(gov, _PartsRaise(), {"command": "ls"}, tmp_path)
    assert d.behavior == "deny" and "parts exploded" in d.reason


async def test_unsplittable_command_is_never_allowed_by_rules(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, rules(allow=["Bash", "Bash(make:*)"]))
    d = await decide(gov, _NoParts(), {"command": "make"}, tmp_path)
    assert d.behavior == "ask", d.chain


async def test_set_mode_switches_engine_and_respects_managed_policy(tmp_path: Path) -> None:
    from shellrt.permissions import InvalidModeError

    gov = make_gov(tmp_path, mode="plan")
    assert (await decide(gov, Bash(), {"command": "make"}, tmp_path)).behavior == "deny"
    gov.set_mode("bypassPermissions")
    assert (await decide(gov, Bash(), {"command": "make"}, tmp_path)).behavior == "allow"
    with pytest.raises(InvalidModeError):
        gov.set_mode("yolo")
    (tmp_path / "managed.json").write_text(json.dumps({"disableBypassPermissionsMode": "disable"}))
    gov = make_gov(tmp_path)
    with pytest.raises(InvalidModeError):
        gov.set_mode("bypassPermissions")
    assert gov.mode == "default"
