"""``"onFailure": "block"``: a guard hook that cannot answer blocks the call (as in Claude Code).

A PreToolUse hook that timed out, crashed, could not start or printed no valid answer counted
as no answer, so a model that made a guard fail (a huge input it must parse) had the call run
without it. A hook marked ``"onFailure": "block"`` (Claude Code's name) now denies instead,
with a reason naming the hook and what went wrong; so does such a hook skipped because its
trusted files changed, and a PermissionRequest guard. Without the key nothing changes (the
hook is only a notice). Real hooks, real commands on the local backend.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions import callback_approver
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._governance import envelope_text, isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()

#: Hook commands that fail to answer, each a different way.
FAILING = {
    "timeout": f"{sys.executable} -c 'import time; time.sleep(30)'",
    "crash": f"{sys.executable} -c 'raise SystemExit(3)'",
    "missing": "/nonexistent/shellrt-guard-hook",
    "garbage": "echo 'not json {'",
}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


def _hook(command: str, **extra: Any) -> dict[str, Any]:
    return {"type": "command", "command": command, "timeout": 1, **extra}


def _settings(ws: Path, event: str, hook: dict[str, Any]) -> Path:
    path = ws.parent / f"operator{next(_ids)}.json"
    path.write_text(json.dumps({"hooks": {event: [{"matcher": "Bash", "hooks": [hook]}]}}))
    return path


async def _touch(ws: Path, name: str, settings: Path, **kw: Any) -> tuple[bool, str, list[str]]:
    async with shellrt.Runtime(
        ws, "local", session_dir=ws.parent / f"s{next(_ids)}", tools=[Bash()], settings_files=[settings], **kw
    ) as rt:
        [envelope] = await rt.run_envelopes(
            [ToolUseBlock(id=f"g8f{next(_ids)}", name="Bash", input={"command": f"touch {name}"})]
        )
        return envelope.is_error, envelope_text(envelope), list(rt.diagnostics)


@pytest.mark.parametrize("how", sorted(FAILING))
async def test_a_failing_guard_marked_block_denies(ws: Path, how: str) -> None:
    settings = _settings(ws, "PreToolUse", _hook(FAILING[how], onFailure="block"))
    failed, text, _ = await _touch(ws, "guarded", settings, mode="bypassPermissions")
    assert failed and not (ws / "guarded").exists(), text
    assert 'onFailure is "block"' in text and "did not answer" in text, text


@pytest.mark.parametrize("how", ["timeout", "crash"])
async def test_without_the_key_a_failing_hook_is_still_no_answer(ws: Path, how: str) -> None:
    settings = _settings(ws, "PreToolUse", _hook(FAILING[how]))
    failed, text, _ = await _touch(ws, "unguarded", settings, mode="bypassPermissions")
    assert not failed and (ws / "unguarded").exists(), text


async def test_a_hook_that_answers_is_obeyed_as_before(ws: Path) -> None:
    settings = _settings(ws, "PreToolUse", _hook("true", onFailure="block"))
    failed, text, _ = await _touch(ws, "answered", settings, mode="bypassPermissions")
    assert not failed and (ws / "answered").exists(), text


async def test_an_unknown_on_failure_value_keeps_the_hook_and_blocks(ws: Path) -> None:
    settings = _settings(ws, "PreToolUse", _hook(FAILING["crash"], onFailure="deny"))
    failed, text, diagnostics = await _touch(ws, "typo", settings, mode="bypassPermissions")
    assert failed and not (ws / "typo").exists(), text
    assert any("onFailure 'deny'" in d and "treated as 'block'" in d for d in diagnostics), diagnostics


async def test_a_permission_request_guard_that_fails_denies(ws: Path) -> None:
    settings = _settings(ws, "PermissionRequest", _hook(FAILING["crash"], onFailure="block"))
    approve = callback_approver(lambda request: True)
    failed, text, _ = await _touch(ws, "asked", settings, mode="default", approver=approve)
    assert failed and not (ws / "asked").exists(), text
    # the same hook without the key leaves the question to the approver, who allows
    settings = _settings(ws, "PermissionRequest", _hook(FAILING["crash"]))
    failed, text, _ = await _touch(ws, "asked", settings, mode="default", approver=approve)
    assert not failed and (ws / "asked").exists(), text


async def test_a_guard_skipped_because_its_trusted_script_changed_blocks(ws: Path) -> None:
    (ws / "scripts").mkdir()
    (ws / "scripts" / "guard.sh").write_text("#!/bin/sh\nexit 0\n")
    (ws / ".shellrt").mkdir()
    hook = _hook("sh scripts/guard.sh", onFailure="block")
    (ws / ".shellrt" / "settings.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}})
    )
    async with shellrt.Runtime(
        ws,
        "local",
        session_dir=ws.parent / f"s{next(_ids)}",
        tools=[Bash()],
        trust_workspace=True,
        mode="bypassPermissions",
    ) as rt:
        blocks = [
            ToolUseBlock(id=f"g8f{next(_ids)}", name="Bash", input={"command": c})
            for c in ("true", "touch after-change")
        ]
        results = [(await rt.run_envelopes([blocks[0]]))[0]]
        # Changed outside any command (since round 17 a command's change of a hook's file is
        # refused or reverted): the guard is skipped as changed, and that blocks.
        with (ws / "scripts" / "guard.sh").open("a") as fh:
            fh.write("exit 0 # changed\n")
        results.append((await rt.run_envelopes([blocks[1]]))[0])
    assert not results[0].is_error, envelope_text(results[0])
    assert results[1].is_error and not (ws / "after-change").exists(), envelope_text(results[1])
    assert "changed since the session started" in envelope_text(results[1])


async def test_a_command_configured_twice_is_a_guard_when_either_entry_says_so(ws: Path) -> None:
    """Duplicates run once; a lower source's plain entry must not void the operator's ``block``."""
    (ws / ".shellrt").mkdir()
    plain = {"matcher": "Bash", "hooks": [_hook(FAILING["crash"])]}
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [plain]}}))
    user = ws.parent / "home" / ".shellrt" / "settings.json"
    user.parent.mkdir(parents=True)
    guard = {"matcher": "Bash", "hooks": [_hook(FAILING["crash"], onFailure="block")]}
    user.write_text(json.dumps({"hooks": {"PreToolUse": [guard]}}))
    async with shellrt.Runtime(
        ws,
        "local",
        session_dir=ws.parent / f"s{next(_ids)}",
        tools=[Bash()],
        trust_workspace=True,
        mode="bypassPermissions",
    ) as rt:
        [envelope] = await rt.run_envelopes(
            [ToolUseBlock(id=f"g8f{next(_ids)}", name="Bash", input={"command": "touch twice"})]
        )
    assert envelope.is_error and not (ws / "twice").exists(), envelope_text(envelope)
