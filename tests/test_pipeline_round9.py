"""Ninth pipeline round (issue 22 item 2): the hook-free call's short path keeps every behaviour.

A call to a tool with no hook configured skips the hook plumbing (no PreToolUse outcome to
read, no PostToolUse coroutine to await) and reads a remembered allow's request notices once.
These tests drive real Runtimes with real processes and real command hooks and prove that the
short path gives the same model result and the same audit (transcript call line) as the hooked
path, and that a hook added, a rule added, a mode switched or the cwd changed between two
identical calls takes effect on the very next one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.permissions.settings import HookSpec
from shellrt.runtime import Runtime

pytestmark = pytest.mark.anyio

#: Fields of a call line that differ between two sessions by nature (time, session paths).
_VOLATILE = ("ts", "elapsed_s")

COMMANDS = ["true", "true", "echo hi", "printf 'a\\nb\\n'", "false", "exit 3", "true"]


def _message(id_: str, command: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": id_, "name": "Bash", "input": {"command": command}}
    return {"role": "assistant", "content": [block]}


def _noop_hook(tmp_path: Path) -> str:
    """A real command hook that reads its payload, records that it ran, and answers nothing."""
    script = tmp_path / "noop_hook.py"
    log = tmp_path / "noop_hook.log"
    script.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        f"open({str(log)!r}, 'a').write(data['hook_event_name'] + '\\n')\n"
    )
    return f"{sys.executable} {script}"


def _spec(event: str, command: str) -> HookSpec:
    return HookSpec(event=event, matcher="Bash", command=command, timeout=None, origin=RuleOrigin("cli"))  # type: ignore[arg-type]


def _call_lines(rt: Runtime) -> list[dict[str, Any]]:
    lines = [json.loads(_normalised(x, rt)) for x in rt.transcript_path.read_text().splitlines()]
    calls = [x for x in lines if x.get("type") == "call"]
    for line in calls:
        for key in _VOLATILE:
            line.pop(key)
    return calls


def _normalised(text: Any, rt: Runtime) -> Any:
    """``text`` with this session's own directories named alike (two sessions are compared)."""
    if not isinstance(text, str):
        return text
    return text.replace(str(rt.session_dir), "<session>").replace(str(rt.workspace), "<ws>")


async def _run_all(rt: Runtime, prefix: str) -> list[Any]:
    replies = []
    for n, command in enumerate(COMMANDS):
        reply = await rt.run(_message(f"toolu_r9_{n}", command))
        [block] = reply["content"]
        replies.append({**block, "content": _normalised(block["content"], rt)})
    return replies


