"""Red team round 8 (interfaces): a call cancelled before it starts must not run, whatever its kind.

``interrupt_behavior = "block"`` (Write, Edit, NotebookEdit) means a call already under way is not
cut off half-way. It was also applied to calls that had not started: an MCP client's
``notifications/cancelled`` for a Write queued behind a running command (or waiting for its
approval) was shielded whole, and the Write ran seconds after the user cancelled it; an interrupt
(JSONL ``{"type": "interrupt"}``, `Runtime.interrupt`) that arrived while a block-type call's
PreToolUse hook or approval was still running let the call run once they allowed it.

Real processes: the official MCP client over in-memory streams, the real Write tool, a real
PreToolUse hook process; the local backend.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import ClientSession
from mcp.shared.memory import create_client_server_memory_streams

import shellrt
from shellrt.permissions import ApprovalRequest, ApprovalResponse
from shellrt.protocol import ToolUseBlock
from shellrt.server.mcp import McpToolServer
from shellrt.server.mcp_approval import elicitation_approver

pytestmark = pytest.mark.anyio

_ids = itertools.count()


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trust" / "store.json"))


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@asynccontextmanager
async def _serve(rt: shellrt.Runtime, elicit: Any = None) -> AsyncIterator[ClientSession]:
    """A client connected to `McpToolServer(rt)` over in-memory streams."""
    server = McpToolServer(rt)
    async with (
        create_client_server_memory_streams() as (client_streams, server_streams),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(lambda: server.server.run(*server_streams, server.initialization_options()))
        kwargs = {"elicitation_callback": elicit} if elicit is not None else {}
        async with ClientSession(*client_streams, **kwargs) as client:
            await client.initialize()
            yield client
        tg.cancel_scope.cancel()


async def test_mcp_cancel_of_a_queued_write_keeps_it_from_running(tmp_path: Path) -> None:
    """A Write queued behind a running command, cancelled by the client, never runs."""
    ws = _workspace(tmp_path)
    target = ws / "cancelled.txt"
    async with (
        shellrt.Runtime(ws, "local", mode="bypassPermissions", session_dir=tmp_path / "s") as rt,
        _serve(rt) as client,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(client.call_tool, "Bash", {"command": "touch started.txt; sleep 2; echo done > done.txt"})
        # Until the command (not read-only) runs, holding the one-at-a-time lock: a fixed 0.4 s wait
        # let a loaded lane's Write run first, unqueued.
        with anyio.fail_after(30):
            while not (ws / "started.txt").exists():
                await anyio.sleep(0.02)
        with anyio.move_on_after(0.4):  # the client gives up: notifications/cancelled
            await client.call_tool("Write", {"file_path": str(target), "content": "x"})
        with anyio.fail_after(30):
            while not (ws / "done.txt").exists():
                await anyio.sleep(0.05)
        await anyio.sleep(0.5)  # the command ended: a queued Write would have run
        after = await client.call_tool("Bash", {"command": "echo alive"})
        assert "alive" in after.content[0].text  # type: ignore[union-attr]
    assert not target.exists(), "the Write ran although the client cancelled it before it started"


async def test_mcp_cancel_while_the_approval_is_pending_keeps_the_write_from_running(tmp_path: Path) -> None:
    """The client cancels a Write while its user is still asked; a late "allow" runs nothing."""
    ws = _workspace(tmp_path)
    target = ws / "asked.txt"

    async def slow_allow(context: Any, params: Any) -> mt.ElicitResult:
        await anyio.sleep(1.0)  # the user answers after the client cancelled the request
        return mt.ElicitResult(action="accept", content={"decision": "allow once"})

    async with (
        shellrt.Runtime(ws, "local", approver=elicitation_approver, session_dir=tmp_path / "s") as rt,
        _serve(rt, slow_allow) as client,
    ):
        with anyio.move_on_after(0.4):
            await client.call_tool("Write", {"file_path": str(target), "content": "x"})
        await anyio.sleep(1.5)
    assert not target.exists(), "a Write cancelled while its approval was pending ran on a late allow"


async def test_mcp_cancel_lets_a_started_write_finish(tmp_path: Path) -> None:
    """Held: a block-type call that already started still finishes (never left half-written)."""
    ws = _workspace(tmp_path)
    target = ws / "started.txt"
    content = "y" * (4 << 20)
    async with (
        shellrt.Runtime(ws, "local", mode="bypassPermissions", session_dir=tmp_path / "s") as rt,
        _serve(rt) as client,
    ):
        with anyio.move_on_after(0.01):
            await client.call_tool("Write", {"file_path": str(target), "content": content})
        await anyio.sleep(1.0)
    assert not target.exists() or target.read_text() == content


def _slow_hook_settings(tmp_path: Path) -> Path:
    hook = tmp_path / "slow_hook.py"
    hook.write_text("import sys, time\nsys.stdin.read()\ntime.sleep(1.0)\n")
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "Write",
                            "hooks": [{"type": "command", "command": f"{sys.executable} {hook}"}],
                        }
                    ]
                }
            }
        )
    )
    return settings


async def test_interrupt_during_a_pre_tool_use_hook_keeps_a_write_from_running(tmp_path: Path) -> None:
    """An interrupt while the Write's PreToolUse hook runs: the Write never starts."""
    ws = _workspace(tmp_path)
    target = ws / "hooked.txt"
    settings = _slow_hook_settings(tmp_path)
    async with shellrt.Runtime(
        ws, "local", mode="bypassPermissions", settings_files=[settings], session_dir=tmp_path / "s"
    ) as rt:
        block = ToolUseBlock(
            id=f"r8c{next(_ids)}", name="Write", input={"file_path": str(target), "content": "x"}
        )
        async with anyio.create_task_group() as tg:
            found: list[Any] = []

            async def run() -> None:
                found.extend(await rt.run_envelopes([block]))

            tg.start_soon(run)
            await anyio.sleep(0.4)  # the hook is running
            rt.interrupt()
    assert not target.exists(), "the Write ran although the user interrupted before it started"
    assert found and found[0].is_error and "not run" in found[0].model.text()


