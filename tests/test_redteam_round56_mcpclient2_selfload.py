"""Round 56, mcpclient2: a server's own ``_meta["anthropic/alwaysLoad"]`` put any amount in ``tools[]``.

A tool a server marks ``anthropic/alwaysLoad`` skips deferral: its description (up to 8 KB) and
schema (up to 100 KB, round 36) go to the model in every request. A hostile server marked each of
its tools so: 120 tools of 20 KB put 2.4 MB (about 600,000 tokens) in ``tools[]`` of every request,
past any model's context, so every turn of the session failed, whatever the operator's other
tools. Now a server's own claim is honoured up to `SELF_LOADED_CHARS` per server (its first tools
that fit); the rest stay deferred (ToolSearch finds them) and ``diagnostics`` says so. The
operator's ``alwaysLoad`` in settings is their choice and still loads every tool. Real servers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

from shellrt.tools.mcp._listing_bounds import SELF_LOADED_CHARS
from shellrt.tools.mcp.manager import McpConnections
from tests._mcp_tiny_server import tiny_server


def _tools(count: int, size: int) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"q": {"type": "string", "description": "x" * size}}}
    return [
        {"name": f"t{k}", "description": "d", "inputSchema": schema, "_meta": {"anthropic/alwaysLoad": True}}
        for k in range(count)
    ]


def _loaded(tmp_path: Path, tools: list[dict[str, Any]], **config: Any) -> tuple[list[Any], list[str]]:
    server = tmp_path / "selfload.py"
    server.write_text(tiny_server("", name="selfload", tools=tools))
    servers = {"s": {"command": sys.executable, "args": [str(server)], "startup_timeout": 60, **config}}

    async def main() -> tuple[list[Any], list[str]]:
        async with McpConnections(servers) as mcp:
            return await mcp.tools(), list(mcp.diagnostics)

    return anyio.run(main)


def _in_every_request(tools: list[Any]) -> int:
    return sum(len(t.prompt()) + len(json.dumps(t.input_schema())) for t in tools if not t.is_deferred())


def test_a_server_marking_every_tool_always_loaded_is_bounded(tmp_path: Path) -> None:
    tools, diagnostics = _loaded(tmp_path, _tools(120, 20_000))
    assert len(tools) == 120, "every tool stays available (deferred ones through ToolSearch)"
    assert _in_every_request(tools) <= SELF_LOADED_CHARS, _in_every_request(tools)
    assert not tools[0].is_deferred(), "a server's claim is honoured while it fits"
    assert any("alwaysLoad" in d and "ToolSearch" in d for d in diagnostics), diagnostics


def test_one_self_loaded_tool_past_the_budget_is_deferred(tmp_path: Path) -> None:
    tools, _diagnostics = _loaded(tmp_path, _tools(1, 95_000))
    assert [t.is_deferred() for t in tools] == [True]


def test_small_self_loaded_tools_stay_loaded(tmp_path: Path) -> None:
    tools, diagnostics = _loaded(tmp_path, _tools(5, 100))
    assert [t.is_deferred() for t in tools] == [False] * 5
    assert not diagnostics, diagnostics


def test_the_operators_always_load_still_loads_every_tool(tmp_path: Path) -> None:
    tools, _diagnostics = _loaded(tmp_path, _tools(10, 20_000), alwaysLoad=True)
    assert [t.is_deferred() for t in tools] == [False] * 10
