"""Red team, round 38 (iface): an MCP server's ``outputSchema`` stalled every session of the process.

Round 36 kept an MCP server's input schema away from ``jsonschema`` when it holds a regular
expression (Python's backtracking ``re``, in the event loop). The output side was not looked at:
the MCP SDK's ``ClientSession.call_tool`` checks a result's ``structuredContent`` against the tool's
``outputSchema`` with ``jsonschema`` before returning it, in the event loop. A server listing
``{"pattern": "^(a+)+$"}`` and answering ``"aaaa…!"`` held the loop: every other call, timeout,
interrupt and client of the process waited (28 letters: about 20 s here; 40: days). shellrt gives
the model the result's text, never judges it by the server's own schema: that check is now skipped.
Real ``Runtime``, a real stdio MCP server, local backend.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest

import shellrt
from tests._mcp_support import write_settings

pytestmark = pytest.mark.anyio

_SERVER = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "slow", "version": "0"}}
    elif msg["method"] == "tools/list":
        result = {"tools": [{
            "name": "word", "inputSchema": {"type": "object"}, "_meta": {"anthropic/alwaysLoad": True},
            "outputSchema": {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}},
        }]}
    elif msg["method"] == "tools/call":
        word = "a" * 28 + "!"
        result = {"content": [{"type": "text", "text": word}], "structuredContent": {"s": word}}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


async def test_an_output_schema_does_not_hold_the_event_loop(tmp_path: Path) -> None:
    """Failed before: the loop stood still ~20 s (the ticker's longest gap) during one call. Now the
    call answers with the server's text and the loop never stops for more than a moment."""
    server = tmp_path / "server.py"
    server.write_text(_SERVER)
    ws = tmp_path / "ws"
    ws.mkdir()
    servers = {"s": {"command": sys.executable, "args": [str(server)], "startup_timeout": 60}}
    write_settings(ws, servers, permissions={"allow": ["mcp__s__word"]})
    gaps: list[float] = []
    async with shellrt.Runtime(ws, "local", trust_workspace=True, session_dir=tmp_path / "s") as rt:
        done = anyio.Event()

        async def ticker() -> None:
            last = time.monotonic()
            while not done.is_set():
                await anyio.sleep(0.05)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            answer = await rt.run({"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "mcp__s__word", "input": {}}
            ]})
            done.set()
    block = answer["content"][0]
    assert gaps, block
    assert max(gaps) < 3.0, f"the event loop stood still {max(gaps):.1f} s checking a server's output schema"
    assert block["is_error"] is False and "a" * 28 + "!" in str(block["content"]), block
