"""MCP cancellation honours ``interrupt_behavior``: a ``block`` tool finishes, a ``cancel`` tool stops.

A real MCP client session (the official SDK) talks to `McpToolServer` over
in-memory streams and sends a real ``notifications/cancelled`` (abandoning a running call).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest
from mcp import ClientSession
from mcp.shared.memory import create_client_server_memory_streams

import shellrt
from shellrt.server.mcp import McpToolServer
from tests._runtime_tools import SleepInput, UnsafeSleep

pytestmark = pytest.mark.anyio

FINISHED: dict[str, float] = {}


class BlockSleep(UnsafeSleep):
    """Like UnsafeSleep, but an interrupt must let it finish (as Write/Edit)."""

    name = "BlockSleep"
    interrupt_behavior: ClassVar[Any] = "block"

    async def call(self, tool_input: SleepInput, ctx: Any) -> Any:
        out = await super().call(tool_input, ctx)
        FINISHED[tool_input.label] = time.monotonic()
        return out


class CancelSleep(UnsafeSleep):
    name = "CancelSleep"

    async def call(self, tool_input: SleepInput, ctx: Any) -> Any:
        out = await super().call(tool_input, ctx)
        FINISHED[tool_input.label] = time.monotonic()
        return out


async def _call_then_cancel(tmp_path: Path, tool: str, label: str) -> None:
    async with shellrt.Runtime(
        tmp_path, "local", mode="bypassPermissions", tools=[BlockSleep(), CancelSleep()],
        session_dir=tmp_path / "session",
    ) as rt:
        server = McpToolServer(rt)
        async with create_client_server_memory_streams() as (client_streams, server_streams), \
                anyio.create_task_group() as tg:
            tg.start_soon(lambda: server.server.run(*server_streams, server.initialization_options()))
            async with ClientSession(*client_streams) as client:
                await client.initialize()
                # Abandoning the call sends the client's `notifications/cancelled` for it.
                with anyio.move_on_after(0.5):
                    await client.call_tool(tool, {"seconds": 1.5, "label": label})
                if tool == "BlockSleep":
                    # Until it finished (a fixed 2.5 s wait was 1.5 s of margin on a loaded lane).
                    with anyio.move_on_after(30):
                        while label not in FINISHED:
                            await anyio.sleep(0.05)
                else:
                    await anyio.sleep(2.5)  # a cancel tool not cut off would have finished by now
            tg.cancel_scope.cancel()


async def test_mcp_cancel_lets_a_block_tool_finish(tmp_path: Path) -> None:
    await _call_then_cancel(tmp_path, "BlockSleep", "blocked")
    assert "blocked" in FINISHED, "a block tool was cut off by the MCP cancel"


async def test_mcp_cancel_stops_a_cancel_tool(tmp_path: Path) -> None:
    await _call_then_cancel(tmp_path, "CancelSleep", "cancelled")
    assert "cancelled" not in FINISHED