async def test_interrupt_during_an_approval_keeps_a_write_from_running(tmp_path: Path) -> None:
    """An interrupt while the person is asked: their late "allow" runs nothing."""
    ws = _workspace(tmp_path)
    target = ws / "approved-late.txt"

    async def late_allow(request: ApprovalRequest) -> ApprovalResponse:
        await anyio.sleep(1.0)
        return ApprovalResponse(behavior="allow")

    async with shellrt.Runtime(ws, "local", approver=late_allow, session_dir=tmp_path / "s") as rt:
        block = ToolUseBlock(
            id=f"r8c{next(_ids)}", name="Write", input={"file_path": str(target), "content": "x"}
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.run_envelopes, [block])
            await anyio.sleep(0.4)
            rt.interrupt()
    assert not target.exists(), "the Write ran on an approval given after the user interrupted"


async def test_held_two_pending_approvals_answered_out_of_order_stay_with_their_calls(tmp_path: Path) -> None:
    """Two asks at once from one client: each answer applies to the call it was asked for."""
    ws = _workspace(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "allowed.txt").write_text("ALLOWED-CONTENT")
    (outside / "refused.txt").write_text("REFUSED-CONTENT")
    asked: list[str] = []

    async def answer(context: Any, params: Any) -> mt.ElicitResult:
        asked.append(params.message)
        if "allowed.txt" in params.message:
            await anyio.sleep(0.8)  # answered after the other one
            return mt.ElicitResult(action="accept", content={"decision": "allow once"})
        return mt.ElicitResult(action="accept", content={"decision": "deny"})

    results: dict[str, Any] = {}
    async with (
        shellrt.Runtime(ws, "local", approver=elicitation_approver, session_dir=tmp_path / "s") as rt,
        _serve(rt, answer) as client,
    ):

        async def read(name: str) -> None:
            results[name] = await client.call_tool("Read", {"file_path": str(outside / name)})

        async with anyio.create_task_group() as tg:
            tg.start_soon(read, "allowed.txt")
            tg.start_soon(read, "refused.txt")
    assert len(asked) == 2, asked
    allowed, refused = results["allowed.txt"], results["refused.txt"]
    assert not allowed.is_error and "ALLOWED-CONTENT" in str(allowed.content)
    assert refused.is_error and "REFUSED-CONTENT" not in str(refused.content)
