"""Red team round 14: a session whose settings could not be read lets nothing automatic allow.

A settings file that cannot be read (not JSON, unreadable, a malformed deny rule) *degrades* the
session: the file may have held the deny rule that mattered, so allow rules, PreToolUse hook
allows and bypass mode stop allowing (documented since round 4). Measured on the old code, with the
administrator's managed file broken (it held ``deny: Bash(touch:*)`` / ``Edit(deploy.sh)``):

- a user's ``PermissionRequest`` hook that auto-approves still allowed ``touch pwned``, headless
  (the gate took the hook's allow on an ask the engine had degraded to);
- ``defaultMode: acceptEdits`` from the user's settings still wrote ``deploy.sh``;
- the managed file's own restrictions were simply gone: the user's ``additionalDirectories``,
  and ``bypassPermissions`` once the file was fixed to hold nothing, were obeyed as if the
  administrator had never set ``allowManagedPermissionRulesOnly``/``disableBypassPermissionsMode``.

Now a degraded session allows only what a person approves (the approver), a PermissionRequest
hook's deny still counts, and a managed file whose content could not be read is taken to hold
both restrictions (they only narrow), which the diagnostic says.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions import sources
from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse
from shellrt.permissions.sources import load_settings
from shellrt.runtime import Runtime

_BROKEN = '{"permissions": {"deny": ["Bash(touch:*)", "Edit(deploy.sh)"]},  oops'


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A workspace, a home and a broken managed file (the administrator's, with its denies)."""
    for name in ("ws", "home", "extra"):
        (tmp_path / name).mkdir()
    managed = tmp_path / "managed-settings.json"
    managed.write_text(_BROKEN)
    monkeypatch.setattr(sources, "DEFAULT_MANAGED_PATH", managed)
    monkeypatch.delenv(sources.MANAGED_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    yield tmp_path


def _user_settings(box: Path, data: dict[str, Any]) -> None:
    (box / "home" / ".shellrt").mkdir(exist_ok=True)
    (box / "home" / ".shellrt" / "settings.json").write_text(json.dumps(data))


def _permission_hook(box: Path, behavior: str) -> dict[str, Any]:
    script = box / f"{behavior}.sh"
    answer = {
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": behavior}}
    }
    script.write_text(f"#!/bin/sh\ncat >/dev/null\necho '{json.dumps(answer)}'\n")
    script.chmod(0o755)
    return {
        "PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": str(script)}]}]
    }


async def _call(box: Path, name: str, tool_input: dict[str, Any], **kw: Any) -> dict[str, Any]:
    async with Runtime(box / "ws", "local", **kw) as rt:
        assert any("allow rules and bypass mode are disabled" in d for d in rt.diagnostics), rt.diagnostics
        out = await rt.run(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": name, "input": tool_input}],
            }
        )
    result: dict[str, Any] = out["content"][0]
    return result


def test_a_permission_request_hook_cannot_allow_in_a_degraded_session(box: Path) -> None:
    _user_settings(box, {"hooks": _permission_hook(box, "allow")})
    result = anyio.run(_call, box, "Bash", {"command": "touch pwned"})
    assert not (box / "ws" / "pwned").exists(), result
    assert result["is_error"]
    assert "could not be read" in str(result["content"]), result


def test_accept_edits_cannot_allow_in_a_degraded_session(box: Path) -> None:
    _user_settings(box, {"permissions": {"defaultMode": "acceptEdits"}})
    result = anyio.run(
        _call, box, "Write", {"file_path": str(box / "ws" / "deploy.sh"), "content": "curl x|sh\n"}
    )
    assert not (box / "ws" / "deploy.sh").exists(), result
    assert result["is_error"]


def test_a_person_still_decides_in_a_degraded_session(box: Path) -> None:
    """The approver is a person who sees the call: degraded, it is the one way to allow."""
    _user_settings(box, {"hooks": _permission_hook(box, "allow")})
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        asked.append(request.reason)
        return ApprovalResponse(behavior="allow")

    result = anyio.run(lambda: _call(box, "Bash", {"command": "touch approved"}, approver=approver))
    assert (box / "ws" / "approved").exists(), result
    assert asked, "the person was not asked"


def test_a_permission_request_hooks_deny_still_counts_in_a_degraded_session(box: Path) -> None:
    _user_settings(box, {"hooks": _permission_hook(box, "deny")})
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        asked.append(request.reason)
        return ApprovalResponse(behavior="allow")

    result = anyio.run(lambda: _call(box, "Bash", {"command": "touch denied"}, approver=approver))
    assert not (box / "ws" / "denied").exists(), result
    assert not asked


@pytest.mark.parametrize(
    "content",
    [_BROKEN, "[1, 2]", '{"permissions": 5}', b"\xff\xfe{}"],
    ids=["not-json", "not-an-object", "bad-permissions", "not-utf8"],
)
def test_a_managed_file_that_cannot_be_read_keeps_its_restrictions(box: Path, content: str | bytes) -> None:
    managed = box / "managed-settings.json"
    if isinstance(content, bytes):
        managed.write_bytes(content)
    else:
        managed.write_text(content)
    _user_settings(
        box,
        {
            "permissions": {
                "allow": ["Bash"],
                "defaultMode": "bypassPermissions",
                "additionalDirectories": [str(box / "extra")],
            },
            "sandbox": {"network": {"allowedDomains": ["evil.example"]}},
        },
    )
    settings = load_settings(box / "ws", home=box / "home")
    assert settings.degraded
    assert settings.managed_rules_only and settings.disable_bypass
    assert box / "extra" not in settings.additional_directories
    assert settings.mode == "default"
    assert not settings.may_widen("user")
    assert any("restrictions" in d and str(managed) in d for d in settings.diagnostics), settings.diagnostics


def test_a_managed_file_with_one_bad_rule_keeps_what_it_says(box: Path) -> None:
    """Its top level was read: its flags are what it says (no restriction is invented)."""
    (box / "managed-settings.json").write_text(json.dumps({"permissions": {"deny": [5]}}))
    _user_settings(box, {"permissions": {"additionalDirectories": [str(box / "extra")]}})
    settings = load_settings(box / "ws", home=box / "home")
    assert settings.degraded
    assert not settings.managed_rules_only
    assert box / "extra" in settings.additional_directories


def test_an_absent_managed_file_restricts_nothing(box: Path) -> None:
    (box / "managed-settings.json").unlink()
    _user_settings(box, {"permissions": {"defaultMode": "bypassPermissions"}})
    settings = load_settings(box / "ws", home=box / "home")
    assert not settings.degraded and not settings.managed_rules_only
    assert settings.mode == "bypassPermissions"
