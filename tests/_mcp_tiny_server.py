"""A minimal stdio MCP server's source (no SDK to import: tests that start one stay fast under load).

It runs the caller's ``before`` code first (e.g. writes to its stderr), then answers ``initialize``
and ``tools/list`` (one tool, ``echo``, unless the caller names others) and every other request with an
empty result (or what the caller's ``call`` code makes of a ``tools/call``).
"""

from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.tools.mcp.manager import McpConnections

_LOOP = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": NAME, "version": "0"}}
    elif msg["method"] == "tools/list":
        result = {"tools": TOOLS}
    elif msg["method"] == "tools/call":
        result = {}
CALL
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""
_ECHO = [{"name": "echo", "inputSchema": {"type": "object"}}]


def tiny_server(
    before: str, *, name: str = "tiny", tools: list[dict[str, Any]] | None = None, call: str = ""
) -> str:
    """The server's source: ``before`` (Python statements), then the request loop answering as
    ``name`` with ``tools`` (default: one tool, ``echo``); ``call``: statements run for a
    ``tools/call`` (``msg`` is the request; they set ``result``), indented as written."""
    body = textwrap.indent(textwrap.dedent(call).strip("\n"), " " * 8) if call else ""
    loop = _LOOP.replace("NAME", repr(name)).replace("TOOLS", repr(tools if tools is not None else _ECHO))
    return before.strip("\n") + "\n" + loop.replace("CALL\n", body + "\n" if body else "")


def serve_tiny(tmp_path: Path, name: str, before: str) -> int:
    """Start `tiny_server` (``before`` first) as the MCP server ``name`` with no log directory (its
    stderr is shown on ours), list its tools and close it: the number of tools (1)."""
    server = tmp_path / "server.py"
    server.write_text(tiny_server(before))
    servers = {name: {"command": sys.executable, "args": [str(server)], "startup_timeout": 60}}

    async def main() -> int:
        async with McpConnections(servers) as mcp:
            return len(await mcp.tools())

    return anyio.run(main)


def stderr_until(capfd: pytest.CaptureFixture[str], done: Callable[[str], bool], timeout: float = 10) -> str:
    """This process's fd 2 as read so far, read until ``done`` holds of it or ``timeout`` passes (a
    server's stderr is copied by a thread: its last lines may come after the server closed)."""
    err = ""
    deadline = time.monotonic() + timeout
    while not done(err) and time.monotonic() < deadline:
        time.sleep(0.02)
        err += capfd.readouterr().err
    return err
