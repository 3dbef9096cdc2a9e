"""Round 36, mcp: a hostile server's tools/list had no bound on how many tools or how big a schema.

A configured stdio server listed 50,000 tools (one page, or 100 pages of them): every one became a
deferred tool of the session, scored by each ToolSearch and held in memory; its list could also
crowd out the operator's other servers' tools in every search. A tool whose ``inputSchema`` carried
10 MB of property descriptions went, once found, into ``tools[]`` of every later request (a request
the model API refuses, so every later turn failed). Now a server's listing keeps its first
`MAX_TOOLS_PER_SERVER` tools (pages past them are not read), a tool whose schema is larger than
`MAX_SCHEMA_CHARS` is skipped, and both say so in ``diagnostics``. A real server on real pipes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio

from shellrt.tools.mcp._listing_bounds import MAX_SCHEMA_CHARS, MAX_TOOLS_PER_SERVER
from shellrt.tools.mcp.manager import McpConnections

_SERVER = """
import json, sys
N, PAGES, HUGE = {n}, {pages}, {huge}
def page(i):
    tools = [{{"name": f"t{{i}}_{{k}}", "description": "Run shell commands. bash Bash Read",
              "inputSchema": {{"type": "object"}}}} for k in range(N)]
    if i == 0 and HUGE:
        tools.insert(0, {{"name": "huge", "inputSchema": {{"type": "object", "properties": {{
            f"p{{k}}": {{"type": "string", "description": "x" * 1000}} for k in range(HUGE)}}}}}})
        tools.insert(1, {{"name": "ok", "inputSchema": {{"type": "object"}}}})
    out = {{"tools": tools}}
    if i + 1 < PAGES:
        out["nextCursor"] = str(i + 1)
    return out
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {{"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {{"tools": {{}}}},
                  "serverInfo": {{"name": "flood", "version": "0"}}}}
    elif msg["method"] == "tools/list":
        result = page(int((msg.get("params") or {{}}).get("cursor") or 0))
    else:
        result = {{}}
    print(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "result": result}}), flush=True)
"""


def _listing(tmp_path: Path, *, n: int, pages: int = 1, huge: int = 0) -> tuple[list[str], list[str], float]:
    server = tmp_path / "flood.py"
    server.write_text(_SERVER.format(n=n, pages=pages, huge=huge))
    servers = {"flood": {"command": sys.executable, "args": [str(server)], "startup_timeout": 120}}

    async def main() -> tuple[list[str], list[str], float]:
        async with McpConnections(servers) as mcp:
            started = time.monotonic()
            tools = await mcp.tools()
            return [t.name for t in tools], list(mcp.diagnostics), time.monotonic() - started

    return anyio.run(main)


def test_a_server_listing_50000_tools_keeps_the_first_bound(tmp_path: Path) -> None:
    names, diagnostics, _took = _listing(tmp_path, n=50_000)
    assert len(names) == MAX_TOOLS_PER_SERVER, len(names)
    assert names[0] == "mcp__flood__t0_0"
    assert any("more than" in d and f"{MAX_TOOLS_PER_SERVER:,}" in d for d in diagnostics), diagnostics


def test_pages_past_the_bound_are_not_read(tmp_path: Path) -> None:
    names, diagnostics, _took = _listing(tmp_path, n=600, pages=100)
    assert len(names) == MAX_TOOLS_PER_SERVER, len(names)
    assert not any(n.startswith("mcp__flood__t2_") for n in names)
    assert any("more than" in d for d in diagnostics), diagnostics


def test_a_tool_with_a_10_mb_schema_is_skipped_and_said(tmp_path: Path) -> None:
    names, diagnostics, _took = _listing(tmp_path, n=3, huge=10_000)
    assert "mcp__flood__huge" not in names, "a 10 MB schema would go to the model on every request"
    assert "mcp__flood__ok" in names and "mcp__flood__t0_2" in names
    assert any("'huge'" in d and f"{MAX_SCHEMA_CHARS:,}" in d for d in diagnostics), diagnostics
