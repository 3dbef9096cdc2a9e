"""Command hooks as real subprocesses: block, rewrite, allow vs deny rules, timeouts, garbage."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from shellrt.permissions import Governance, build_governance, matcher_matches

from .test_permissions_support import Bash, make_ctx

pytestmark = pytest.mark.anyio


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(body)
    path.chmod(0o755)
    return str(path)


def py_hook(tmp_path: Path, name: str, body: str) -> str:
    path = script(tmp_path, name, "import json, sys\n" + body)
    return f"{sys.executable} {path}"


def gov_with_hooks(
    tmp_path: Path, hooks: dict[str, Any], permissions: dict[str, Any] | None = None
) -> Governance:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True, exist_ok=True)
    (ws / ".shellrt" / "settings.json").write_text(
        json.dumps({"hooks": hooks, "permissions": permissions or {}}, indent=2)
    )
    return build_governance(
        ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", trust_workspace=True
    )


def pre(matcher: str, command: str, timeout: float | None = None) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        hook["timeout"] = timeout
    return {"matcher": matcher, "hooks": [hook]}


def test_matchers() -> None:
    assert matcher_matches("", "Bash") and matcher_matches("*", "Bash")
    assert matcher_matches("Bash", "Bash") and not matcher_matches("Bash", "BashX")
    assert matcher_matches("Edit|Write", "Write") and not matcher_matches("Edit|Write", "Read")
    assert matcher_matches("mcp__gh__.*", "mcp__gh__list") and not matcher_matches(
        "mcp__gh__.*", "mcp__x__list"
    )
    assert matcher_matches("Notebook.*", "NotebookEdit")


async def test_hook_gets_json_on_stdin(tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    hook = py_hook(tmp_path, "h.py", f"open({str(out)!r}, 'w').write(sys.stdin.read())\n")
    gov = gov_with_hooks(tmp_path, {"PreToolUse": [pre("Bash", hook)], "PostToolUse": [pre("Bash", hook)]})
    ctx = make_ctx(gov.settings.workspace, tmp_path)
    await gov.hooks.pre_tool_use("Bash", {"command": "ls"}, ctx)
    seen = json.loads(out.read_text())
    assert seen["hook_event_name"] == "PreToolUse" and seen["tool_name"] == "Bash"
    assert seen["tool_input"] == {"command": "ls"} and seen["session_id"] == "sess-1"
    assert seen["cwd"] == str(gov.settings.workspace)
    await gov.hooks.post_tool_use("Bash", {"command": "ls"}, {"stdout": "a"}, ctx, failed=False)
    seen = json.loads(out.read_text())
    assert seen["hook_event_name"] == "PostToolUse" and seen["tool_response"] == {"stdout": "a"}


async def test_exit_2_blocks_with_stderr(tmp_path: Path) -> None:
    hook = script(tmp_path, "block.sh", "#!/bin/sh\necho 'use the test script instead' >&2\nexit 2\n")
    gov = gov_with_hooks(tmp_path, {"PreToolUse": [pre("Bash", hook)]}, {"allow": ["Bash"]})
    ctx = make_ctx(gov.settings.workspace, tmp_path)
    out = await gov.hooks.pre_tool_use("Bash", {"command": "pytest"}, ctx)
    assert out.blocked_reason == "use the test script instead"
    assert out.decision is not None and out.decision.behavior == "deny"
    tool = Bash()
    d = await gov.gate.authorize(
        tool, tool.parse_input({"command": "pytest"}), ctx, hook_decision=out.decision
    )
    assert d.behavior == "deny"


async def test_hook_rewrites_input(tmp_path: Path) -> None:
    hook = py_hook(
        tmp_path,
        "rewrite.py",
        "data = json.load(sys.stdin)\n"
        "cmd = data['tool_input']['command'] + ' --dry-run'\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
        "'updatedInput': {'command': cmd}, 'additionalContext': 'rewritten'}}))\n",
    )
    gov = gov_with_hooks(tmp_path, {"PreToolUse": [pre("Bash", hook)]})
    out = await gov.hooks.pre_tool_use(
        "Bash", {"command": "make deploy"}, make_ctx(gov.settings.workspace, tmp_path)
    )
    assert out.updated_input == {"command": "make deploy --dry-run"}
    assert out.additional_context == ["rewritten"] and out.notices == []


async def test_hook_allow_is_overridden_by_deny_rule(tmp_path: Path) -> None:
    hook = py_hook(
        tmp_path,
        "allow.py",
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
        "'permissionDecision': 'allow', 'permissionDecisionReason': 'looks fine'}}))\n",
    )
    gov = gov_with_hooks(tmp_path, {"PreToolUse": [pre("*", hook)]}, {"deny": ["Bash(rm:*)"]})
    ctx = make_ctx(gov.settings.workspace, tmp_path)
    tool = Bash()
    out = await gov.hooks.pre_tool_use("Bash", {"command": "rm -rf /"}, ctx)
    assert out.decision is not None and out.decision.behavior == "allow"
    d = await gov.gate.authorize(
        tool, tool.parse_input({"command": "rm -rf /"}), ctx, hook_decision=out.decision
    )
    assert d.behavior == "deny" and d.rule == "Bash(rm:*)"
    d = await gov.gate.authorize(tool, tool.parse_input({"command": "make"}), ctx, hook_decision=out.decision)
    assert d.behavior == "allow" and d.source == "hook"


async def test_most_restrictive_decision_wins_and_hooks_run_in_parallel(tmp_path: Path) -> None:
    # Side by side: each hook waits for the other two to have started (hooks run in turn never
    # meet). A meeting, not a wall-clock bound (three 2 s sleeps within 5.5 s), which a busy
    # machine's slow interpreter starts could break.
    started_dir, met_dir = tmp_path / "started", tmp_path / "met"
    started_dir.mkdir()
    met_dir.mkdir()

    def decide(name: str, decision: str) -> str:
        return py_hook(
            tmp_path,
            name,
            "import pathlib, time\n"
            f"started, met = pathlib.Path({str(started_dir)!r}), pathlib.Path({str(met_dir)!r})\n"
            f"(started / {name!r}).touch()\n"
            "deadline = time.monotonic() + 20\n"
            "while len(list(started.iterdir())) < 3 and time.monotonic() < deadline:\n"
            "    time.sleep(0.02)\n"
            f"(met / {name!r}).write_text(str(len(list(started.iterdir()))))\n"
            f"print(json.dumps({{'hookSpecificOutput': {{'permissionDecision': '{decision}', "
            f"'permissionDecisionReason': '{name}'}}}}))\n",
        )

    hooks = [
        pre("Bash", decide("a.py", "allow")),
        pre("Bash", decide("k.py", "ask")),
        pre("Bash", decide("b.py", "allow")),
    ]
    gov = gov_with_hooks(tmp_path, {"PreToolUse": hooks})
    out = await gov.hooks.pre_tool_use("Bash", {"command": "x"}, make_ctx(gov.settings.workspace, tmp_path))
    met = {f.name: f.read_text() for f in met_dir.iterdir()}
    assert met == {"a.py": "3", "k.py": "3", "b.py": "3"}, f"hooks that ran alone: {met}"
    assert out.decision is not None and out.decision.behavior == "ask" and "k.py" in out.decision.reason


#: The shell's pid as the host sees it (``$$`` and ``$!`` are pids of the hook's own pid namespace as root):
#: ``cut``'s parent, read from the host's /proc.
_HOST_PID = "cut -d' ' -f4 /proc/self/stat"
_HOST_PID_DQ = 'cut -d" " -f4 /proc/self/stat'
#: A background ``sleep 300`` that writes its host pid to ``{pids}`` first.
_BG_SLEEP = "sh -c '" + _HOST_PID_DQ + " > {pids}; exec sleep 300' &"


async def test_hanging_hook_times_out_and_leaves_nothing(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    hook = script(
        tmp_path,
        "hang.sh",
        f"#!/bin/sh\n{_BG_SLEEP.format(pids=pids)}\nwhile [ ! -s {pids} ]; do sleep 0.01; done\n"
        f"{_HOST_PID} >> {pids}\nsleep 300\n",
    )
    gov = gov_with_hooks(tmp_path, {"PreToolUse": [pre("Bash", hook, timeout=0.5)]})
    started = time.monotonic()
    out = await gov.hooks.pre_tool_use("Bash", {"command": "x"}, make_ctx(gov.settings.workspace, tmp_path))
    assert time.monotonic() - started < 30  # a hang (300 s) is what this catches, not speed
    assert out.decision is None and out.blocked_reason is None
    assert len(out.notices) == 1 and "timed out after 0.5s" in out.notices[0].message
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"hook process {pid} survived"


async def test_background_child_of_a_finished_hook_is_killed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    hook = script(
        tmp_path,
        "bg.sh",
        f"#!/bin/sh\n{_BG_SLEEP.format(pids=pids)}\nwhile [ ! -s {pids} ]; do sleep 0.01; done\necho '{{}}'\n",
    )
    gov = gov_with_hooks(tmp_path, {"PreToolUse": [pre("Bash", hook)]})
    started = time.monotonic()
    out = await gov.hooks.pre_tool_use("Bash", {"command": "x"}, make_ctx(gov.settings.workspace, tmp_path))
    assert time.monotonic() - started < 30 and out.notices == []  # catches a wait for the 300 s child
    assert not _alive(int(pids.read_text()))


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("#!/bin/sh\necho '{not json'\n", "not JSON"),
        ("#!/bin/sh\necho '[1, 2]'\n", "not an object"),
        (
            '#!/bin/sh\necho \'{"hookSpecificOutput": {"permissionDecision": "maybe"}}\'\n',
            "permissionDecision",
        ),
        ("#!/bin/sh\necho 'kaboom' >&2\nexit 1\n", "status 1: kaboom"),
        ("#!/bin/sh\nkill -9 $$\n", "status 137"),
    ],
)
async def test_broken_hook_yields_notice_and_does_not_answer(
    tmp_path: Path, body: str, fragment: str
) -> None:
    hook = script(tmp_path, "broken.sh", body)
    gov = gov_with_hooks(tmp_path, {"PreToolUse": [pre("Bash", hook)]})
    out = await gov.hooks.pre_tool_use("Bash", {"command": "x"}, make_ctx(gov.settings.workspace, tmp_path))
    assert out.decision is None and out.blocked_reason is None and out.updated_input is None
    assert len(out.notices) == 1 and fragment in out.notices[0].message


async def test_missing_hook_command_is_a_notice(tmp_path: Path) -> None:
    gov = gov_with_hooks(tmp_path, {"PreToolUse": [pre("Bash", str(tmp_path / "nope.sh"))]})
    out = await gov.hooks.pre_tool_use("Bash", {"command": "x"}, make_ctx(gov.settings.workspace, tmp_path))
    assert out.decision is None and "status 127" in out.notices[0].message


async def test_top_level_block_and_continue_false(tmp_path: Path) -> None:
    hook = script(
        tmp_path, "legacy.sh", '#!/bin/sh\necho \'{"decision": "block", "reason": "legacy says no"}\'\n'
    )
    gov = gov_with_hooks(tmp_path, {"PreToolUse": [pre("", hook)]})
    out = await gov.hooks.pre_tool_use("Read", {"file_path": "x"}, make_ctx(gov.settings.workspace, tmp_path))
    assert out.blocked_reason == "legacy says no"
    hook = script(tmp_path, "stop.sh", '#!/bin/sh\necho \'{"continue": false, "stopReason": "halt"}\'\n')
    gov = gov_with_hooks(tmp_path, {"PreToolUse": [pre("", hook)]})
    out = await gov.hooks.pre_tool_use("Read", {"file_path": "x"}, make_ctx(gov.settings.workspace, tmp_path))
    assert out.blocked_reason == "halt"


async def test_post_hooks_feedback_and_failure_event(tmp_path: Path) -> None:
    log = tmp_path / "events"
    hook = py_hook(
        tmp_path,
        "post.py",
        f"d = json.load(sys.stdin)\nopen({str(log)!r}, 'a').write(d['hook_event_name'] + '\\n')\n"
        "print('lint failed', file=sys.stderr)\nsys.exit(2)\n",
    )
    gov = gov_with_hooks(
        tmp_path, {"PostToolUse": [pre("Edit", hook)], "PostToolUseFailure": [pre("Edit", hook)]}
    )
    ctx = make_ctx(gov.settings.workspace, tmp_path)
    out = await gov.hooks.post_tool_use("Edit", {"file_path": "a"}, "ok", ctx, failed=False)
    assert out.feedback == "lint failed"
    await gov.hooks.post_tool_use("Edit", {"file_path": "a"}, "boom", ctx, failed=True)
    assert log.read_text().split() == ["PostToolUse", "PostToolUseFailure"]
    assert (await gov.hooks.post_tool_use("Read", {}, "x", ctx, failed=False)).feedback is None


async def test_invalid_matcher_regex_is_reported(tmp_path: Path) -> None:
    gov = gov_with_hooks(tmp_path, {"PreToolUse": [pre("Bash(", "true")], "Bogus": []})
    assert any("not a valid regex" in d for d in gov.diagnostics)
    assert any("'Bogus' is not supported" in d for d in gov.diagnostics)


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs, allowing SIGKILL a moment to land (10 s: only a survivor waits it
    out; a killed process's exit on a loaded lane can take more than the 2 s this allowed)."""
    deadline = time.monotonic() + 10
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return _running(pid)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie still answers kill(0); it is gone for our purposes
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


