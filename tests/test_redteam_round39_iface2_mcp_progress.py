"""Red team, round 39 (iface2): an external MCP server's progress message reached clients unbounded.

The proxy passed each ``notifications/progress`` ``message`` of an external MCP server on as the
call's progress event, whole; ``shellrt serve`` escaped it and sent it to its own client as a
progress notification, whole. A server sending 2 MB messages made every client asking for
progress receive 2 MB (escaped: up to several times that) per notification, built in the event
loop. A progress message is one status line for a person: it is now cut to one bounded line.
Real ``shellrt serve`` (stdio) driven by the SDK's client, a real hostile stdio MCP server.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from tests._mcp_support import serve_session, write_settings
from tests._mcp_tiny_server import tiny_server

pytestmark = pytest.mark.anyio

#: Past this a progress message is not one status line (the fix cuts at 1,000 characters).
_BOUND = 2_000

_SERVER = tiny_server(
    "",
    name="loud",
    tools=[{"name": "work", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True},
            "_meta": {"anthropic/alwaysLoad": True}}],
    call=r"""
        token = (msg["params"].get("_meta") or {}).get("progressToken")
        for i in range(3):
            note = {"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": i + 1,
                               "message": "step\n\x1b]52;c;AAAA\x07" + "x" * 2_000_000}}
            print(json.dumps(note), flush=True)
        result = {"content": [{"type": "text", "text": "done"}]}
    """,
)


async def test_a_servers_progress_message_reaches_the_client_as_one_bounded_line(tmp_path: Path) -> None:
    """Failed before: the client got three progress messages of over 2,000,000 characters each.
    Now each is at most one line of ~1,000 characters, and the call still answers."""
    server = tmp_path / "loud.py"
    server.write_text(_SERVER)
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    servers = {"loud": {"command": sys.executable, "args": [str(server)], "startup_timeout": 60}}
    write_settings(ws, servers, permissions={"allow": ["mcp__loud__work"]})
    messages: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    async with serve_session(ws, home) as session:
        with anyio.fail_after(60):
            result = await session.call_tool("mcp__loud__work", {}, progress_callback=on_progress)
        with anyio.move_on_after(2):  # notifications may trail the answer on the wire
            while len(messages) < 3:
                await anyio.sleep(0.05)
    texts = [getattr(b, "text", "") for b in result.content]
    assert result.is_error is False and "done" in "".join(texts), texts
    assert messages, "no progress reached the client (the premise: the server's progress is forwarded)"
    longest = max(len(m) for m in messages)
    assert longest <= _BOUND, f"a progress message of {longest:,} characters reached the client"
    assert all("\n" not in m and "\x1b" not in m and "\x07" not in m for m in messages), [m[:80] for m in messages]
