"""Red team round 37 (iface): a sessionless request cannot reach another MCP session's task.

The MCP SDK (2.3) serves a request whose ``MCP-Protocol-Version`` is 2026-07-28 on a
single-exchange path: no ``initialize``, no ``Mcp-Session-Id``. shellrt ties a background task to
the session whose call started it; a call of no session was let through to every task.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tests.test_mcp_http_auth import _INITIALIZE, TOKEN, Served, _post, served
from tests.test_server_jsonl import marker_pids

_AUTH = {"Authorization": f"Bearer {TOKEN}"}
_MODERN = "2026-07-28"
_META = {
    "io.modelcontextprotocol/protocolVersion": _MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "x", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@contextlib.contextmanager
def _served(tmp: Path) -> Iterator[Served]:
    with served(tmp, env={"SHELLRT_SERVE_TOKEN": TOKEN}) as srv:
        yield srv


def _sessionless(url: str, name: str, arguments: dict[str, object]) -> tuple[int, bytes]:
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": name, "arguments": arguments, "_meta": _META}}
    headers = {**_AUTH, "MCP-Protocol-Version": _MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}
    status, _headers, reply = _post(url, body, headers)
    return status, reply


def test_a_sessionless_call_neither_reads_nor_stops_a_sessions_task(tmp_path: Path) -> None:
    """Failed before: TaskOutput and TaskStop without a session answered 200 and the task was killed;
    a sessionless Bash ran. Now each is refused with -32022 naming the handshake versions."""
    marker = f"r37-sessionless-{time.time_ns()}"
    with _served(tmp_path) as srv:
        status, headers, _ = _post(srv.url, _INITIALIZE, _AUTH)
        session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
        _post(srv.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {**_AUTH, "Mcp-Session-Id": session})
        start = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "Bash", "arguments": {"command": f"sleep 100 # {marker}", "run_in_background": True}},
        }
        _status, _h, reply = _post(srv.url, start, {**_AUTH, "Mcp-Session-Id": session})
        found = re.search(rb"task id (\w+)", reply)
        assert found, reply
        task_id = found.group(1).decode()
        for name in ("TaskOutput", "TaskStop"):
            status, answer = _sessionless(srv.url, name, {"task_id": task_id})
            assert status == 400, (name, status, answer)
            error = json.loads(answer)["error"]
            assert error["code"] == -32022 and "2025-11-25" in error["data"]["supported"], error
            assert "initialize" in error["message"]
        assert marker_pids(marker), "a sessionless TaskStop killed the session's task"
        ran = tmp_path / "ws" / "sessionless-ran"
        status, answer = _sessionless(srv.url, "Bash", {"command": f"touch {ran}"})
        assert status == 400 and not ran.exists(), answer
    assert not marker_pids(marker)


def test_the_sdks_default_client_gets_a_session(tmp_path: Path) -> None:
    """The SDK's `Client` (``mode="auto"``) probed ``server/discover`` and, answered, ran every call
    sessionless. Failed before: it settled on 2026-07-28. Now it falls back to ``initialize``."""
    async def call(url: str) -> tuple[str, str]:
        async with (
            create_mcp_http_client(headers=_AUTH) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            result = await client.call_tool("Bash", {"command": "echo auto-ok"})
            return str(getattr(result.content[0], "text", "")), str(client.protocol_version)

    with _served(tmp_path) as srv:
        text, version = anyio.run(call, srv.url)
    assert "auto-ok" in text
    assert version in HANDSHAKE_PROTOCOL_VERSIONS, version
