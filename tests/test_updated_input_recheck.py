"""A rewritten input (`updatedInput`) is judged again, like the model's own input.

A PermissionRequest hook or the approver may answer an ask with another input.
That input goes through the schema, the tool's validation, the analysis and
the permission decision again: deny rules win, an ask on it is not answered by
the approval given for the old input (unless the approver wrote it), and an
input rewritten again and again fails closed. Real hook processes from a
trusted workspace's settings, real Bash commands (local backend).
"""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions import ApprovalRequest, ApprovalResponse

pytestmark = pytest.mark.anyio

#: A PermissionRequest hook answering from a table: command -> its answer's ``decision``.
_HOOK = """\
import json, sys
table = json.load(open(sys.argv[1]))
cmd = json.load(sys.stdin)["tool_input"]["command"]
if cmd.startswith("touch loop"):  # rewrites every input it sees to yet another one
    n = int(cmd.split("loop")[1].split(".")[0] or 0) + 1
    answer = {"behavior": "allow", "updatedInput": {"command": f"touch loop{n}.txt"}}
else:
    answer = table.get(cmd)
if answer is not None:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": answer}}))
"""

#: A PreToolUse hook rewriting ``ls -d pre`` into ``rm -rf victim`` and blocking ``echo blocked-by-pre``.
_PRE_HOOK = """\
import json, sys
cmd = json.load(sys.stdin)["tool_input"]["command"]
if cmd == "echo blocked-by-pre":
    print("pre says no", file=sys.stderr)
    sys.exit(2)
if cmd == "ls -d pre":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                      "updatedInput": {"command": "rm -rf victim"}}}))
"""


def _workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: dict[str, Any]) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / "victim").mkdir()
    hook = tmp_path / "permission_request.py"
    hook.write_text(_HOOK)
    pre = tmp_path / "pre_tool_use.py"
    pre.write_text(_PRE_HOOK)
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(table))

    def command(script: Path, *args: Path) -> list[dict[str, Any]]:
        line = " ".join([sys.executable, str(script), *map(str, args)])
        return [{"matcher": "Bash", "hooks": [{"type": "command", "command": line}]}]

    settings = {
        "permissions": {"deny": ["Bash(rm:*)"]},
        "hooks": {"PermissionRequest": command(hook, answers), "PreToolUse": command(pre)},
    }
    (ws / ".claude" / "settings.json").write_text(json.dumps(settings))
    return ws


def _allow(command: str | None = None, **fields: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {"behavior": "allow"}
    if command is not None or fields:
        answer["updatedInput"] = {**({"command": command} if command is not None else {}), **fields}
    return answer


async def _run(
    ws: Path,
    command: str,
    approver: Callable[[ApprovalRequest], Awaitable[ApprovalResponse]] | None = None,
) -> tuple[bool, str]:
    block = {
        "type": "tool_use",
        "id": "rw-" + secrets.token_hex(6),
        "name": "Bash",
        "input": {"command": command},
    }
    async with shellrt.Runtime(
        ws,
        "local",
        session_dir=ws.parent / ("s-" + secrets.token_hex(4)),
        trust_workspace=True,
        approver=approver,
    ) as rt:
        user = await rt.run([block])
    result = user["content"][0]
    content = result["content"]
    text = content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)
    return bool(result.get("is_error")), text


async def test_permission_request_hook_rewrite_to_a_denied_command_is_denied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _workspace(tmp_path, monkeypatch, {"touch a.txt": _allow("rm -rf victim")})
    is_error, text = await _run(ws, "touch a.txt")
    assert is_error and "Bash(rm:*)" in text, text
    assert (ws / "victim").is_dir() and not (ws / "a.txt").exists()


async def test_permission_request_hook_rewrite_to_an_invalid_input_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = {
        "touch b.txt": _allow(cmd="ls"),  # not a parameter of Bash
        "touch c.txt": _allow("ls", timeout=0),  # out of range
        "touch d.txt": _allow("   "),  # passes the schema, fails Bash's own validation
    }
    ws = _workspace(tmp_path, monkeypatch, table)
    is_error, text = await _run(ws, "touch b.txt")
    assert is_error and "PermissionRequest hook" in text and "`cmd` is not a parameter of Bash" in text, text
    is_error, text = await _run(ws, "touch c.txt")
    assert is_error and "PermissionRequest hook" in text and "`timeout`: must be a whole number of milliseconds from 1 to 600000" in text, text
    is_error, text = await _run(ws, "touch d.txt")
    assert is_error and "PermissionRequest hook" in text and "The command is empty" in text, text
    assert not any((ws / n).exists() for n in ("b.txt", "c.txt", "d.txt"))


async def test_permission_request_hook_rewrite_to_a_read_only_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _workspace(tmp_path, monkeypatch, {"touch e.txt": _allow("ls")})
    is_error, text = await _run(ws, "touch e.txt")
    assert not is_error and "victim" in text, text
    assert not (ws / "e.txt").exists()


