"""Red team, round 38 (review2): an MCP server's ``structuredContent`` grew ~200-fold when shown.

Round 38 (iface) stopped judging a result's ``structuredContent`` by the server's ``outputSchema``;
its size was left to the 64 MiB line bound. But the proxy shows structured content as JSON text
with ``indent=2``: every nesting level adds a line and two spaces to each line below it, so a
result of nested lists (``[[[...1...]]]``, 190 deep, as deep as the wire's parser takes) grew
~195-fold: a 190 KB answer became 37 MB of text, made in the event loop and written whole to the
session's ``tool-results``; a 64 MiB line, ~12 GB. Real ``Runtime``, a real stdio MCP server,
local backend.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import shellrt
from shellrt.tools.mcp.proxy import to_content_blocks
from tests._mcp_support import write_settings

pytestmark = pytest.mark.anyio

_DEPTH = 190
_COPIES = 500

_SERVER = f"""
import json, sys
frag = "[" * {_DEPTH} + "1" + "]" * {_DEPTH}
nested = "[" + ",".join([frag] * {_COPIES}) + "]"
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {{"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {{"tools": {{}}}},
                  "serverInfo": {{"name": "deep", "version": "0"}}}}
    elif msg["method"] == "tools/list":
        result = {{"tools": [{{"name": "deep", "inputSchema": {{"type": "object"}},
                              "_meta": {{"anthropic/alwaysLoad": True}}}}]}}
    elif msg["method"] == "tools/call":
        print('{{"jsonrpc": "2.0", "id": ' + json.dumps(msg["id"]) + ', "result": {{"content": [], '
              '"structuredContent": {{"a": ' + nested + '}}}}}}', flush=True)
        continue
    else:
        result = {{}}
    print(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "result": result}}), flush=True)
"""


def _written(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


async def test_nested_structured_content_is_not_blown_up(tmp_path: Path) -> None:
    """Failed before (1 of 1): ~37 MB of text written for a ~190 KB answer. Now what is shown and
    kept is about the size the server sent."""
    server = tmp_path / "server.py"
    server.write_text(_SERVER)
    ws = tmp_path / "ws"
    ws.mkdir()
    servers = {"s": {"command": sys.executable, "args": [str(server)], "startup_timeout": 60}}
    write_settings(ws, servers, permissions={"allow": ["mcp__s__deep"]})
    sent = _COPIES * (2 * _DEPTH + 2)
    session = tmp_path / "s"
    async with shellrt.Runtime(ws, "local", trust_workspace=True, session_dir=session) as rt:
        answer = await rt.run({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "mcp__s__deep", "input": {}}
        ]})
    block = answer["content"][0]
    assert block["is_error"] is False, block
    assert len(json.dumps(block)) < 4 * sent, len(json.dumps(block))
    assert _written(session) < 4 * sent, f"{_written(session):,} bytes written for {sent:,} sent"


def test_a_deep_text_beside_structured_content_is_shown() -> None:
    """Failed before (1 of 1): a text block of 100,000 ``[`` beside structured content raised
    RecursionError out of the comparison (`json.loads`), and the call's result was lost."""
    import mcp.types as mt

    result = mt.CallToolResult(content=[mt.TextContent(type="text", text="[" * 100_000)], structured_content={"k": 1})
    blocks = to_content_blocks(result)
    assert [len(b.text) for b in blocks if b.type == "text"][0] == 100_000


def test_small_structured_content_reads_as_before() -> None:
    """Guard: a small result is still shown indented, as JSON equal to what was sent."""
    import mcp.types as mt

    blocks = to_content_blocks(mt.CallToolResult(content=[], structured_content={"n": 4, "square": [16]}))
    text = blocks[0].text  # type: ignore[union-attr]
    assert json.loads(text) == {"n": 4, "square": [16]} and "\n  " in text, text
