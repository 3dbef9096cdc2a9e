"""Asking: approvers, PermissionRequest hooks, headless deny, remembered rules, tool visibility."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shellrt.permissions import (
    ApprovalRequest,
    ApprovalResponse,
    Governance,
    TerminalApprover,
    build_governance,
    callback_approver,
)
from shellrt.protocol import Tool

from .test_permissions_support import Bash, EditTool, ReadTool, Refuser, make_ctx, mcp_tool

pytestmark = pytest.mark.anyio


def make_gov(tmp_path: Path, settings: dict[str, Any] | None = None, **kw: Any) -> Governance:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True, exist_ok=True)
    if settings is not None:
        (ws / ".shellrt" / "settings.json").write_text(json.dumps(settings, indent=2))
    kw.setdefault("trust_workspace", True)  # these tests are about the gate, not workspace trust
    return build_governance(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", **kw)


async def authorize(gov: Governance, tool: Any, raw: dict[str, Any], tmp_path: Path) -> Any:
    return await gov.gate.authorize(tool, tool.parse_input(raw), make_ctx(gov.settings.workspace, tmp_path))


async def test_headless_ask_becomes_deny(tmp_path: Path) -> None:
    gov = make_gov(tmp_path)
    d = await authorize(gov, Bash(), {"command": "make"}, tmp_path)
    assert d.behavior == "deny" and "headless" in d.reason
    assert d.chain[-1] == "approver: none (headless) -> deny"


async def test_headless_permission_request_hook_gets_a_chance(tmp_path: Path) -> None:
    hook = tmp_path / "pr.sh"
    hook.write_text(
        "#!/bin/sh\ncat > /dev/null\n"
        'echo \'{"hookSpecificOutput": {"hookEventName": "PermissionRequest", '
        '"decision": {"behavior": "allow", "updatedInput": {"command": "make -n"}}}}\'\n'
    )
    hook.chmod(0o755)
    hooks = {"PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": str(hook)}]}]}
    gov = make_gov(tmp_path, {"hooks": hooks})
    d = await authorize(gov, Bash(), {"command": "make"}, tmp_path)
    assert d.behavior == "allow" and d.updated_input == {"command": "make -n"} and d.source == "hook"
    # the hook is only asked about asks: a deny rule is never handed to it
    gov = make_gov(tmp_path, {"hooks": hooks, "permissions": {"deny": ["Bash(make:*)"]}})
    assert (await authorize(gov, Bash(), {"command": "make"}, tmp_path)).behavior == "deny"


async def test_permission_request_hook_exit_2_denies_even_with_an_approver(tmp_path: Path) -> None:
    hook = tmp_path / "no.sh"
    hook.write_text("#!/bin/sh\necho 'not on fridays' >&2\nexit 2\n")
    hook.chmod(0o755)
    asked: list[ApprovalRequest] = []

    async def approver(req: ApprovalRequest) -> ApprovalResponse:
        asked.append(req)
        return ApprovalResponse(behavior="allow")

    hooks = {"PermissionRequest": [{"matcher": "", "hooks": [{"type": "command", "command": str(hook)}]}]}
    gov = make_gov(tmp_path, {"hooks": hooks}, approver=approver)
    d = await authorize(gov, Bash(), {"command": "make"}, tmp_path)
    assert d.behavior == "deny" and d.reason == "not on fridays" and asked == []


async def test_approver_allow_once_and_deny_with_message(tmp_path: Path) -> None:
    answers: Iterator[bool | ApprovalResponse] = iter(
        [True, ApprovalResponse(behavior="deny", message="use `make test`")]
    )
    seen: list[ApprovalRequest] = []

    def approve(req: ApprovalRequest) -> bool | ApprovalResponse:
        seen.append(req)
        return next(answers)

    gov = make_gov(tmp_path, approver=callback_approver(approve))
    assert (await authorize(gov, Bash(), {"command": "make"}, tmp_path)).behavior == "allow"
    assert seen[0].suggested_rules == ["Bash(make)"] and seen[0].tool_input["command"] == "make"
    d = await authorize(gov, Bash(), {"command": "make"}, tmp_path)
    assert d.behavior == "deny" and d.reason == "use `make test`"


async def test_approver_edits_input(tmp_path: Path) -> None:
    async def approve(req: ApprovalRequest) -> ApprovalResponse:
        return ApprovalResponse(behavior="allow", updated_input={"command": "make -n"})

    gov = make_gov(tmp_path, approver=approve)
    d = await authorize(gov, Bash(), {"command": "make"}, tmp_path)
    assert d.behavior == "allow" and d.updated_input == {"command": "make -n"}


async def test_approver_that_raises_denies(tmp_path: Path) -> None:
    def approve(req: ApprovalRequest) -> bool:
        raise RuntimeError("ui crashed")

    gov = make_gov(tmp_path, approver=callback_approver(approve))
    d = await authorize(gov, Bash(), {"command": "make"}, tmp_path)
    assert d.behavior == "deny" and "ui crashed" in d.reason


async def test_remember_for_session(tmp_path: Path) -> None:
    calls = 0

    async def approve(req: ApprovalRequest) -> ApprovalResponse:
        nonlocal calls
        calls += 1
        return ApprovalResponse(behavior="allow", remember="session")

    gov = make_gov(tmp_path, approver=approve)
    for _ in range(3):
        assert (await authorize(gov, Bash(), {"command": "make build"}, tmp_path)).behavior == "allow"
    assert calls == 1
    d = await gov.engine.decide(
        Bash(),
        Bash().parse_input({"command": "make build"}),
        make_ctx(gov.settings.workspace, tmp_path),
    )
    assert d.rule == "Bash(make build)" and d.source == "session settings"
    # the remembered exact rule never covers a compound command
    await authorize(gov, Bash(), {"command": "make build && rm -rf /"}, tmp_path)
    assert calls == 2
    assert not (gov.settings.workspace / ".shellrt" / "settings.local.json").exists()


async def test_remember_for_project_writes_local_settings(tmp_path: Path) -> None:
    async def approve(req: ApprovalRequest) -> ApprovalResponse:
        return ApprovalResponse(behavior="allow", remember="project")

    local = tmp_path / "ws" / ".shellrt" / "settings.local.json"
    local.parent.mkdir(parents=True)
    local.write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}, "env": {"A": "1"}}))
    gov = make_gov(tmp_path, approver=approve)  # the file as the session found it is added to
    assert (await authorize(gov, Bash(), {"command": "make"}, tmp_path)).behavior == "allow"
    saved = json.loads(local.read_text())
    assert saved["permissions"] == {"deny": ["Bash(rm:*)"], "allow": ["Bash(make)"]}
    assert saved["env"] == {"A": "1"}
    fresh = make_gov(tmp_path)  # a new session, headless: the saved rule applies
    d = await authorize(fresh, Bash(), {"command": "make"}, tmp_path)
    assert d.behavior == "allow" and "settings.local.json" in (d.source or "")


async def test_remember_project_never_adds_to_a_file_changed_during_the_session(tmp_path: Path) -> None:
    async def approve(req: ApprovalRequest) -> ApprovalResponse:
        return ApprovalResponse(behavior="allow", remember="project")

    gov = make_gov(tmp_path, approver=approve)
    local = gov.settings.workspace / ".shellrt" / "settings.local.json"
    local.write_text(json.dumps({"permissions": {"allow": ["Bash"]}}))  # e.g. a command planted it
    assert (await authorize(gov, Bash(), {"command": "make"}, tmp_path)).behavior == "allow"
    assert json.loads(local.read_text()) == {"permissions": {"allow": ["Bash"]}}
    assert any("changed since the session started" in d for d in gov.diagnostics)
    # The answer still holds for this session; a second one is refused the same way.
    assert (await authorize(gov, Bash(), {"command": "make"}, tmp_path)).behavior == "allow"


async def test_remember_project_twice_adds_to_what_shellrt_wrote(tmp_path: Path) -> None:
    async def approve(req: ApprovalRequest) -> ApprovalResponse:
        return ApprovalResponse(behavior="allow", remember="project")

    gov = make_gov(tmp_path, approver=approve)
    local = gov.settings.workspace / ".shellrt" / "settings.local.json"
    assert (await authorize(gov, Bash(), {"command": "make"}, tmp_path)).behavior == "allow"
    assert (await authorize(gov, Bash(), {"command": "make test"}, tmp_path)).behavior == "allow"
    assert json.loads(local.read_text())["permissions"]["allow"] == ["Bash(make)", "Bash(make test)"]


async def test_remember_project_with_broken_local_file_still_allows_once(tmp_path: Path) -> None:
    async def approve(req: ApprovalRequest) -> ApprovalResponse:
        return ApprovalResponse(behavior="allow", remember="project")

    local = tmp_path / "ws" / ".shellrt" / "settings.local.json"
    local.parent.mkdir(parents=True)
    local.write_text("{ broken")
    gov = make_gov(tmp_path, approver=approve)
    assert (await authorize(gov, Bash(), {"command": "make"}, tmp_path)).behavior == "allow"
    assert local.read_text() == "{ broken"
    assert any("not valid JSON; not overwriting" in d for d in gov.diagnostics)


async def test_terminal_approver_choices(tmp_path: Path) -> None:
    req = ApprovalRequest(
        tool_name="Bash",
        tool_input={"command": "make"},
        description="Bash(make)",
        reason="r",
        suggested_rules=["Bash(make)"],
    )
    out = io.StringIO()
    assert (await TerminalApprover(io.StringIO("y\n"), out)(req)).behavior == "allow"
    assert "Bash(make)" in out.getvalue()
    assert (await TerminalApprover(io.StringIO("p\n"), io.StringIO())(req)).remember == "project"
    assert (await TerminalApprover(io.StringIO("s\n"), io.StringIO())(req)).remember == "session"
    denied = await TerminalApprover(io.StringIO("n\nplease use make test\n"), io.StringIO())(req)
    assert denied.behavior == "deny" and denied.message == "please use make test"
    edited = await TerminalApprover(io.StringIO('e\nnot json\n{"command": "make -n"}\n'), io.StringIO())(req)
    assert edited.behavior == "allow" and edited.updated_input == {"command": "make -n"}
    assert (await TerminalApprover(io.StringIO(""), io.StringIO())(req)).behavior == "deny"
    assert (await TerminalApprover(io.StringIO("what\nhuh\nno way\n"), io.StringIO())(req)).behavior == "deny"


async def test_visibility_hides_tools_denied_outright_and_keeps_order(tmp_path: Path) -> None:
    gov = make_gov(tmp_path, {"permissions": {"deny": ["Edit", "mcp__gh", "Bash(rm:*)"]}})
    tools: list[Tool[Any, Any]] = [
        Bash(),
        EditTool(),
        ReadTool(),
        mcp_tool("mcp__gh__list"),
        mcp_tool("mcp__fs__read"),
        Refuser(),
    ]
    names = [t.name for t in gov.visible_tools(tools)]
    assert names == ["Bash", "Read", "mcp__fs__read", "Refuser"]
    assert names == [t.name for t in gov.visible_tools(tools)]
