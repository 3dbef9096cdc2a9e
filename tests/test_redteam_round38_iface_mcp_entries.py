"""Red team, round 38 (iface): ``shellrt serve``'s ``tools/list`` entries pass the listing's checks.

Round 37 Left: the model APIs' listing (`runtime.listing.checked_entry`) refuses a tool whose
description or schema is past its size bound, whose schema is not a JSON object schema or not plain
JSON, or whose name is not the one it was registered under; the MCP server built its entries itself
(`to_mcp_tool`) and sent them whole: one tool's 5 MB description went to every client on every
``tools/list`` (and into its model's context), an array "schema" reached clients that require an
object. Now the server's entries are built through the same check, and a tool left out is refused
as unknown. A real MCP client session (the official SDK) in memory.
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
from shellrt.runtime.listing import MAX_DESCRIPTION_CHARS, MAX_SCHEMA_CHARS
from shellrt.server.mcp import McpToolServer
from shellrt.tools.bash import Bash

pytestmark = pytest.mark.anyio


class _In(BaseModel):
    text: str = ""


class _Odd(Tool[_In, str]):
    input_model = _In

    def __init__(self, name: str, *, prompt: str = "a tool", schema: dict[str, Any] | None = None) -> None:
        self.name = name
        self._prompt = prompt
        self._schema = schema
        self.calls = 0

    def prompt(self) -> str:
        return self._prompt

    def input_schema(self) -> dict[str, Any]:
        return self._schema if self._schema is not None else super().input_schema()

    async def check_permissions(self, tool_input: _In, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow()

    async def call(self, tool_input: _In, ctx: ToolContext) -> ToolOutput[str]:
        self.calls += 1
        return ToolOutput(f"{self.name} ran")

    def to_model_content(self, output: str) -> str:
        return output


def _big_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(MAX_SCHEMA_CHARS // 20)}}


_NAN = {"type": "object", "properties": {"n": {"type": "number", "maximum": float("nan")}}}


async def _served(tmp_path: Path, odd: list[_Odd]) -> tuple[dict[str, int], list[Any], list[str]]:
    """``tools/list`` (name: description length) and a call of each odd tool, through a real client."""
    async with shellrt.Runtime(
        tmp_path, "local", mode="bypassPermissions", tools=[Bash(), *odd], session_dir=tmp_path / "s"
    ) as rt:
        server = McpToolServer(rt)
        async with create_client_server_memory_streams() as (client_streams, server_streams), \
                anyio.create_task_group() as tg:
            tg.start_soon(lambda: server.server.run(*server_streams, server.initialization_options()))
            async with ClientSession(*client_streams) as client:
                await client.initialize()
                listed = {t.name: len(t.description or "") for t in (await client.list_tools()).tools}
                results: list[Any] = [await client.call_tool(t.name, {"text": "x"}) for t in odd]
            tg.cancel_scope.cancel()
        return listed, results, list(rt.registry.listing_diagnostics)


def _left_out(odd: list[_Odd], listed: dict[str, int], results: list[Any], diagnostics: list[str]) -> None:
    assert list(listed) == ["Bash"], listed
    assert all(r.is_error for r in results) and not any(t.calls for t in odd), [t.calls for t in odd]
    for tool in odd:
        assert any(repr(tool.name) in line for line in diagnostics), (tool.name, diagnostics)


async def test_past_the_bounds_or_not_json_is_not_served(tmp_path: Path) -> None:
    """Failed before: listed {'Bash': 1162, 'HugePrompt': 500000, 'HugeSchema': 6, 'NotJson': 6} (a
    500,000-character description to every client) and each ran when called. Now only Bash is
    listed; the three are refused as unknown and named in the registry's diagnostics."""
    odd = [
        _Odd("HugePrompt", prompt="x" * (5 * MAX_DESCRIPTION_CHARS)),
        _Odd("HugeSchema", schema=_big_schema()),
        _Odd("NotJson", schema=_NAN),
    ]
    _left_out(odd, *await _served(tmp_path, odd))


async def test_one_schema_the_wire_refuses_does_not_fail_the_listing(tmp_path: Path) -> None:
    """Failed before: an array "schema" failed every ``tools/list`` (MCPError -32603, "Handler
    returned an invalid result": the SDK checks the whole answer), so no client saw any tool. Now
    that tool is left out and refused, the others listed."""
    odd = [_Odd("ArraySchema", schema={"type": "array", "items": {"type": "string"}})]
    _left_out(odd, *await _served(tmp_path, odd))
