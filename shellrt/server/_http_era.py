"""``shellrt serve --http`` serves MCP with sessions only: a sessionless request is refused.

The MCP SDK (2.3) sends a request whose ``MCP-Protocol-Version`` header names no handshake-era
version to its single-exchange path (protocol 2026-07-28): no ``initialize``, no
``Mcp-Session-Id``, one request and one answer. shellrt's HTTP bookkeeping is per session: a
background task belongs to the session whose call started it (rounds 12, 35), is stopped when that
session ends, and sessions are capped (`_http_sessions`). A sessionless ``tools/call`` belonged to
none of that: it read and stopped another session's task (TaskOutput, TaskStop: round 37), and the
tasks it started were never stopped until the server exited. So such a request is answered
``-32022`` (unsupported protocol version) naming the handshake versions: an ``auto`` client falls
back to ``initialize``, as the MCP client's era negotiation does on that error.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from shellrt.server._http_auth import AsgiApp, Message, Receive, Scope, Send

__all__ = ["SessionEraMiddleware"]

_HEADER = b"mcp-protocol-version"
_UNSUPPORTED_PROTOCOL_VERSION = -32022


class SessionEraMiddleware:
    """ASGI middleware: a request naming a protocol version outside the handshake era gets 400 (-32022)."""

    def __init__(self, app: AsgiApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self._app(scope, receive, send)
            return
        versions = [
            bytes(value).decode("latin-1") for name, value in scope.get("headers") or () if bytes(name).lower() == _HEADER
        ]
        outside = [v for v in versions if v not in HANDSHAKE_PROTOCOL_VERSIONS]
        if not outside:
            await self._app(scope, receive, send)
            return
        msg_id = await _request_id(receive) if scope.get("method") == "POST" else None
        payload = {
            "jsonrpc": "2.0",
            "id": msg_id,
            "error": {
                "code": _UNSUPPORTED_PROTOCOL_VERSION,
                "message": (
                    f"Unsupported protocol version {outside[0]!r}: shellrt serve speaks MCP with sessions "
                    f"({', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}); send initialize with one of them first"
                ),
                "data": {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": outside[0]},
            },
        }
        data = json.dumps(payload, ensure_ascii=True).encode("ascii")
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": data})


async def _request_id(receive: Receive) -> str | int | None:
    """The id of the request in the body (read whole already: `_http_strict` replays it), if plain."""
    message: Message = await receive()
    body = bytes(message.get("body", b"")) if message.get("type") == "http.request" else b""
    try:
        value: Any = json.loads(body)
    except (ValueError, RecursionError):
        return None
    msg_id = value.get("id") if isinstance(value, dict) else None
    if isinstance(msg_id, bool) or not isinstance(msg_id, str | int):
        return None
    return msg_id
