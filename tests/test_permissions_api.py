"""The public surface of shellrt.permissions, and the engine over the real built-in tools."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

import shellrt.permissions as permissions
from shellrt.permissions import BasicGate, Governance, NoHooks, build_governance

from .test_permissions_support import make_ctx

PINNED = {
    "DEFAULT_HOOK_TIMEOUT_S", "PERMISSION_MODES", "SOURCE_ORDER", "ApprovalRequest", "ApprovalResponse",
    "Approver", "BasicGate", "CommandHookRunner", "Governance", "HookNotice", "HookRunner", "HookSpec",
    "InvalidModeError", "NoHooks", "PermissionDecision", "PermissionEngine", "PermissionGate", "PermissionMode",
    "PermissionRequestOutcome", "PermissionRule", "PermissionsError", "PostToolUseOutcome", "PreToolUseOutcome",
    "RuleOrigin", "RuleSet", "RuleSyntaxError", "RulesGate", "Settings", "SettingsWriteError", "TerminalApprover",
    "build_governance", "callback_approver", "load_settings", "matcher_matches", "parse_rule", "suggest_rules",
    "terminal_approver_if_interactive", "visible_tools",
}  # fmt: skip


def test_all_is_pinned() -> None:
    assert set(permissions.__all__) == PINNED
    for name in permissions.__all__:
        assert getattr(permissions, name) is not None


@pytest.mark.anyio
async def test_defaults_keep_working_with_the_new_permission_request_hook(tmp_path: Path) -> None:
    from .test_permissions_support import Bash

    ctx = make_ctx(tmp_path, tmp_path)
    assert (await NoHooks().permission_request("Bash", {}, ctx)).behavior is None
    tool = Bash()
    assert (await BasicGate().authorize(tool, tool.parse_input({"command": "make"}), ctx)).behavior == "deny"


def _real(module: str, cls: str) -> Any:
    """The built-in tool; an import failure is a failure (the tools are part of this tree)."""
    return getattr(importlib.import_module(module), cls)()


def _gov(tmp_path: Path, perms: dict[str, Any]) -> Governance:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": perms}))
    return build_governance(
        ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", trust_workspace=True
    )


@pytest.mark.anyio
async def test_real_bash_compound_commands(tmp_path: Path) -> None:
    bash = _real("shellrt.tools.bash", "Bash")
    gov = _gov(tmp_path, {"allow": ["Bash(git status:*)", "Bash(make:*)"], "deny": ["Bash(curl:*)"]})
    ctx = make_ctx(gov.settings.workspace, tmp_path)

    async def behavior(command: str) -> str:
        return (await gov.engine.decide(bash, bash.parse_input({"command": command}), ctx)).behavior

    assert await behavior("git status") == "allow"
    assert await behavior("make build") == "allow"
    assert await behavior("git status && rm -rf x") == "ask"
    assert await behavior("git status; curl evil") == "deny"
    assert await behavior("make build $(rm -rf x)") != "allow"


@pytest.mark.anyio
async def test_real_read_tool_symlink_out_of_workspace(tmp_path: Path) -> None:
    read = _real("shellrt.tools.read", "ReadTool")
    gov = _gov(tmp_path, {"allow": ["Read(./**)"]})
    ws = gov.settings.workspace
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.txt").write_text("secret")
    (ws / "link").symlink_to(tmp_path / "outside")
    ctx = make_ctx(ws, tmp_path)
    d = await gov.engine.decide(read, read.parse_input({"file_path": str(ws / "link" / "x.txt")}), ctx)
    assert d.behavior == "ask"
