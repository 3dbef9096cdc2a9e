"""Round 37 red team, review: ``shellrt serve`` (MCP) lists a tool only if it can be called, and
refuses what it left out.

The MCP server built its ``tools/list`` itself: a tool whose ``prompt()`` or ``input_schema()``
failed there was skipped with a log line, and stayed callable (``tools/call`` by name ran it): a
client was refused the tool's description, never its use (round 36 runtime2 made the model APIs'
listing fail closed; this one was not). Now it asks through the registry's guard, so a tool left
out is refused as an unknown tool. A real MCP client session (the official SDK) in memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.shared.memory import create_client_server_memory_streams
from pydantic import BaseModel

import shellrt
from shellrt.protocol import ToolContext
from shellrt.protocol.permission import PermissionResult
from shellrt.protocol.tool import Tool, ToolOutput
from shellrt.server.mcp import McpToolServer
from shellrt.tools.bash import Bash

pytestmark = pytest.mark.anyio


class _In(BaseModel):
    text: str = ""


class Broken(Tool[_In, str]):
    name = "Broken"
    input_model = _In

    def __init__(self) -> None:
        self.armed = False
        self.calls = 0

    def prompt(self) -> str:
        if self.armed:
            raise RuntimeError("prompt broke")
        return "a tool"

    async def check_permissions(self, tool_input: _In, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow()

    async def call(self, tool_input: _In, ctx: ToolContext) -> ToolOutput[str]:
        self.calls += 1
        return ToolOutput("broken ran")

    def to_model_content(self, output: str) -> str:
        return output


async def test_a_tool_left_out_of_tools_list_is_not_callable(tmp_path: Path) -> None:
    broken = Broken()
    async with shellrt.Runtime(
        tmp_path, "local", mode="bypassPermissions", tools=[Bash(), broken], session_dir=tmp_path / "s"
    ) as rt:
        server = McpToolServer(rt)
        broken.armed = True
        async with create_client_server_memory_streams() as (client_streams, server_streams), \
                anyio.create_task_group() as tg:
            tg.start_soon(lambda: server.server.run(*server_streams, server.initialization_options()))
            async with ClientSession(*client_streams) as client:
                await client.initialize()
                listed = [t.name for t in (await client.list_tools()).tools]
                result: Any = await client.call_tool("Broken", {"text": "x"})
            tg.cancel_scope.cancel()
    assert listed == ["Bash"], listed
    assert result.is_error and broken.calls == 0, result