async def test_a_hook_free_call_gives_the_result_and_audit_of_a_hooked_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same commands (repeated ones answered from the remembered allow), one session without
    hooks and one whose Bash calls go through no-op PreToolUse, PostToolUse and
    PostToolUseFailure hooks: replies and transcript call lines are the same."""
    monkeypatch.setenv("HOME", str(tmp_path))
    hook = _noop_hook(tmp_path)
    out: dict[str, tuple[list[Any], list[dict[str, Any]]]] = {}
    for name in ("plain", "hooked"):
        ws = tmp_path / name / "ws"
        ws.mkdir(parents=True)
        async with Runtime(
            ws, "local", session_dir=tmp_path / name / "s", mode="bypassPermissions", use_settings=True
        ) as rt:
            if name == "hooked":
                rt.hooks.specs.extend(  # type: ignore[attr-defined]
                    _spec(e, hook) for e in ("PreToolUse", "PostToolUse", "PostToolUseFailure")
                )
            out[name] = (await _run_all(rt, name), _call_lines(rt))
    ran = (tmp_path / "noop_hook.log").read_text().split()
    # The hooked session really took the hooked path: one PreToolUse and one post hook per call.
    assert ran.count("PreToolUse") == len(COMMANDS)
    assert ran.count("PostToolUse") + ran.count("PostToolUseFailure") == len(COMMANDS)
    plain, hooked = out["plain"], out["hooked"]
    assert plain[0] == hooked[0]
    assert [x["is_error"] for x in plain[0]] == [False, False, False, False, True, True, False]
    assert plain[1] == hooked[1]
    assert all(line["decision"] == "allow" and line["chain"] and line["ran"] for line in plain[1])


async def test_a_hook_added_between_identical_calls_runs_on_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The short path is chosen per call: a PreToolUse hook added after two hook-free `true`s
    (the second answered from the remembered allow) blocks the third; a PostToolUse hook added
    then adds its context to the next result; both gone, the call is plain again."""
    monkeypatch.setenv("HOME", str(tmp_path))
    block = tmp_path / "block.py"
    block.write_text(
        "import json, sys\njson.load(sys.stdin)\nprint('no more true', file=sys.stderr)\nsys.exit(2)\n"
    )
    context = tmp_path / "context.py"
    context.write_text(
        "import json, sys\njson.load(sys.stdin)\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUse',"
        " 'additionalContext': 'POST-HOOK-SAW-IT'}}))\n"
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Runtime(
        ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions", use_settings=True
    ) as rt:
        specs: list[HookSpec] = rt.hooks.specs  # type: ignore[attr-defined]
        for n in range(2):
            [reply] = (await rt.run(_message(f"toolu_r9_h{n}", "true")))["content"]
            assert not reply["is_error"] and "POST-HOOK" not in reply["content"]
        specs.append(_spec("PreToolUse", f"{sys.executable} {block}"))
        [reply] = (await rt.run(_message("toolu_r9_h2", "true")))["content"]
        assert reply["is_error"] and "Blocked by a PreToolUse hook" in reply["content"]
        assert "no more true" in reply["content"]
        specs.clear()
        specs.append(_spec("PostToolUse", f"{sys.executable} {context}"))
        [reply] = (await rt.run(_message("toolu_r9_h3", "true")))["content"]
        assert not reply["is_error"] and "POST-HOOK-SAW-IT" in reply["content"]
        specs.clear()
        [reply] = (await rt.run(_message("toolu_r9_h4", "true")))["content"]
        assert not reply["is_error"] and "POST-HOOK" not in reply["content"]


async def test_a_rule_a_mode_and_the_cwd_changed_between_identical_calls_take_effect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between identical hook-free calls: a deny rule refuses the next one, its removal lets the
    next one run, a mode that refuses it refuses it at once, and a cwd changed by a `cd` is
    where the next identical `pwd` runs (and what its decision is keyed on)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    async with Runtime(
        ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions", use_settings=True
    ) as rt:
        ids = iter(range(100))

        async def run(command: str) -> dict[str, Any]:
            [reply] = (await rt.run(_message(f"toolu_r9_c{next(ids)}", command)))["content"]
            return dict(reply)

        for _ in range(2):
            assert not (await run("true"))["is_error"]
        rt.governance.engine.rules.add(parse_rule("Bash(true)", "deny"))
        denied = await run("true")
        assert denied["is_error"] and "Bash(true)" in denied["content"]
        rt.governance.engine.rules.rules.clear()
        assert not (await run("true"))["is_error"]
        assert not (await run("x=1 true"))["is_error"]
        rt.governance.set_mode("dontAsk")
        assert (await run("x=1 true"))["is_error"]  # not read-only: dontAsk refuses it at once
        rt.governance.set_mode("bypassPermissions")
        assert not (await run("x=1 true"))["is_error"]
        first = await run("pwd")
        assert first["content"].strip() == str(ws.resolve())
        assert not (await run("cd sub"))["is_error"]
        moved = await run("pwd")
        assert moved["content"].strip() == str((ws / "sub").resolve())
        lines = [json.loads(x) for x in rt.transcript_path.read_text().splitlines()]
        pwd_lines = [x for x in lines if x.get("type") == "call" and x["input"] == {"command": "pwd"}]
        assert [x["decision"] for x in pwd_lines] == ["allow", "allow"]