async def test_setsid_child_of_a_hook_is_killed(tmp_path: Path) -> None:
    """A child that left the hook's process group (setsid) dies with the hook, like command trees."""
    pids = tmp_path / "pids"
    hook = script(
        tmp_path,
        "escape.sh",
        f"#!/bin/sh\nsetsid sh -c '{_HOST_PID_DQ} > {pids}; exec sleep 300' < /dev/null > /dev/null 2>&1 &\n"
        f"while [ ! -s {pids} ]; do sleep 0.01; done\necho '{{}}'\n",
    )
    gov = gov_with_hooks(tmp_path, {"PreToolUse": [pre("Bash", hook, timeout=10)]})
    out = await gov.hooks.pre_tool_use("Bash", {"command": "x"}, make_ctx(gov.settings.workspace, tmp_path))
    assert out.notices == []
    pid = int(pids.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(pid), f"setsid child {pid} of the hook survived"


@pytest.mark.parametrize(
    ("body", "timeout", "fragment"),
    [
        ("#!/bin/sh\nsleep 30\n", 0.5, "timed out"),
        ("#!/bin/sh\necho kaboom >&2\nexit 3\n", None, "status 3"),
        ("#!/bin/sh\necho '{not json'\n", None, "not JSON"),
        (None, None, "status 127"),
    ],
)
async def test_hook_failures_reach_ui_audit_and_stderr(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    body: str | None,
    timeout: float | None,
    fragment: str,
) -> None:
    import shellrt
    from shellrt.protocol import ToolUseBlock
    from shellrt.tools.bash import Bash

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    hook = script(tmp_path, "h.sh", body) if body is not None else str(tmp_path / "missing.sh")
    ws = tmp_path / "ws"
    ws.mkdir()
    entry = pre("Bash", hook, timeout=timeout)
    operator = tmp_path / "operator-settings.json"  # the operator's own file: trusted
    operator.write_text(json.dumps({"hooks": {"PreToolUse": [entry], "PostToolUse": [entry]}}))
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", session_dir=tmp_path / ".s", tools=[Bash()], settings_files=[operator]
    ) as rt:
        [envelope] = await rt.run_envelopes(
            [ToolUseBlock(id="t1", name="Bash", input={"command": "echo hi"})]
        )
    assert not envelope.is_error
    assert fragment in envelope.ui and fragment in envelope.audit
    assert "[notice]" in envelope.ui
    model_text = envelope.model.content if isinstance(envelope.model.content, str) else ""
    assert fragment not in model_text  # notices are for people, never the model
    assert fragment in capfd.readouterr().err