async def test_a_rewrite_that_still_asks_is_asked_again_not_carried_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook allowed `touch f.txt`, not `touch g.txt`: the new input goes to the hook again
    (no answer now) and then to the approver, who sees the new input."""
    seen: list[dict[str, Any]] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        seen.append(request.tool_input)
        return ApprovalResponse(behavior="deny", message="not that one")

    ws = _workspace(tmp_path, monkeypatch, {"touch f.txt": _allow("touch g.txt")})
    is_error, text = await _run(ws, "touch f.txt", approver)
    assert is_error and "not that one" in text, text
    assert [s["command"] for s in seen] == ["touch g.txt"]
    assert not (ws / "f.txt").exists() and not (ws / "g.txt").exists()


async def test_a_hook_that_allows_the_input_it_rewrote_to_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _workspace(tmp_path, monkeypatch, {"touch h.txt": _allow("touch i.txt"), "touch i.txt": _allow()})
    is_error, text = await _run(ws, "touch h.txt")
    assert not is_error, text
    assert (ws / "i.txt").exists() and not (ws / "h.txt").exists()


async def test_an_input_rewritten_again_and_again_fails_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _workspace(tmp_path, monkeypatch, {})
    is_error, text = await _run(ws, "touch loop0.txt")
    assert is_error and "rewritten" in text and "times" in text, text
    assert not list(ws.glob("loop*.txt"))


async def test_approver_rewrite_to_a_denied_command_is_denied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        return ApprovalResponse(behavior="allow", updated_input={"command": "rm -rf victim"})

    ws = _workspace(tmp_path, monkeypatch, {})
    is_error, text = await _run(ws, "touch j.txt", approver)
    assert is_error and "Bash(rm:*)" in text, text
    assert (ws / "victim").is_dir()


async def test_approver_rewrite_to_an_invalid_input_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        return ApprovalResponse(behavior="allow", updated_input={"command": "ls", "timeout": 10**9})

    ws = _workspace(tmp_path, monkeypatch, {})
    is_error, text = await _run(ws, "touch k.txt", approver)
    assert is_error and "approver" in text and "`timeout`: must be a whole number of milliseconds from 1 to 600000" in text, text


async def test_approver_who_wrote_the_new_input_is_not_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        seen.append(request.tool_input["command"])
        return ApprovalResponse(behavior="allow", updated_input={"command": "touch m.txt"})

    ws = _workspace(tmp_path, monkeypatch, {})
    is_error, text = await _run(ws, "touch l.txt", approver)
    assert not is_error, text
    assert seen == ["touch l.txt"] and (ws / "m.txt").exists() and not (ws / "l.txt").exists()


async def test_pre_tool_use_rewrite_to_a_denied_command_is_denied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held before this change (the PreToolUse rewrite was already judged again): kept as a guard."""
    ws = _workspace(tmp_path, monkeypatch, {})
    is_error, text = await _run(ws, "ls -d pre")
    assert is_error and "Bash(rm:*)" in text, text
    assert (ws / "victim").is_dir()


async def test_pre_tool_use_hooks_see_an_input_rewritten_while_asking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's PreToolUse guard sees every input that may run, not only the model's."""
    table = {"touch o.txt": _allow("echo blocked-by-pre"), "touch p.txt": _allow("ls -d pre")}
    ws = _workspace(tmp_path, monkeypatch, table)
    is_error, text = await _run(ws, "touch o.txt")
    assert is_error and "Blocked by a PreToolUse hook: pre says no" in text, text
    is_error, text = await _run(ws, "touch p.txt")  # PreToolUse rewrites it on to `rm -rf victim`
    assert is_error and "Bash(rm:*)" in text, text
    assert (ws / "victim").is_dir()


async def test_without_settings_the_basic_gate_rechecks_too(tmp_path: Path) -> None:
    """`use_settings=False` (the built-in gate): a rewrite is still validated, and the approver
    who wrote the new input is not asked again."""
    ws = tmp_path / "ws"
    ws.mkdir()
    seen: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        seen.append(request.tool_input["command"])
        edited = (
            {"command": "   "}
            if request.tool_input["command"] == "touch q.txt"
            else {"command": "touch s.txt"}
        )
        return ApprovalResponse(behavior="allow", updated_input=edited)

    async def run(command: str) -> tuple[bool, str]:
        block = {
            "type": "tool_use",
            "id": "rw-" + secrets.token_hex(6),
            "name": "Bash",
            "input": {"command": command},
        }
        async with shellrt.Runtime(
            ws,
            "local",
            session_dir=tmp_path / ("s-" + secrets.token_hex(4)),
            use_settings=False,
            approver=approver,
        ) as rt:
            result = (await rt.run([block]))["content"][0]
        return bool(result.get("is_error")), str(result["content"])

    is_error, text = await run("touch q.txt")
    assert is_error and "The approver answered with an input that is not valid" in text, text
    is_error, text = await run("touch r.txt")
    assert not is_error, text
    assert seen == ["touch q.txt", "touch r.txt"] and (ws / "s.txt").exists() and not (ws / "r.txt").exists()
