"""The permission engine remembers allow decisions by the tool's decision key (issue 22, item 2).

A repeated Bash command that names no path skips the seven steps; every change that could
change the answer (a rule added in place, the rule list replaced, the mode, the cwd's real
path, the roots) takes effect on the very next call, and asks, denies and hook-decided calls
are never remembered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions import PermissionDecision, PermissionEngine
from shellrt.permissions.rules import parse_rule
from shellrt.permissions.ruleset import RuleSet
from shellrt.protocol import PermissionResult, ToolContext
from shellrt.tools.bash import Bash, BashInput

pytestmark = pytest.mark.anyio


class CountingBash(Bash):
    """The real Bash tool, counting how often the engine runs its own check."""

    def __init__(self) -> None:
        super().__init__()
        self.checks = 0

    async def check_permissions(self, tool_input: BashInput, ctx: ToolContext) -> PermissionResult:
        self.checks += 1
        return await super().check_permissions(tool_input, ctx)


def make(tmp_path: Path, mode: Any = "default") -> tuple[PermissionEngine, ToolContext]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    engine = PermissionEngine(RuleSet(home=tmp_path / "home"), mode=mode, workspace=ws)
    return engine, ctx_at(ws, str(ws))


def ctx_at(ws: Path, cwd: str) -> ToolContext:
    return ToolContext(
        session_id="s", session_dir=ws.parent / "session", workspace=ws, cwd=cwd, allowed_roots=(ws,)
    )


async def decide(engine: PermissionEngine, tool: Bash, command: str, ctx: ToolContext) -> PermissionDecision:
    # A fresh input object per call, as the runtime parses each tool_use afresh.
    return await engine.decide(tool, BashInput(command=command), ctx)


async def test_a_repeated_allow_is_remembered(tmp_path: Path) -> None:
    engine, ctx = make(tmp_path)
    tool = CountingBash()
    first = await decide(engine, tool, "true", ctx)
    second = await decide(engine, tool, "true", ctx)
    assert first.behavior == "allow" and second is first
    assert tool.checks == 1  # the second call did not run the steps again


async def test_a_rule_added_in_place_takes_effect_at_once(tmp_path: Path) -> None:
    engine, ctx = make(tmp_path, "bypassPermissions")
    tool = CountingBash()
    assert (await decide(engine, tool, "true", ctx)).behavior == "allow"
    engine.rules.add(parse_rule("Bash(true)", "deny"))  # the list is changed, not replaced
    denied = await decide(engine, tool, "true", ctx)
    assert denied.behavior == "deny" and denied.rule == "Bash(true)"
    engine.rules.rules.clear()
    engine.rules.add(parse_rule("Bash(true)", "ask"))
    assert (await decide(engine, tool, "true", ctx)).behavior == "ask"


async def test_a_replaced_rule_set_and_managed_only_take_effect_at_once(tmp_path: Path) -> None:
    engine, ctx = make(tmp_path)
    tool = CountingBash()
    engine.rules.add(parse_rule("Bash(true &)", "allow"))
    assert (await decide(engine, tool, "true &", ctx)).behavior == "ask"  # background: never by rule
    assert (await decide(engine, tool, "x=1 true", ctx)).behavior == "ask"
    engine.rules = RuleSet(rules=[parse_rule("Bash", "allow")], home=tmp_path / "home")
    assert (await decide(engine, tool, "x=1 true", ctx)).behavior == "allow"
    engine.rules.managed_only = True  # the session's allow no longer counts
    assert (await decide(engine, tool, "x=1 true", ctx)).behavior == "ask"


async def test_a_mode_change_takes_effect_at_once(tmp_path: Path) -> None:
    engine, ctx = make(tmp_path, "bypassPermissions")
    tool = CountingBash()
    assert (await decide(engine, tool, "x=1 true", ctx)).behavior == "allow"
    assert (await decide(engine, tool, "x=1 true", ctx)).behavior == "allow"
    engine.mode = "default"
    assert (await decide(engine, tool, "x=1 true", ctx)).behavior == "ask"
    engine.mode = "dontAsk"
    assert (await decide(engine, tool, "x=1 true", ctx)).behavior == "deny"
    engine.mode = "bypassPermissions"
    engine.degraded = True  # settings unreadable: bypass cannot allow
    assert (await decide(engine, tool, "x=1 true", ctx)).behavior != "allow"


async def test_asks_and_denies_are_never_remembered(tmp_path: Path) -> None:
    engine, ctx = make(tmp_path)
    tool = CountingBash()
    for _ in range(3):
        assert (await decide(engine, tool, "x=1 true", ctx)).behavior == "ask"
    engine.mode = "dontAsk"
    for _ in range(3):
        assert (await decide(engine, tool, "x=1 true", ctx)).behavior == "deny"
    assert tool.checks == 6


async def test_the_cwd_is_judged_where_it_is_now(tmp_path: Path) -> None:
    """The key holds the cwd's real path, asked afresh: a link retargeted outside between two
    identical calls is judged outside at once."""
    engine, _ = make(tmp_path)
    ws = tmp_path / "ws"
    (ws / "sub").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    link = ws / "here"
    link.symlink_to(ws / "sub")
    tool = CountingBash()
    ctx = ctx_at(ws, str(link))
    assert (await decide(engine, tool, "true", ctx)).behavior == "allow"
    assert (await decide(engine, tool, "true", ctx)).behavior == "allow"
    link.unlink()
    link.symlink_to(outside)
    moved = await decide(engine, tool, "true", ctx)
    assert moved.behavior == "ask" and "outside the workspace" in moved.reason
    link.unlink()
    link.symlink_to(ws / "sub")  # back inside: the allow again
    assert (await decide(engine, tool, "true", ctx)).behavior == "allow"
    assert tool.checks == 2  # the first allow answered the second and the last call


async def test_a_root_retargeted_takes_effect_at_once(tmp_path: Path) -> None:
    """A root given through a symlink is resolved for every key: retargeting it away from the cwd
    makes the same call ask."""
    engine, _ = make(tmp_path)
    real = tmp_path / "real"
    (real / "d").mkdir(parents=True)
    other = tmp_path / "other"
    other.mkdir()
    root = tmp_path / "root"
    root.symlink_to(real)
    ctx = ToolContext(
        session_id="s",
        session_dir=tmp_path / "session",
        workspace=engine.workspace,
        cwd=str(real / "d"),
        allowed_roots=(root,),
    )
    tool = CountingBash()
    assert (await decide(engine, tool, "true", ctx)).behavior == "allow"
    root.unlink()
    root.symlink_to(other)
    assert (await decide(engine, tool, "true", ctx)).behavior == "ask"


async def test_a_hook_decision_is_never_remembered_or_answered_from_memory(tmp_path: Path) -> None:
    engine, ctx = make(tmp_path)
    tool = CountingBash()
    hook = PermissionDecision(behavior="allow", reason="hook says yes")
    assert (
        await engine.decide(tool, BashInput(command="x=1 true"), ctx, hook_decision=hook)
    ).behavior == "allow"
    assert (await decide(engine, tool, "x=1 true", ctx)).behavior == "ask"
    assert (await decide(engine, tool, "true", ctx)).behavior == "allow"
    denied = PermissionDecision(behavior="deny", reason="hook says no")
    d = await engine.decide(tool, BashInput(command="true"), ctx, hook_decision=denied)
    assert d.behavior == "deny"  # a remembered allow never answers for a call a hook judged


async def test_commands_that_name_paths_are_decided_afresh(tmp_path: Path) -> None:
    engine, ctx = make(tmp_path)
    tool = CountingBash()
    for command in ("ls", "cat x", "git status", "cd sub", "echo /etc/passwd"):
        assert tool.decision_key(BashInput(command=command), ctx) is None, command
        await decide(engine, tool, command, ctx)
        await decide(engine, tool, command, ctx)
    assert tool.checks == 10


async def test_an_allow_decided_while_the_rules_changed_is_not_kept(tmp_path: Path) -> None:
    """The engine awaits inside a decision; a rule added meanwhile must not leave behind an
    allow remembered under the state it no longer matches (nor be answered by it later)."""
    engine, ctx = make(tmp_path, "bypassPermissions")
    entered, release = anyio.Event(), anyio.Event()

    class SlowBash(Bash):
        async def check_permissions(self, tool_input: BashInput, ctx: ToolContext) -> PermissionResult:
            entered.set()
            await release.wait()
            return await super().check_permissions(tool_input, ctx)

    tool = SlowBash()
    results: list[PermissionDecision] = []

    async def slow() -> None:
        results.append(await decide(engine, tool, "true", ctx))

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        await entered.wait()
        engine.rules.add(parse_rule("Bash(true)", "deny"))
        release.set()
    assert results[0].behavior == "allow"  # decided on the rules it started with (as before)
    assert not engine._allowed
    assert (await decide(engine, tool, "true", ctx)).behavior == "deny"


async def test_concurrent_identical_calls_agree(tmp_path: Path) -> None:
    engine, ctx = make(tmp_path)
    tool = CountingBash()
    out: list[PermissionDecision] = []

    async def one() -> None:
        out.append(await decide(engine, tool, "true", ctx))

    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(one)
    assert [d.behavior for d in out] == ["allow"] * 8


async def test_through_a_runtime_a_rule_or_mode_change_between_identical_calls_takes_effect(
    tmp_path: Path,
) -> None:
    """End to end: the second identical `true` is answered from memory (the steps ran once), and a
    deny rule added, then a mode switched, between identical calls refuse the very next one."""
    import shellrt
    from shellrt.runtime.messages import parse_tool_uses

    ws = tmp_path / "ws"
    ws.mkdir()
    ran: list[str] = []
    real = PermissionEngine._decide

    async def counted(self: PermissionEngine, *args: Any, **kwargs: Any) -> PermissionDecision:
        ran.append("decide")
        return await real(self, *args, **kwargs)

    ids = iter(range(100))

    async def call(rt: Any, command: str) -> Any:
        block = {
            "type": "tool_use",
            "id": f"toolu_{next(ids):04d}",
            "name": "Bash",
            "input": {"command": command},
        }
        [envelope] = await rt.run_envelopes(parse_tool_uses({"role": "assistant", "content": [block]}))
        return envelope

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(PermissionEngine, "_decide", counted)
        async with shellrt.Runtime(
            ws, sandbox="local", mode="bypassPermissions", session_dir=tmp_path / "s"
        ) as rt:
            assert not (await call(rt, "true")).is_error
            assert not (await call(rt, "true")).is_error
            assert len(ran) == 1
            rt.governance.engine.rules.add(parse_rule("Bash(true)", "deny"))
            denied = await call(rt, "true")
            assert denied.is_error and "Bash(true)" in str(denied.model.content)
            rt.governance.engine.rules.rules.clear()
            assert not (await call(rt, "x=1 true")).is_error
            rt.governance.set_mode("dontAsk")
            assert (await call(rt, "x=1 true")).is_error  # not read-only: dontAsk denies it at once
